"""A tiny Qwen3 model and inputs.json in bench:gpu's formats, for testing the
peers on a CPU (bench:gpu's Node side writes the real ones).

Weights are drawn at scales that give the model something to say (log-probs
that move with the context): a masking mistake then shows up as a difference
far above the 1e-4 of check_peers.py. Item lengths vary within a request, so
padding paths are exercised too.

  python3 scripts/lab/gpu/write_tiny_inputs.py --dir /tmp/tiny-peers [--seed 1]
writes DIR/model/{config.json,model.safetensors} and DIR/inputs.json.
"""

from __future__ import annotations

import argparse
import json
import os
import struct

import numpy as np

DIMS = dict(vocab=256, hidden=64, mlp=128, layers=2, heads=4, kv_heads=2, head_dim=16)


def to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """f32 -> bf16 bit patterns, rounding to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_safetensors(path: str, tensors: dict) -> None:
    header, blobs, at = {}, [], 0
    for name, a in tensors.items():
        b = to_bf16_bits(a).tobytes()
        header[name] = {"dtype": "BF16", "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def tiny_weights(rng: np.random.Generator) -> dict:
    d = DIMS
    mat = lambda out, inp: rng.normal(0, 1 / np.sqrt(inp), (out, inp))
    norm = lambda n: 1 + 0.2 * rng.normal(size=n)
    w = {"model.embed_tokens.weight": rng.normal(0, 0.5, (d["vocab"], d["hidden"]))}
    for i in range(d["layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(d["hidden"])
        w[p + "self_attn.q_proj.weight"] = 2 * mat(d["heads"] * d["head_dim"], d["hidden"])  # sharper attention
        w[p + "self_attn.k_proj.weight"] = 2 * mat(d["kv_heads"] * d["head_dim"], d["hidden"])
        w[p + "self_attn.v_proj.weight"] = mat(d["kv_heads"] * d["head_dim"], d["hidden"])
        w[p + "self_attn.o_proj.weight"] = mat(d["hidden"], d["heads"] * d["head_dim"])
        w[p + "self_attn.q_norm.weight"] = norm(d["head_dim"])
        w[p + "self_attn.k_norm.weight"] = norm(d["head_dim"])
        w[p + "post_attention_layernorm.weight"] = norm(d["hidden"])
        w[p + "mlp.gate_proj.weight"] = mat(d["mlp"], d["hidden"])
        w[p + "mlp.up_proj.weight"] = mat(d["mlp"], d["hidden"])
        w[p + "mlp.down_proj.weight"] = mat(d["hidden"], d["mlp"])
    w["model.norm.weight"] = norm(d["hidden"])
    return w


def config() -> dict:
    d = DIMS
    return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": d["vocab"],
            "hidden_size": d["hidden"], "intermediate_size": d["mlp"], "num_hidden_layers": d["layers"],
            "num_attention_heads": d["heads"], "num_key_value_heads": d["kv_heads"], "head_dim": d["head_dim"],
            "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
            "torch_dtype": "bfloat16"}


def inputs(rng: np.random.Generator) -> dict:
    ids = lambda n: rng.integers(3, DIMS["vocab"], n).tolist()
    target = [{"query": ids(48), "items": [ids(int(rng.integers(4, 8))) for _ in range(24)]}]
    pr = [{"query": ids(20), "items": [ids(5) for _ in range(3)]} for _ in range(8)]
    return {"labels": [1, 2, 7],
            "workloads": {"target": {"description": "1 x (48-token query, 24 items x 4-7 tokens)", "requests": target},
                          "pr": {"description": "8 x (20-token query, 3 items x 5 tokens)", "requests": pr}}}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    os.makedirs(f"{a.dir}/model", exist_ok=True)
    with open(f"{a.dir}/model/config.json", "w") as f:
        json.dump(config(), f, indent=2)
    write_safetensors(f"{a.dir}/model/model.safetensors", tiny_weights(rng))
    with open(f"{a.dir}/inputs.json", "w") as f:
        json.dump(inputs(rng), f)
    print(f"wrote {a.dir}/model and {a.dir}/inputs.json")


if __name__ == "__main__":
    main()
