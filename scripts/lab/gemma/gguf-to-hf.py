"""A Gemma 3 GGUF as a Hugging Face directory of f32 tensors, dequantized by
gguf-py (PyPI `gguf`, llama.cpp's own Python package), independent of lib/:
config.json from the GGUF metadata (with llama.cpp's constants for what the
file does not say), model.safetensors with Hugging Face names, RMSNorm
weights stored as w (the GGUF holds 1 + w). For scripts/lab/gemma/check-real.js.

    python3 scripts/lab/gemma/gguf-to-hf.py MODEL.gguf OUT_DIR
"""
import json
import os
import struct
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "post_attention_norm": "post_attention_layernorm",
    "ffn_norm": "pre_feedforward_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "post_ffw_norm": "post_feedforward_layernorm",
}


def field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def hf_name(name):
    if name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if name == "output_norm.weight":
        return "model.norm.weight"
    if name == "output.weight":
        return "lm_head.weight"
    _, layer, rest = name.split(".", 2)
    base, kind = rest.rsplit(".", 1)
    return f"model.layers.{layer}.{NAMES[base]}.{kind}"


def main():
    src, out = sys.argv[1], sys.argv[2]
    reader = GGUFReader(src)
    arch = field(reader, "general.architecture")
    if arch != "gemma3":
        raise SystemExit(f"only gemma3 files: got {arch}")
    k = lambda s: f"{arch}.{s}"
    layers = field(reader, k("block_count"))
    heads = field(reader, k("attention.head_count"))
    hidden = field(reader, k("embedding_length"))
    head_dim = field(reader, k("attention.key_length"), hidden // heads)
    window = field(reader, k("attention.sliding_window"))
    os.makedirs(out, exist_ok=True)
    tensors = {}
    for t in reader.tensors:
        shape = [int(x) for x in reversed(t.shape.tolist())]
        data = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(shape)
        if t.name.endswith("norm.weight"):
            data = data - np.float32(1)  # llama.cpp stored 1 + w; transformers holds w
        tensors[hf_name(t.name)] = data
    vocab = tensors["model.embed_tokens.weight"].shape[0]
    config = {
        "model_type": "gemma3_text",
        "architectures": ["Gemma3ForCausalLM"],
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": field(reader, k("feed_forward_length")),
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": field(reader, k("attention.head_count_kv"), heads),
        "head_dim": head_dim,
        "rms_norm_eps": field(reader, k("attention.layer_norm_rms_epsilon")),
        "rope_theta": field(reader, k("rope.freq_base"), 1000000.0),
        "rope_local_base_freq": 10000.0,
        "max_position_embeddings": field(reader, k("context_length")),
        "sliding_window": window,
        # llama.cpp's rule: 1/sqrt(head_dim) below 27B.
        "query_pre_attn_scalar": head_dim,
        "layer_types": ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(layers)],
        "hidden_activation": "gelu_pytorch_tanh",
        "tie_word_embeddings": "lm_head.weight" not in tensors,
        "attn_logit_softcapping": None,
        "final_logit_softcapping": None,
        "rope_scaling": None,
        "bos_token_id": field(reader, "tokenizer.ggml.bos_token_id"),
        "eos_token_id": field(reader, "tokenizer.ggml.eos_token_id"),
        "torch_dtype": "float32",
    }
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(config, fh, indent=2)
    header = {}
    offset = 0
    for name, arr in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    blob = json.dumps(header).encode()
    blob += b" " * ((8 - len(blob) % 8) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as fh:
        fh.write(struct.pack("<Q", len(blob)))
        fh.write(blob)
        for arr in tensors.values():
            fh.write(np.ascontiguousarray(arr, dtype="<f4").tobytes())
    print(json.dumps({"tensors": len(tensors), "config": config}))


if __name__ == "__main__":
    main()
