"""The OpenVINO CPU peer of npm run bench's models section (docs/performance.md,
"By model"): OpenVINO, the runtime Intel tunes for its own CPUs, scoring the
same Hugging Face directory as pjrt-score, written the way a skilled engineer
would write it for rerank traffic:

- one OpenVINO model per checkpoint that scores a whole request in one call:
  the prompt's rows go through each layer once and their keys and values are
  that layer's prefix for every document (placed before each document's own
  in one fused ScaledDotProductAttention call: OpenVINO's CPU kernel, faster
  than a broadcast matmul over the prompt's K/V with a split softmax, 5.9
  against 9.6 s on Qwen3-0.6B's PR request on 2 cores); the documents in one
  right-padded batch (causal attention, so a document's real tokens never see
  its padding); the last hidden state of each document's last token only, the
  final norm and the two label rows of the tied embedding, softmax over the
  labels;
- RoPE's cos and sin computed outside the graph in f64 (inside it, the bf16
  hint would run the angles, position x frequency, in bf16: 0.13 from our
  probabilities on that request, against 0.009 so);
- the graph from a torch module written here (llama, qwen2, qwen3, gemma:
  the forms of transformers' modelling code, the query heads of a KV head
  stacked on the rows, so GQA needs no copy of K/V),
  converted once by openvino.convert_model and saved as IR beside the
  checkpoint, its weights the file's bf16 values (decompressed to f32 in the
  graph, which the CPU plugin fuses into its matmuls);
- compiled for the CPU with INFERENCE_PRECISION_HINT f32 or bf16 (the
  plugin runs the graph in that precision), PERFORMANCE_HINT LATENCY and the
  machine's cores as threads.

optimum-intel's export is not used: optimum-intel 2.2.0 requires transformers
< 5.6, not the 5.24.0 the PyTorch peer runs, and its causal-LM export keeps
the KV cache as state per sequence of the batch (a prompt shared by the
documents would be copied into each).

Reads one JSON object on stdin:
  export: { "mode": "export", "model": HF directory, "ir": IR directory }
  run:    { "mode": "run", "model": HF directory (its config.json), "ir": IR directory, "threads": n, "precision": "f32" | "bf16",
            "warm": request | null, "timed": [requests], "reference": scores of timed[0] (ours, f32) | null,
            "gate": { "max": .., "mean": .., "relative": .. (optional) } }
a request: { "query": [ids], "items": [[ids]], "labelTokenIds": [ids], "applySoftmax": true }.
run: the gate first (exit 2 outside it), then `warm` once (null: the check's call was the warm-up),
then each timed request once, timed.
Writes one JSON line: export { seconds }; run { openvino, threads, precision (what the plugin
reports), load_seconds (read + compile), seconds (median), all_seconds, max_diff, mean_diff,
max_relative_diff, peak_rss_bytes }.
"""
import gc
import json
import math
import os
import resource
import sys
import time

IR_NAME = "scorer.xml"
NEG = -1e30


