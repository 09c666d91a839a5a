"""A float64 forward pass of a decoder-only model, in numpy, from a Hugging
Face directory (config.json + *.safetensors), written from the model
definitions (transformers' Llama/Mistral, Gemma, Gemma 2 and Gemma 3 text models)
and independent of lib/. Each sequence runs alone, with the plain causal
mask and the layer's sliding window: the standalone sequence the scorer's
plans must reproduce.

    python3 decoder_reference.py MODEL_DIR < request.json > logprobs.json

request: {"sequences": [[token ids], ...], "labels": [ids]}
     or  {"prefix": [token ids], "items": [[token ids], ...], "labels": [ids]}:
         each sequence prefix + item, the prefix's keys and values computed
         once and each item's tokens run against them (the same float64
         arithmetic as the standalone sequence, without recomputing the
         prefix for every item; items run in batches)
optional "float32": [stages] (or one stage) computed in numpy float32, the
         rest in float64, to measure what f32 arithmetic moves: "rope" (the
         angles as f32 positions times f32 inverse frequencies, as an f32
         program would form them; their cosine and sine in float64), "norm"
         (every RMSNorm), "matmul" (every projection and the LM head),
         "scores" (q.k alone), "attention" (scores, softmax, weighted
         values), "mlp" (the
         activation times up), "residual" (the residual stream stored in
         float32), "head" (the final log-softmax); "arrays" for all of these
         but "rope", "all" for every array float32 and every stage
output:  {"logprobs": [[log p(label | sequence) at its last token, ...], ...]}

Definitions (HF, the parts that differ between families):
  embeddings * normalizer (Gemma: sqrt(hidden) rounded to the embedding dtype)
  RMSNorm x / sqrt(mean(x^2) + eps) * w (Gemma: * (1 + w))
  layer: h += post_attn_norm(attn(in_norm(h)));  h += post_ffw_norm(mlp(pre_ffw_norm(h)))
         (Llama and Gemma (1): no post norms; their post_attention_layernorm is the pre-MLP norm)
  q, k: per-head RMSNorm (Gemma 3), then RoPE rotate_half with the layer's base
        (Gemma 3 sliding layers: rope_local_base_freq, unscaled; global: rope_theta,
        linear scaling divides positions by the factor)
  scores = q.k * scaling (Gemma 2/3: query_pre_attn_scalar^-0.5; Gemma: head_dim^-0.5), soft-capped
        cap * tanh(s / cap) (Gemma 2), key k visible from query q iff k <= q and
        q - k < window on sliding layers
  mlp: down(act(gate x) * up x), act silu (Llama) or gelu tanh (Gemma)
  logits = lm_head(final_norm(h)), soft-capped (Gemma 2), log_softmax
"""
import json
import math
import os
import struct
import sys

import numpy as np


def read_safetensors(directory, as_type=np.float64):
    tensors = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".safetensors"):
            continue
        with open(os.path.join(directory, name), "rb") as fh:
            data = fh.read()
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + n])
        base = 8 + n
        for key, info in header.items():
            if key == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            raw = data[base + begin : base + end]
            dtype = info["dtype"]
            if dtype == "F32":
                arr = np.frombuffer(raw, dtype="<f4")
            elif dtype == "F16":
                arr = np.frombuffer(raw, dtype="<f2")
            elif dtype == "BF16":
                bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
                arr = bits.view(np.float32)
            else:
                raise ValueError(f"dtype {dtype} not handled")
            tensors[key] = (arr.astype(as_type).reshape(info["shape"]), dtype)
    return tensors


def round_to(value, dtype):
    if dtype == "F16":
        return float(np.float16(value))
    if dtype == "BF16":
        bits = int(np.array([value], dtype=np.float32).view(np.uint32)[0])
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])
    return float(np.float32(value))


STAGES = ("rope", "norm", "matmul", "scores", "attention", "mlp", "residual", "head")


