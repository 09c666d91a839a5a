"""The PyTorch peer of bench:gpu: a Qwen3 forward written here (no transformers
model classes), scoring items against a query five ways:

  flex    every item packed after its query in one sequence; FlexAttention
          with a BlockMask (masked tiles skipped); the layer torch.compile'd
  sdpa    the same packed sequence, a dense boolean mask, scaled_dot_product_attention
  prefix  the query once (its K/V kept), then all items in one packed extend
          pass: each attends to the query's K/V and causally to its own keys
          (SDPA, dense mask)
  serial  query ++ item, one item at a time (only --serial-items items timed
          per request; latency and items/s scaled to all items, and said so)
  batch8  all requests of a workload in ONE packed flex call (each item sees
          its own query only); only for workloads with several requests
  flexfull, batch8full  flex and batch8 with the whole forward (all layers
          and FlexAttention) torch.compile'd as one graph

The LM head runs only at scored rows (each item's last token); the result is
log_softmax over the vocabulary gathered at the labels.

  python3 scripts/lab/gpu/peer_torch.py --model DIR --inputs inputs.json --out torch.json \
      [--workloads target,pr] [--methods flex,sdpa,prefix,serial,batch8] [--dtype bf16|f32] \
      [--precision highest|default] [--warmup 2] [--repeats 10] [--serial-items 20] \
      [--prefix-chunk 0] [--compile-mode default] [--device auto|cpu|cuda]
"""

from __future__ import annotations

import platform
import sys

import peer_common as common

common.progress("torch peer: importing torch")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from torch.nn.attention.flex_attention import create_block_mask, flex_attention  # noqa: E402

common.progress(f"torch peer: torch {torch.__version__} imported")

METHODS = ["flex", "sdpa", "prefix", "serial", "batch8", "flexfull", "batch8full"]


# ---- the model ---------------------------------------------------------------