def _build_module(cfg, tensors):
    import torch

    arch = cfg["model_type"]
    if arch not in ("llama", "qwen2", "qwen3", "gemma"):
        raise SystemExit(f"the OpenVINO peer writes llama, qwen2, qwen3 and gemma, not {arch}")
    if not cfg.get("tie_word_embeddings", arch == "gemma"):
        raise SystemExit("the OpenVINO peer expects tied embeddings (the random models' and the rerankers')")
    H = cfg["hidden_size"]
    Hq = cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads", Hq)
    D = cfg.get("head_dim") or H // Hq
    L = cfg["num_hidden_layers"]
    eps = cfg.get("rms_norm_eps", 1e-6)
    gemma = arch == "gemma"
    # Gemma scales its embeddings by sqrt(hidden) rounded to the checkpoint's dtype, as transformers runs the
    # checkpoint in its own dtype and pjrt-score runs it in any (its f32 run would round to f32 instead).
    normalizer = torch.tensor(H**0.5, dtype=tensors["model.embed_tokens.weight"].dtype).item() if gemma else 1.0
    bias = arch == "qwen2" or cfg.get("attention_bias") is True
    qk_norm = arch == "qwen3"
    g = Hq // Hkv

    class Scorer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for name, t in tensors.items():
                self.register_buffer(name.replace(".", "_"), t, persistent=False)

        def w(self, name):
            return getattr(self, name.replace(".", "_")).float()

        def norm(self, x, name):
            w = self.w(name)
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
            return x * (1.0 + w) if gemma else x * w

        def proj(self, x, name, with_bias=False):
            y = torch.matmul(x, self.w(f"{name}.weight").t())
            return y + self.w(f"{name}.bias") if with_bias else y

        @staticmethod
        def rotate(x, cos, sin):
            x1, x2 = x.chunk(2, dim=-1)
            return x * cos + torch.cat([-x2, x1], dim=-1) * sin

        def qkv(self, x, p, cos, sin):
            # x [B, T, H] -> q [B, Hkv, g * T, D] (the g query heads of a KV head stacked on the rows), k, v [B, Hkv, T, D].
            B, T = x.shape[0], x.shape[1]
            q = self.proj(x, f"{p}self_attn.q_proj", bias).view(B, T, Hq, D).transpose(1, 2)
            k = self.proj(x, f"{p}self_attn.k_proj", bias).view(B, T, Hkv, D).transpose(1, 2)
            v = self.proj(x, f"{p}self_attn.v_proj", bias).view(B, T, Hkv, D).transpose(1, 2)
            if qk_norm:
                q = self.norm(q, f"{p}self_attn.q_norm.weight")
                k = self.norm(k, f"{p}self_attn.k_norm.weight")
            q = self.rotate(q, cos, sin).reshape(B, Hkv, g * T, D)
            k = self.rotate(k, cos, sin)
            return q, k, v

        def out(self, o, B, T, p):
            # o [B, Hkv, g * T, D] -> [B, T, Hq * D] -> o_proj
            o = o.reshape(B, Hq, T, D).transpose(1, 2).reshape(B, T, Hq * D)
            return self.proj(o, f"{p}self_attn.o_proj")

        def mlp(self, x, p):
            gate = self.proj(x, f"{p}mlp.gate_proj")
            gate = torch.nn.functional.gelu(gate, approximate="tanh") if gemma else torch.nn.functional.silu(gate)
            return self.proj(gate * self.proj(x, f"{p}mlp.up_proj"), f"{p}mlp.down_proj")

        def forward(self, query, items, prefix_mask, item_mask, qcos, qsin, icos, isin, rows, labels):
            E = getattr(self, "model_embed_tokens_weight")
            x = torch.nn.functional.embedding(query, E).float()  # [1, P, H]
            y = torch.nn.functional.embedding(items, E).float()  # [n, W, H]
            if gemma:
                x = x * normalizer
                y = y * normalizer
            n, W = y.shape[0], y.shape[1]
            P = x.shape[1]
            pmask = prefix_mask.repeat(g, 1)  # [g * P, P]
            imask = item_mask.repeat(g, 1)  # [g * W, W]
            scale = D**-0.5
            for layer in range(L):
                p = f"model.layers.{layer}."
                hx = self.norm(x, f"{p}input_layernorm.weight")
                hy = self.norm(y, f"{p}input_layernorm.weight")
                qp, kp, vp = self.qkv(hx, p, qcos, qsin)
                qi, ki, vi = self.qkv(hy, p, icos, isin)
                # The prompt: causal attention over its own rows (OpenVINO's fused ScaledDotProductAttention).
                sdpa = torch.nn.functional.scaled_dot_product_attention
                x = x + self.out(sdpa(qp, kp, vp, attn_mask=pmask, scale=scale), 1, P, p)
                # The documents: the prompt's keys and values before their own (causal among them), one fused call.
                k = torch.cat([kp.expand(n, -1, -1, -1), ki], dim=2)
                v = torch.cat([vp.expand(n, -1, -1, -1), vi], dim=2)
                y = y + self.out(sdpa(qi, k, v, attn_mask=imask, scale=scale), n, W, p)
                x = x + self.mlp(self.norm(x, f"{p}post_attention_layernorm.weight"), p)
                y = y + self.mlp(self.norm(y, f"{p}post_attention_layernorm.weight"), p)
            last = y.reshape(n * W, H).index_select(0, rows)
            last = self.norm(last, "model.norm.weight")
            logits = torch.matmul(last, torch.nn.functional.embedding(labels, E).float().t())
            return torch.softmax(logits, dim=-1)

    return Scorer().eval()


def rope_tables(cfg, positions):
    """cos and sin [T, D] of the positions, as transformers' RoPE (rotate-half layout), computed in f64 outside
    the graph: inside it, the bf16 hint would run the angles (position x frequency, up to the thousands) in bf16."""
    import numpy as np

    D = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    inv_freq = 1.0 / (cfg.get("rope_theta", 10000.0) ** (np.arange(0, D, 2, dtype=np.float64) / D))
    f = positions.astype(np.float64)[:, None] * inv_freq[None, :]
    e = np.concatenate([f, f], axis=-1)
    return np.cos(e).astype(np.float32), np.sin(e).astype(np.float32)


def inputs(request, cfg):
    import numpy as np

    q = np.asarray([request["query"]], dtype=np.int64)
    items = request["items"]
    n, P = len(items), q.shape[1]
    W = max(len(x) for x in items)
    ids = np.zeros((n, W), dtype=np.int64)
    for i, x in enumerate(items):
        ids[i, : len(x)] = x
    causal = lambda t: np.triu(np.full((t, t), NEG, dtype=np.float32), k=1)
    rows = np.asarray([i * W + len(x) - 1 for i, x in enumerate(items)], dtype=np.int64)
    return {
        "query": q,
        "items": ids,
        "prefix_mask": causal(P),
        "item_mask": np.concatenate([np.zeros((W, P), dtype=np.float32), causal(W)], axis=1),  # the prompt, then causal
        **dict(zip(["qcos", "qsin"], rope_tables(cfg, np.arange(P)))),
        **dict(zip(["icos", "isin"], rope_tables(cfg, np.arange(P, P + W)))),
        "rows": rows,
        "labels": np.asarray(request["labelTokenIds"], dtype=np.int64),
    }