class Model:
    def __init__(self, directory, float32=()):
        names = [float32] if isinstance(float32, str) else list(float32 or ())
        stages = set()
        for name in names:
            if name not in STAGES + ("arrays", "all"):
                raise ValueError(f"float32: unknown stage {name} (known: {', '.join(STAGES)}, arrays, all)")
            stages |= {name} if name in STAGES else set(STAGES) - ({"rope"} if name == "arrays" else set())
        self.stages = stages
        self.dtype = np.float32 if "all" in names else np.float64
        self.w32 = {}
        with open(os.path.join(directory, "config.json")) as fh:
            c = json.load(fh)
        self.c = c
        kind = c["model_type"]
        self.gemma = kind in ("gemma", "gemma2", "gemma3", "gemma3_text")
        self.post_norms = self.gemma and kind != "gemma"
        self.gemma3 = kind in ("gemma3", "gemma3_text")
        self.t = read_safetensors(directory, self.dtype)
        self.hidden = c["hidden_size"]
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads", self.heads)
        self.head_dim = c.get("head_dim") or self.hidden // self.heads
        self.eps = c.get("rms_norm_eps", 1e-6)
        embed, embed_dtype = self.t["model.embed_tokens.weight"]
        self.embed = embed
        self.normalizer = round_to(math.sqrt(self.hidden), embed_dtype) if self.gemma else 1.0
        self.scaling = (c.get("query_pre_attn_scalar") or self.head_dim) ** -0.5 if self.post_norms else self.head_dim ** -0.5
        self.attn_cap = c.get("attn_logit_softcapping")
        self.final_cap = c.get("final_logit_softcapping")
        window = c.get("sliding_window")
        if "layer_types" in c:
            sliding = [t == "sliding_attention" for t in c["layer_types"]]
        elif kind == "gemma2":
            sliding = [i % 2 == 0 for i in range(self.layers)]
        elif self.gemma3:
            pattern = c.get("sliding_window_pattern", 6)
            sliding = [(i + 1) % pattern != 0 for i in range(self.layers)]
        else:
            sliding = [window is not None] * self.layers
        self.windows = [window if (s and window is not None) else None for s in sliding]
        theta = c.get("rope_theta", 10000.0)
        scaling = c.get("rope_scaling") or {}
        factor = scaling.get("factor", 1.0) if scaling.get("rope_type", scaling.get("type")) == "linear" else 1.0
        local_theta = c.get("rope_local_base_freq", 10000.0) if self.gemma3 else theta
        self.rope = [(local_theta, 1.0) if (self.gemma3 and s) else (theta, factor) for s in sliding]
        self.lm_head_name = "lm_head.weight" if "lm_head.weight" in self.t else "model.embed_tokens.weight"

    def w(self, name, stage=None):
        """A weight, as float32 when `stage` runs in float32."""
        if stage not in self.stages or self.dtype == np.float32:
            return self.t[name][0]
        if name not in self.w32:
            self.w32[name] = self.t[name][0].astype(np.float32)
        return self.w32[name]

    def at(self, stage, x):
        """x as float32 when `stage` runs in float32, else in the model's dtype."""
        return x.astype(np.float32 if stage in self.stages else self.dtype, copy=False)

    def back(self, x):
        return x.astype(self.dtype, copy=False)

    def norm(self, x, name):
        x = self.at("norm", x)
        weight = self.w(name, "norm")
        if self.gemma:
            weight = 1.0 + weight
        return self.back(x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight)

    def project(self, x, name):
        """x [..., in] @ W.T for W [out, in]."""
        return self.back(self.at("matmul", x) @ self.w(name, "matmul").T)

    def add(self, h, a):
        """The residual stream's add."""
        return self.back(self.at("residual", h) + self.at("residual", a))

    def embedding(self, ids):
        return self.back(self.at("residual", self.embed[np.array(ids)] * self.normalizer))

    def rope_apply(self, x, layer, start=0):
        # x [..., T, H, D] at positions start.., rotate_half pairing
        theta, factor = self.rope[layer]
        d = self.head_dim
        inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d) / factor
        pos = np.arange(start, start + x.shape[-3], dtype=np.float64)
        if "rope" in self.stages:
            ang = (pos.astype(np.float32)[:, None] * inv.astype(np.float32)[None, :]).astype(np.float64)
        else:
            ang = pos[:, None] * inv[None, :]
        cos = np.cos(ang).astype(self.dtype)[:, None, :]
        sin = np.sin(ang).astype(self.dtype)[:, None, :]
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    def act(self, x):
        if self.gemma:
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
        return x / (1.0 + np.exp(-x))

    def forward(self, ids):
        """log-probabilities [vocab] at the last token of the sequence ids."""
        h, _ = forward_prefix(self, ids)
        return log_softmax_last(self, h[-1:])[0]


def qkv(model, x, p):
    # x [..., T, hidden] -> q [..., T, Hq, D], k, v [..., T, Hkv, D] before RoPE
    lead = x.shape[:-1]
    D, Hq, Hkv = model.head_dim, model.heads, model.kv_heads
    q = model.project(x, p + "self_attn.q_proj.weight").reshape(*lead, Hq, D)
    k = model.project(x, p + "self_attn.k_proj.weight").reshape(*lead, Hkv, D)
    v = model.project(x, p + "self_attn.v_proj.weight").reshape(*lead, Hkv, D)
    if p + "self_attn.q_proj.bias" in model.t:
        q = q + model.w(p + "self_attn.q_proj.bias").reshape(Hq, D)
        k = k + model.w(p + "self_attn.k_proj.bias").reshape(Hkv, D)
        v = v + model.w(p + "self_attn.v_proj.bias").reshape(Hkv, D)
    if p + "self_attn.q_norm.weight" in model.t:
        q = model.norm(q, p + "self_attn.q_norm.weight")
        k = model.norm(k, p + "self_attn.k_norm.weight")
    return q, k, v


def visible_keys(model, layer, query_positions, key_positions):
    """pred [Tq, Tk]: key k visible from query q iff k <= q and, on a sliding layer, q - k < window."""
    qi, ki = query_positions[:, None], key_positions[None, :]
    visible = ki <= qi
    if model.windows[layer] is not None:
        visible = visible & (qi - ki < model.windows[layer])
    return visible