class Qwen3:
    """Weights as [out, in] matrices (x @ W.T), like the checkpoint."""

    def __init__(self, model_dir: str, dtype: torch.dtype, device: torch.device):
        c = common.load_config(model_dir)
        self.H, self.Hkv = c["num_attention_heads"], c["num_key_value_heads"]
        self.D = c.get("head_dim") or c["hidden_size"] // self.H
        self.eps = c["rms_norm_eps"]
        w = {k: v.to(dtype) for k, v in load_file(f"{model_dir}/model.safetensors", device=str(device)).items()}
        self.embed = w["model.embed_tokens.weight"]
        self.norm = w["model.norm.weight"]
        names = ["input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                 "self_attn.o_proj", "self_attn.q_norm", "self_attn.k_norm", "post_attention_layernorm",
                 "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
        self.layers = [[w[f"model.layers.{i}.{n}.weight"] for n in names] for i in range(c["num_hidden_layers"])]
        # RoPE frequencies in f32, as Hugging Face computes them.
        self.inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, self.D, 2, device=device, dtype=torch.float32) / self.D))


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    # In f32, then back to the activation dtype before the weight (HF Qwen3RMSNorm).
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rope_tables(m: Qwen3, pos: torch.Tensor, dtype: torch.dtype):
    """cos, sin of shape [..., T, 1, D] for positions [..., T]."""
    f = pos.float()[..., None] * m.inv_freq
    e = torch.cat([f, f], -1)[..., None, :]
    return e.cos().to(dtype), e.sin().to(dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


def layer(m: Qwen3, x, cos, sin, w, attend) -> torch.Tensor:
    """One decoder layer on x [B, T, Dm]; attend(q [B,H,T,D], k [B,Hkv,T,D], v) -> [B,H,T,D]."""
    ln1, wq, wk, wv, wo, qn, kn, ln2, wg, wu, wd = w
    B, T, _ = x.shape
    h = rms_norm(x, ln1, m.eps)
    q = rotate(rms_norm((h @ wq.T).view(B, T, m.H, m.D), qn, m.eps), cos, sin)
    k = rotate(rms_norm((h @ wk.T).view(B, T, m.Hkv, m.D), kn, m.eps), cos, sin)
    v = (h @ wv.T).view(B, T, m.Hkv, m.D)
    o = attend(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    x = x + o.transpose(1, 2).reshape(B, T, m.H * m.D) @ wo.T
    h = rms_norm(x, ln2, m.eps)
    return x + (F.silu(h @ wg.T) * (h @ wu.T)) @ wd.T


def forward(m: Qwen3, ids: torch.Tensor, pos: torch.Tensor, run_layer) -> torch.Tensor:
    """ids, pos: [B, T] -> hidden states [B, T, Dm] before the final norm.
    run_layer(i, x, cos, sin, weights) -> x: one layer (eager, or a compiled one)."""
    x = m.embed[ids]
    cos, sin = rope_tables(m, pos, x.dtype)
    for i, w in enumerate(m.layers):
        x = run_layer(i, x, cos, sin, w)
    return x


def eager(m: Qwen3, attend):
    """run_layer for forward() with attend(i, q, k, v) that may depend on the layer index."""
    return lambda i, x, cos, sin, w: layer(m, x, cos, sin, w, lambda q, k, v: attend(i, q, k, v))


def head(m: Qwen3, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Hidden states of the scored rows [S, Dm] -> log-probs at the labels [S, labels]."""
    logits = rms_norm(x, m.norm, m.eps) @ m.embed.T
    return torch.log_softmax(logits.float(), -1)[:, labels]


def sdpa_gqa(q, k, v, **kw):
    # Repeat the KV heads: with an explicit mask, SDPA's fused kernels do not all take enable_gqa.
    r = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1), **kw)


# ---- the methods -------------------------------------------------------------

class TorchPeer:
    def __init__(self, args, labels):
        self.args = args
        self.dev = torch.device("cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()) else "cpu")
        if self.dev.type == "cuda" and not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device")
        tf32 = args.precision == "default"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        self.dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
        self.m = Qwen3(args.model, self.dtype, self.dev)
        self.labels = torch.tensor(labels, device=self.dev)
        # One compiled layer, called for every layer (the weights are inputs): compiles once per
        # packed length, not once per layer. The block mask is built by a compiled builder on a GPU.
        self.flex_layer = torch.compile(self._flex_layer, dynamic=False, mode=args.compile_mode)
        self.block_mask = torch.compile(create_block_mask) if self.dev.type == "cuda" else create_block_mask
        # The whole forward as one compiled graph (flexfull, batch8full): compiles once per packed length.
        self.flex_forward = torch.compile(self._flex_forward, dynamic=False, mode=args.compile_mode)

    def tensor(self, a) -> torch.Tensor:
        return torch.as_tensor(np.asarray(a), device=self.dev)

    def sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize()

    def _flex_layer(self, x, cos, sin, w, block_mask):
        return layer(self.m, x, cos, sin, w, lambda q, k, v: flex_attention(q, k, v, block_mask=block_mask, enable_gqa=True))

    def _flex_forward(self, ids, pos, block_mask):
        return forward(self.m, ids, pos, lambda i, x, cos, sin, w: layer(
            self.m, x, cos, sin, w, lambda q, k, v: flex_attention(q, k, v, block_mask=block_mask, enable_gqa=True)))

    @torch.inference_mode()
    def flex_full(self, requests):
        return self.flex(requests, whole=True)

    @torch.inference_mode()
    def flex(self, requests, whole=False):
        p = common.pack(requests)
        ids, pos, rows, req, item = (self.tensor(a) for a in (p.ids, p.pos, p.rows, p.req, p.item))

        def mask_mod(b, h, qi, ki):
            return (req[qi] == req[ki]) & (ki <= qi) & ((item[ki] < 0) | (item[ki] == item[qi]))

        T = len(p.ids)
        bm = self.block_mask(mask_mod, None, None, T, T, device=self.dev)
        if whole:
            x = self.flex_forward(ids[None], pos[None], bm)
        else:
            x = forward(self.m, ids[None], pos[None], lambda i, x, cos, sin, w: self.flex_layer(x, cos, sin, w, bm))
        lp = head(self.m, x[0, rows], self.labels)
        return common.split_rows(lp.cpu().numpy(), p.items_per_request), len(p.rows)

    @torch.inference_mode()
    def sdpa(self, requests):
        p = common.pack(requests)
        ids, pos, rows, req, item = (self.tensor(a) for a in (p.ids, p.pos, p.rows, p.req, p.item))
        T = len(p.ids)
        causal = torch.ones(T, T, dtype=torch.bool, device=self.dev).tril()
        mask = (req[:, None] == req[None, :]) & causal & ((item[None, :] < 0) | (item[None, :] == item[:, None]))
        att = lambda i, q, k, v: sdpa_gqa(q, k, v, attn_mask=mask[None, None])
        lp = head(self.m, forward(self.m, ids[None], pos[None], eager(self.m, att))[0, rows], self.labels)
        return common.split_rows(lp.cpu().numpy(), p.items_per_request), len(p.rows)

    @torch.inference_mode()
    def prefix(self, requests):
        (rq,) = requests
        Q = len(rq["query"])
        cache = []  # per layer: the query's (k, v), [1, Hkv, Q, D]

        def keep(i, q, k, v):
            cache.append((k, v))
            return sdpa_gqa(q, k, v, is_causal=True)

        forward(self.m, self.tensor([rq["query"]]), self.tensor(np.arange(Q)[None]), eager(self.m, keep))
        # All items packed in one extend sequence after the cached query: queries [1, H, N*L, D]
        # against keys [query ++ items]. (Items as an [N, L] batch instead copy the query's K/V
        # N times per layer: 3.9x slower on the H100 with 500 items.)
        items = rq["items"]
        chunk = self.args.prefix_chunk or len(items)
        out = []
        for at in range(0, len(items), chunk):
            p = common.pack([{"query": [], "items": items[at:at + chunk]}])
            ids, pos, rows, item = (self.tensor(a) for a in (p.ids, p.pos + Q, p.rows, p.item))
            n = len(p.ids)
            own = (item[:, None] == item[None, :]) & torch.ones(n, n, dtype=torch.bool, device=self.dev).tril()
            mask = torch.cat([torch.ones(n, Q, dtype=torch.bool, device=self.dev), own], 1)

            def extend(i, q, k, v):
                kq, vq = cache[i]
                return sdpa_gqa(q, torch.cat([kq, k], 2), torch.cat([vq, v], 2), attn_mask=mask[None, None])

            x = forward(self.m, ids[None], pos[None], eager(self.m, extend))
            out.append(head(self.m, x[0, rows], self.labels))
        lp = torch.cat(out).cpu().numpy()
        return common.split_rows(lp, [len(items)]), len(items)

    @torch.inference_mode()
    def serial(self, requests):
        (rq,) = requests
        items = rq["items"][: self.args.serial_items]
        out = []
        for it in items:
            seq = rq["query"] + it
            x = forward(self.m, self.tensor([seq]), self.tensor(np.arange(len(seq))[None]),
                        eager(self.m, lambda i, q, k, v: sdpa_gqa(q, k, v, is_causal=True)))
            out.append(head(self.m, x[0, -1:], self.labels))
        lp = torch.cat(out).cpu().numpy()
        return common.split_rows(lp, [len(items)]), len(items)

    def methods(self, workload: str, requests: list) -> list:
        ms = [common.Method("flex", self.flex), common.Method("sdpa", self.sdpa),
              common.Method("prefix", self.prefix), common.Method("serial", self.serial)]
        ms.append(common.Method("flexfull", self.flex_full))
        if len(requests) > 1:
            ms.append(common.Method("batch8", self.flex, batched=True))
            ms.append(common.Method("batch8full", self.flex_full, batched=True))
        return ms

    def versions(self) -> dict:
        v = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
             "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
             "device": self.dev.type}
        try:
            import triton
            v["triton"] = triton.__version__
        except ImportError:
            pass
        if self.dev.type == "cuda":
            v["gpu"] = torch.cuda.get_device_name(self.dev)
        else:
            v["cpu"] = platform.processor() or platform.machine()
        return v


def main():
    def extra(p):
        p.add_argument("--serial-items", type=int, default=20, help="items timed per request by serial (scaled to all)")
        p.add_argument("--prefix-chunk", type=int, default=0, help="items per extend pass in prefix (0: all at once)")
        p.add_argument("--compile-mode", default="default", help="torch.compile mode for flex/batch8")

    args = common.parse_args("torch", METHODS, extra)
    labels, workloads = common.load_inputs(args.inputs, args.workloads)
    torch.manual_seed(0)
    common.progress(f"torch peer: loading {args.model} ({args.dtype})")
    peer = TorchPeer(args, labels)
    common.progress("torch peer: model loaded")
    common.run_peer("torch", args, labels, workloads, peer.methods, peer.versions(), peer.sync,
                    {"device": peer.dev.type, "compile_mode": args.compile_mode})


if __name__ == "__main__":
    sys.exit(main())