NAMES = ["query", "items", "prefix_mask", "item_mask", "qcos", "qsin", "icos", "isin", "rows", "labels"]


def export(job):
    import openvino as ov
    import torch
    from safetensors.torch import load_file

    t0 = time.perf_counter()
    with open(os.path.join(job["model"], "config.json")) as f:
        cfg = json.load(f)
    tensors = load_file(os.path.join(job["model"], "model.safetensors"))
    module = _build_module(cfg, tensors)
    example = inputs({"query": [5, 6, 7, 8], "items": [[9, 10, 11], [12, 13]], "labelTokenIds": [3, 4]}, cfg)
    example = tuple(torch.from_numpy(example[k]) for k in NAMES)
    dyn = {
        "query": ([1, -1], ov.Type.i64),
        "items": ([-1, -1], ov.Type.i64),
        "prefix_mask": ([-1, -1], ov.Type.f32),
        "item_mask": ([-1, -1], ov.Type.f32),
        "qcos": ([-1, -1], ov.Type.f32),
        "qsin": ([-1, -1], ov.Type.f32),
        "icos": ([-1, -1], ov.Type.f32),
        "isin": ([-1, -1], ov.Type.f32),
        "rows": ([-1], ov.Type.i64),
        "labels": ([-1], ov.Type.i64),
    }
    with torch.no_grad():
        model = ov.convert_model(module, example_input=example, input=[(ov.PartialShape(dyn[k][0]), dyn[k][1]) for k in NAMES])
    for i, name in enumerate(NAMES):
        model.inputs[i].get_tensor().set_names({name})
    os.makedirs(job["ir"], exist_ok=True)
    staging = os.path.join(job["ir"], f".partial-{os.getpid()}.xml")
    ov.save_model(model, staging, compress_to_fp16=False)
    os.replace(staging[:-4] + ".bin", os.path.join(job["ir"], IR_NAME[:-4] + ".bin"))
    os.replace(staging, os.path.join(job["ir"], IR_NAME))
    print(json.dumps({"seconds": time.perf_counter() - t0}))


def diffs(a, b):
    pairs = [(x, y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)]
    d = [abs(x - y) for x, y in pairs]
    return max(d), sum(d) / len(d), max(abs(x - y) / max(abs(y), 1e-300) for x, y in pairs)


def run(job):
    import openvino as ov

    threads = int(job["threads"])
    with open(os.path.join(job["model"], "config.json")) as f:
        cfg = json.load(f)
    hint = {"f32": "f32", "bf16": "bf16"}[job["precision"]]
    t0 = time.perf_counter()
    core = ov.Core()
    model = core.read_model(os.path.join(job["ir"], IR_NAME))
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": hint, "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads})
    del model
    gc.collect()
    request = compiled.create_infer_request()
    load_seconds = time.perf_counter() - t0

    def score(r):
        return request.infer(inputs(r, cfg))[0].astype("float64").tolist()

    out = {"openvino": ov.__version__, "threads": threads, "precision": compiled.get_property("INFERENCE_PRECISION_HINT").to_string(), "load_seconds": load_seconds}
    got = score(job["timed"][0])
    if job.get("reference") is not None:
        mx, mean, rel = diffs(got, job["reference"])
        gate = job["gate"]
        out.update({"max_diff": mx, "mean_diff": mean, "max_relative_diff": rel})
        if not (mx <= gate["max"] and mean <= gate["mean"] and rel <= gate.get("relative", math.inf)):
            print(f"the OpenVINO peer ({hint}) disagrees with pjrt-score: max |diff| {mx:.3g} (gate {gate['max']}), mean {mean:.3g} (gate {gate['mean']}), max relative {rel:.3g} (gate {gate.get('relative')})", file=sys.stderr)
            sys.exit(2)
    if job.get("warm") is not None:  # null: the check's call was the warm-up
        score(job["warm"])
    times = []
    for r in job["timed"]:
        t1 = time.perf_counter()
        score(r)
        times.append(time.perf_counter() - t1)
    out["seconds"] = sorted(times)[len(times) // 2]
    out["all_seconds"] = times
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(out))


def main():
    job = json.load(sys.stdin)
    if job["mode"] == "export":
        export(job)
    elif job["mode"] == "run":
        run(job)
    else:
        raise SystemExit(f"unknown mode {job['mode']!r}: export or run")


if __name__ == "__main__":
    main()