def attend(model, q, k, v, visible):
    # q [..., Tq, Hq, D], k, v [..., Tk, Hkv, D], visible [Tq, Tk] -> [..., Tq, Hq, D]
    q, k, v = model.at("attention", q), model.at("attention", k), model.at("attention", v)
    group = model.heads // model.kv_heads
    out = np.zeros(q.shape, dtype=q.dtype)
    for head in range(model.heads):
        kv = head // group
        qh, kh = q[..., head, :], k[..., kv, :]
        if "scores" in model.stages:
            qh, kh = qh.astype(np.float32), kh.astype(np.float32)
        s = (qh @ np.swapaxes(kh, -1, -2)).astype(q.dtype) * model.scaling
        if model.attn_cap:
            s = model.attn_cap * np.tanh(s / model.attn_cap)
        s = np.where(visible, s, -np.inf)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        out[..., head, :] = (e / e.sum(axis=-1, keepdims=True)) @ v[..., kv, :]
    return model.back(out)


def rest_of_layer(model, h, out, p):
    # out [..., T, Hq, D]: the attention output; the residual adds and the MLP
    a = model.project(out.reshape(*out.shape[:-2], -1), p + "self_attn.o_proj.weight")
    if model.post_norms:
        h = model.add(h, model.norm(a, p + "post_attention_layernorm.weight"))
        x = model.norm(h, p + "pre_feedforward_layernorm.weight")
    else:
        h = model.add(h, a)
        x = model.norm(h, p + "post_attention_layernorm.weight")
    gate, up = model.project(x, p + "mlp.gate_proj.weight"), model.project(x, p + "mlp.up_proj.weight")
    m = model.project(model.back(model.act(model.at("mlp", gate)) * model.at("mlp", up)), p + "mlp.down_proj.weight")
    if model.post_norms:
        m = model.norm(m, p + "post_feedforward_layernorm.weight")
    return model.add(h, m)


def log_softmax_last(model, h_last):
    # h_last [N, hidden] -> [N, vocab] log-probabilities
    logits = model.at("head", model.project(model.norm(h_last, "model.norm.weight"), model.lm_head_name))
    if model.final_cap:
        logits = model.final_cap * np.tanh(logits / model.final_cap)
    top = logits.max(axis=-1, keepdims=True)
    return model.back(logits - (top + np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))))


def forward_prefix(model, ids):
    """The sequence ids alone: hidden states [T, hidden] after the last layer and each layer's K and V (after RoPE)."""
    T = len(ids)
    h = model.embedding(ids)
    positions = np.arange(T)
    cache = []
    for i in range(model.layers):
        p = f"model.layers.{i}."
        q, k, v = qkv(model, model.norm(h, p + "input_layernorm.weight"), p)
        q, k = model.rope_apply(q, i), model.rope_apply(k, i)
        cache.append((k, v))
        h = rest_of_layer(model, h, attend(model, q, k, v, visible_keys(model, i, positions, positions)), p)
    return h, cache


def forward_items(model, prefix, items, labels, batch=25):
    """Each sequence prefix + item: the prefix's K and V once (the arithmetic
    of the sequence alone), then the items in batches, each item's token at
    position P + j seeing the prefix keys and its own keys up to j, the
    window included. Items must have one length per batch (they are grouped)."""
    P = len(prefix)
    _, cache = forward_prefix(model, prefix)
    results = [None] * len(items)
    by_length = {}
    for n, item in enumerate(items):
        by_length.setdefault(len(item), []).append(n)
    for L, members in by_length.items():
        for b in range(0, len(members), batch):
            idx = members[b : b + batch]
            N = len(idx)
            h = model.embedding([items[n] for n in idx])  # [N, L, hidden]
            for i in range(model.layers):
                p = f"model.layers.{i}."
                q, k, v = qkv(model, model.norm(h, p + "input_layernorm.weight"), p)
                q, k = model.rope_apply(q, i, P), model.rope_apply(k, i, P)
                ck, cv = cache[i]
                keys = np.concatenate([np.broadcast_to(ck, (N,) + ck.shape), k], axis=1)  # [N, P+L, Hkv, D]
                values = np.concatenate([np.broadcast_to(cv, (N,) + cv.shape), v], axis=1)
                visible = visible_keys(model, i, P + np.arange(L), np.arange(P + L))
                h = rest_of_layer(model, h, attend(model, q, keys, values, visible), p)
            lp = log_softmax_last(model, h[:, -1, :])
            for r, n in enumerate(idx):
                results[n] = [float(lp[r, l]) for l in labels]
    return results


def main():
    request = json.load(sys.stdin)
    model = Model(sys.argv[1], request.get("float32"))
    labels = request["labels"]
    if "prefix" in request:
        json.dump({"logprobs": forward_items(model, request["prefix"], request["items"], labels)}, sys.stdout)
        return
    out = []
    for seq in request["sequences"]:
        lp = model.forward(seq)
        out.append([float(lp[l]) for l in labels])
    json.dump({"logprobs": out}, sys.stdout)


if __name__ == "__main__":
    main()
