"""The PyTorch peer of bench:gpu: a Qwen3 forward written here (no transformers
model classes), scoring items against a query five ways:

  flex    every item packed after its query in one sequence; FlexAttention
          with a BlockMask (masked tiles skipped); the forward torch.compile'd
  sdpa    the same packed sequence, a dense boolean mask, scaled_dot_product_attention
  prefix  the query once (its K/V kept), then all items as one [N, L] batch
          attending to the query's K/V and causally to their own keys
  serial  query ++ item, one item at a time (only --serial-items items timed
          per request; latency and items/s scaled to all items, and said so)
  batch8  all requests of a workload in ONE packed flex call (each item sees
          its own query only); only for workloads with several requests

The LM head runs only at scored rows (each item's last token); the result is
log_softmax over the vocabulary gathered at the labels.

  python3 scripts/bench/gpu/peer_torch.py --model DIR --inputs inputs.json --out torch.json \
      [--workloads target,pr] [--methods flex,sdpa,prefix,serial,batch8] [--dtype bf16|f32] \
      [--precision highest|default] [--warmup 2] [--repeats 10] [--serial-items 20] \
      [--prefix-chunk 0] [--compile-mode default] [--device auto|cpu|cuda]
"""

from __future__ import annotations

import platform
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import peer_common as common

METHODS = ["flex", "sdpa", "prefix", "serial", "batch8"]


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


def forward(m: Qwen3, ids: torch.Tensor, pos: torch.Tensor, attend) -> torch.Tensor:
    """ids, pos: [B, T] -> hidden states [B, T, Dm] before the final norm.
    attend(layer, q [B,H,T,D], k [B,Hkv,T,D], v) -> [B,H,T,D]."""
    x = m.embed[ids]
    cos, sin = rope_tables(m, pos, x.dtype)
    B, T = ids.shape
    for i, (ln1, wq, wk, wv, wo, qn, kn, ln2, wg, wu, wd) in enumerate(m.layers):
        h = rms_norm(x, ln1, m.eps)
        q = rotate(rms_norm((h @ wq.T).view(B, T, m.H, m.D), qn, m.eps), cos, sin)
        k = rotate(rms_norm((h @ wk.T).view(B, T, m.Hkv, m.D), kn, m.eps), cos, sin)
        v = (h @ wv.T).view(B, T, m.Hkv, m.D)
        o = attend(i, q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + o.transpose(1, 2).reshape(B, T, m.H * m.D) @ wo.T
        h = rms_norm(x, ln2, m.eps)
        x = x + (F.silu(h @ wg.T) * (h @ wu.T)) @ wd.T
    return x


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
        # One compiled forward for flex and batch8 (recompiles once per packed length).
        self.flex_forward = torch.compile(self._flex_forward, dynamic=False, mode=args.compile_mode)

    def tensor(self, a) -> torch.Tensor:
        return torch.as_tensor(np.asarray(a), device=self.dev)

    def sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize()

    def _flex_forward(self, ids, pos, rows, block_mask):
        att = lambda i, q, k, v: flex_attention(q, k, v, block_mask=block_mask, enable_gqa=True)
        return head(self.m, forward(self.m, ids, pos, att)[0, rows], self.labels)

    @torch.inference_mode()
    def flex(self, requests):
        p = common.pack(requests)
        ids, pos, rows, req, item = (self.tensor(a) for a in (p.ids, p.pos, p.rows, p.req, p.item))

        def mask_mod(b, h, qi, ki):
            return (req[qi] == req[ki]) & (ki <= qi) & ((item[ki] < 0) | (item[ki] == item[qi]))

        T = len(p.ids)
        bm = create_block_mask(mask_mod, None, None, T, T, device=self.dev, _compile=self.dev.type == "cuda")
        lp = self.flex_forward(ids[None], pos[None], rows, bm)
        return common.split_rows(lp.cpu().numpy(), p.items_per_request), len(p.rows)

    @torch.inference_mode()
    def sdpa(self, requests):
        p = common.pack(requests)
        ids, pos, rows, req, item = (self.tensor(a) for a in (p.ids, p.pos, p.rows, p.req, p.item))
        T = len(p.ids)
        causal = torch.ones(T, T, dtype=torch.bool, device=self.dev).tril()
        mask = (req[:, None] == req[None, :]) & causal & ((item[None, :] < 0) | (item[None, :] == item[:, None]))
        att = lambda i, q, k, v: sdpa_gqa(q, k, v, attn_mask=mask[None, None])
        lp = head(self.m, forward(self.m, ids[None], pos[None], att)[0, rows], self.labels)
        return common.split_rows(lp.cpu().numpy(), p.items_per_request), len(p.rows)

    @torch.inference_mode()
    def prefix(self, requests):
        (rq,) = requests
        Q = len(rq["query"])
        cache = []  # per layer: the query's (k, v), [1, Hkv, Q, D]

        def keep(i, q, k, v):
            cache.append((k, v))
            return sdpa_gqa(q, k, v, is_causal=True)

        forward(self.m, self.tensor([rq["query"]]), self.tensor(np.arange(Q)[None]), keep)
        items = rq["items"]
        chunk = self.args.prefix_chunk or len(items)
        out = []
        for at in range(0, len(items), chunk):
            part = items[at:at + chunk]
            N, L = len(part), max(len(it) for it in part)
            # Right-padded: a real token's causal keys are never padding.
            ids = self.tensor([it + [0] * (L - len(it)) for it in part])
            pos = self.tensor(np.tile(np.arange(Q, Q + L), (N, 1)))
            mask = torch.cat([torch.ones(L, Q, dtype=torch.bool, device=self.dev),
                              torch.ones(L, L, dtype=torch.bool, device=self.dev).tril()], 1)

            def extend(i, q, k, v):
                kq, vq = cache[i]
                k = torch.cat([kq.expand(N, -1, -1, -1), k], 2)
                v = torch.cat([vq.expand(N, -1, -1, -1), v], 2)
                return sdpa_gqa(q, k, v, attn_mask=mask[None, None])

            x = forward(self.m, ids, pos, extend)
            last = self.tensor([len(it) - 1 for it in part])
            out.append(head(self.m, x[torch.arange(N, device=self.dev), last], self.labels))
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
                        lambda i, q, k, v: sdpa_gqa(q, k, v, is_causal=True))
            out.append(head(self.m, x[0, -1:], self.labels))
        lp = torch.cat(out).cpu().numpy()
        return common.split_rows(lp, [len(items)]), len(items)

    def methods(self, workload: str, requests: list) -> list:
        ms = [common.Method("flex", self.flex), common.Method("sdpa", self.sdpa),
              common.Method("prefix", self.prefix), common.Method("serial", self.serial)]
        if len(requests) > 1:
            ms.append(common.Method("batch8", self.flex, batched=True))
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
    peer = TorchPeer(args, labels)
    common.run_peer("torch", args, labels, workloads, peer.methods, peer.versions(), peer.sync,
                    {"device": peer.dev.type, "compile_mode": args.compile_mode})


if __name__ == "__main__":
    sys.exit(main())
