"""A float64 forward pass of a decoder-only model, in numpy, from a Hugging
Face directory (config.json + *.safetensors), written from the model
definitions (transformers' Llama/Mistral, Gemma 2 and Gemma 3 text models)
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
output:  {"logprobs": [[log p(label | sequence) at its last token, ...], ...]}

Definitions (HF, the parts that differ between families):
  embeddings * normalizer (Gemma: sqrt(hidden) rounded to the embedding dtype)
  RMSNorm x / sqrt(mean(x^2) + eps) * w (Gemma: * (1 + w))
  layer: h += post_attn_norm(attn(in_norm(h)));  h += post_ffw_norm(mlp(pre_ffw_norm(h)))
         (Llama: no post norms; its post_attention_layernorm is the pre-MLP norm)
  q, k: per-head RMSNorm (Gemma 3), then RoPE rotate_half with the layer's base
        (Gemma 3 sliding layers: rope_local_base_freq, unscaled; global: rope_theta,
        linear scaling divides positions by the factor)
  scores = q.k * scaling (Gemma: query_pre_attn_scalar^-0.5), soft-capped
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


def read_safetensors(directory):
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
            tensors[key] = (arr.astype(np.float64).reshape(info["shape"]), dtype)
    return tensors


def round_to(value, dtype):
    if dtype == "F16":
        return float(np.float16(value))
    if dtype == "BF16":
        bits = int(np.array([value], dtype=np.float32).view(np.uint32)[0])
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])
    return float(np.float32(value))


class Model:
    def __init__(self, directory):
        with open(os.path.join(directory, "config.json")) as fh:
            c = json.load(fh)
        self.c = c
        kind = c["model_type"]
        self.gemma = kind in ("gemma2", "gemma3", "gemma3_text")
        self.gemma3 = kind in ("gemma3", "gemma3_text")
        self.t = read_safetensors(directory)
        self.hidden = c["hidden_size"]
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads", self.heads)
        self.head_dim = c.get("head_dim") or self.hidden // self.heads
        self.eps = c.get("rms_norm_eps", 1e-6)
        embed, embed_dtype = self.t["model.embed_tokens.weight"]
        self.embed = embed
        self.normalizer = round_to(math.sqrt(self.hidden), embed_dtype) if self.gemma else 1.0
        self.scaling = (c.get("query_pre_attn_scalar") or self.head_dim) ** -0.5 if self.gemma else self.head_dim ** -0.5
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
        self.lm_head = self.t["lm_head.weight"][0] if "lm_head.weight" in self.t else embed

    def w(self, name):
        return self.t[name][0]

    def norm(self, x, name):
        weight = self.w(name)
        if self.gemma:
            weight = 1.0 + weight
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def rope_apply(self, x, layer, start=0):
        # x [..., T, H, D] at positions start.., rotate_half pairing
        theta, factor = self.rope[layer]
        d = self.head_dim
        inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d) / factor
        pos = np.arange(start, start + x.shape[-3], dtype=np.float64)
        ang = pos[:, None] * inv[None, :]
        cos = np.cos(ang)[:, None, :]
        sin = np.sin(ang)[:, None, :]
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    def act(self, x):
        if self.gemma:
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
        return x / (1.0 + np.exp(-x))

    def forward(self, ids):
        T = len(ids)
        h = self.embed[np.array(ids)] * self.normalizer
        D, Hq, Hkv = self.head_dim, self.heads, self.kv_heads
        group = Hq // Hkv
        for i in range(self.layers):
            p = f"model.layers.{i}."
            x = self.norm(h, p + "input_layernorm.weight")
            q = (x @ self.w(p + "self_attn.q_proj.weight").T).reshape(T, Hq, D)
            k = (x @ self.w(p + "self_attn.k_proj.weight").T).reshape(T, Hkv, D)
            v = (x @ self.w(p + "self_attn.v_proj.weight").T).reshape(T, Hkv, D)
            if p + "self_attn.q_proj.bias" in self.t:
                q = q + self.w(p + "self_attn.q_proj.bias").reshape(Hq, D)
                k = k + self.w(p + "self_attn.k_proj.bias").reshape(Hkv, D)
                v = v + self.w(p + "self_attn.v_proj.bias").reshape(Hkv, D)
            if p + "self_attn.q_norm.weight" in self.t:
                q = self.norm(q, p + "self_attn.q_norm.weight")
                k = self.norm(k, p + "self_attn.k_norm.weight")
            q = self.rope_apply(q, i)
            k = self.rope_apply(k, i)
            qi = np.arange(T)[:, None]
            ki = np.arange(T)[None, :]
            visible = ki <= qi
            if self.windows[i] is not None:
                visible = visible & (qi - ki < self.windows[i])
            out = np.zeros((T, Hq, D))
            for head in range(Hq):
                kv = head // group
                s = (q[:, head, :] @ k[:, kv, :].T) * self.scaling
                if self.attn_cap:
                    s = self.attn_cap * np.tanh(s / self.attn_cap)
                s = np.where(visible, s, -np.inf)
                s = s - s.max(axis=1, keepdims=True)
                e = np.exp(s)
                out[:, head, :] = (e / e.sum(axis=1, keepdims=True)) @ v[:, kv, :]
            a = out.reshape(T, Hq * D) @ self.w(p + "self_attn.o_proj.weight").T
            if self.gemma:
                a = self.norm(a, p + "post_attention_layernorm.weight")
                h = h + a
                x = self.norm(h, p + "pre_feedforward_layernorm.weight")
            else:
                h = h + a
                x = self.norm(h, p + "post_attention_layernorm.weight")
            m = (self.act(x @ self.w(p + "mlp.gate_proj.weight").T) * (x @ self.w(p + "mlp.up_proj.weight").T)) @ self.w(p + "mlp.down_proj.weight").T
            if self.gemma:
                m = self.norm(m, p + "post_feedforward_layernorm.weight")
            h = h + m
        last = self.norm(h[-1], "model.norm.weight")
        logits = self.lm_head @ last
        if self.final_cap:
            logits = self.final_cap * np.tanh(logits / self.final_cap)
        top = logits.max()
        return logits - (top + np.log(np.exp(logits - top).sum()))


def qkv(model, x, p):
    # x [..., T, hidden] -> q [..., T, Hq, D], k, v [..., T, Hkv, D] before RoPE
    lead = x.shape[:-1]
    D, Hq, Hkv = model.head_dim, model.heads, model.kv_heads
    q = (x @ model.w(p + "self_attn.q_proj.weight").T).reshape(*lead, Hq, D)
    k = (x @ model.w(p + "self_attn.k_proj.weight").T).reshape(*lead, Hkv, D)
    v = (x @ model.w(p + "self_attn.v_proj.weight").T).reshape(*lead, Hkv, D)
    if p + "self_attn.q_proj.bias" in model.t:
        q = q + model.w(p + "self_attn.q_proj.bias").reshape(Hq, D)
        k = k + model.w(p + "self_attn.k_proj.bias").reshape(Hkv, D)
        v = v + model.w(p + "self_attn.v_proj.bias").reshape(Hkv, D)
    if p + "self_attn.q_norm.weight" in model.t:
        q = model.norm(q, p + "self_attn.q_norm.weight")
        k = model.norm(k, p + "self_attn.k_norm.weight")
    return q, k, v


def rest_of_layer(model, h, out, p):
    # out [..., T, Hq, D]: the attention output; the residual adds and the MLP
    a = out.reshape(*out.shape[:-2], -1) @ model.w(p + "self_attn.o_proj.weight").T
    if model.gemma:
        h = h + model.norm(a, p + "post_attention_layernorm.weight")
        x = model.norm(h, p + "pre_feedforward_layernorm.weight")
    else:
        h = h + a
        x = model.norm(h, p + "post_attention_layernorm.weight")
    m = (model.act(x @ model.w(p + "mlp.gate_proj.weight").T) * (x @ model.w(p + "mlp.up_proj.weight").T)) @ model.w(p + "mlp.down_proj.weight").T
    if model.gemma:
        m = model.norm(m, p + "post_feedforward_layernorm.weight")
    return h + m


def log_softmax_last(model, h_last):
    # h_last [N, hidden] -> [N, vocab] log-probabilities
    logits = model.norm(h_last, "model.norm.weight") @ model.lm_head.T
    if model.final_cap:
        logits = model.final_cap * np.tanh(logits / model.final_cap)
    top = logits.max(axis=-1, keepdims=True)
    return logits - (top + np.log(np.exp(logits - top).sum(axis=-1, keepdims=True)))


def forward_items(model, prefix, items, labels, batch=25):
    """Each sequence prefix + item: the prefix's K and V once (model.forward's
    arithmetic), then the items in batches, each item's token at position
    P + j seeing the prefix keys and its own keys up to j, the window
    included. Items must have one length per batch (they are grouped)."""
    P = len(prefix)
    h = model.embed[np.array(prefix)] * model.normalizer
    D, Hq, Hkv = model.head_dim, model.heads, model.kv_heads
    group = Hq // Hkv
    cache = []
    for i in range(model.layers):
        p = f"model.layers.{i}."
        q, k, v = qkv(model, model.norm(h, p + "input_layernorm.weight"), p)
        q, k = model.rope_apply(q, i), model.rope_apply(k, i)
        cache.append((k, v))
        qi, ki = np.arange(P)[:, None], np.arange(P)[None, :]
        visible = ki <= qi
        if model.windows[i] is not None:
            visible = visible & (qi - ki < model.windows[i])
        out = np.zeros((P, Hq, D))
        for head in range(Hq):
            s = (q[:, head, :] @ k[:, head // group, :].T) * model.scaling
            if model.attn_cap:
                s = model.attn_cap * np.tanh(s / model.attn_cap)
            s = np.where(visible, s, -np.inf)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            out[:, head, :] = (e / e.sum(axis=1, keepdims=True)) @ v[:, head // group, :]
        h = rest_of_layer(model, h, out, p)
    results = [None] * len(items)
    by_length = {}
    for n, item in enumerate(items):
        by_length.setdefault(len(item), []).append(n)
    for L, members in by_length.items():
        for b in range(0, len(members), batch):
            idx = members[b : b + batch]
            N = len(idx)
            h = model.embed[np.array([items[n] for n in idx])] * model.normalizer  # [N, L, hidden]
            qpos = P + np.arange(L)[:, None]
            kpos = np.arange(P + L)[None, :]
            for i in range(model.layers):
                p = f"model.layers.{i}."
                q, k, v = qkv(model, model.norm(h, p + "input_layernorm.weight"), p)
                q, k = model.rope_apply(q, i, P), model.rope_apply(k, i, P)
                ck, cv = cache[i]
                keys = np.concatenate([np.broadcast_to(ck, (N,) + ck.shape), k], axis=1)  # [N, P+L, Hkv, D]
                values = np.concatenate([np.broadcast_to(cv, (N,) + cv.shape), v], axis=1)
                visible = kpos <= qpos
                if model.windows[i] is not None:
                    visible = visible & (qpos - kpos < model.windows[i])
                out = np.zeros((N, L, Hq, D))
                for head in range(Hq):
                    s = (q[:, :, head, :] @ keys[:, :, head // group, :].transpose(0, 2, 1)) * model.scaling
                    if model.attn_cap:
                        s = model.attn_cap * np.tanh(s / model.attn_cap)
                    s = np.where(visible, s, -np.inf)
                    e = np.exp(s - s.max(axis=2, keepdims=True))
                    out[:, :, head, :] = (e / e.sum(axis=2, keepdims=True)) @ values[:, :, head // group, :]
                h = rest_of_layer(model, h, out, p)
            lp = log_softmax_last(model, h[:, -1, :])
            for r, n in enumerate(idx):
                results[n] = [float(lp[r, l]) for l in labels]
    return results


def main():
    model = Model(sys.argv[1])
    request = json.load(sys.stdin)
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
