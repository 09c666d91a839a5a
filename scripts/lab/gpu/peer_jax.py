"""The JAX peer of bench:gpu: a Qwen3 forward in JAX with every item packed
after its query in one sequence and a segment mask (an item sees its own
query and itself causally, never another item or another request), through
jax.nn.dot_product_attention:

  packed  one request per call
  batch8  all requests of a workload in one call (workloads with several requests)

Attention (--attention): 'cudnn' is cuDNN's fused attention (the mask becomes
the additive bias cuDNN takes), 'xla' is XLA's own; 'auto' tries cuDNN on a
GPU and falls back to XLA when cuDNN refuses (f32, for one), recording which
ran and why in the row. On a CPU it is 'xla'. The layer loop is a lax.scan
over stacked weights; the LM head runs only at each item's last token.

  python3 scripts/lab/gpu/peer_jax.py --model DIR --inputs inputs.json --out jax.json \
      [--workloads target,pr] [--methods packed,batch8] [--dtype bf16|f32] \
      [--precision highest|default] [--warmup 2] [--repeats 10] [--attention auto|cudnn|xla] \
      [--pad 128] [--device auto|cpu|cuda]
"""

from __future__ import annotations

import platform
import sys

import numpy as np

import peer_common as common

METHODS = ["packed", "batch8"]


def extra_args(p):
    p.add_argument("--attention", choices=["auto", "cudnn", "xla"], default="auto",
                   help="auto: cudnn on a GPU, xla when cudnn refuses or on a CPU")
    p.add_argument("--pad", type=int, default=128, help="pad the packed length to a multiple of this (cuDNN tiles)")


args = common.parse_args("jax", METHODS, extra_args)

common.progress("jax peer: importing jax")
import jax  # noqa: E402  (after argparse: --help must not wait for jax)

common.progress(f"jax peer: jax {jax.__version__} imported")

if args.device == "cpu":
    jax.config.update("jax_platforms", "cpu")
if args.precision == "highest":
    jax.config.update("jax_default_matmul_precision", "highest")

import jax.numpy as jnp  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402


# ---- the model ---------------------------------------------------------------

def load_params(model_dir: str, dtype) -> tuple[dict, dict]:
    """Weights as [in, out] (x @ W), the layers stacked along a leading axis for lax.scan."""
    c = common.load_config(model_dir)
    raw = load_file(f"{model_dir}/model.safetensors")  # bf16 arrives as ml_dtypes.bfloat16
    get = lambda n: jnp.asarray(raw[n]).astype(dtype)
    names = {"ln1": "input_layernorm", "wq": "self_attn.q_proj", "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
             "wo": "self_attn.o_proj", "qn": "self_attn.q_norm", "kn": "self_attn.k_norm",
             "ln2": "post_attention_layernorm", "wg": "mlp.gate_proj", "wu": "mlp.up_proj", "wd": "mlp.down_proj"}
    layers = {}
    for key, n in names.items():
        ws = [get(f"model.layers.{i}.{n}.weight") for i in range(c["num_hidden_layers"])]
        layers[key] = jnp.stack([w.T if w.ndim == 2 else w for w in ws])
    params = {"embed": get("model.embed_tokens.weight"), "norm": get("model.norm.weight"), "layers": layers}
    H = c["num_attention_heads"]
    dims = {"H": H, "Hkv": c["num_key_value_heads"], "D": c.get("head_dim") or c["hidden_size"] // H,
            "eps": c["rms_norm_eps"], "theta": c["rope_theta"]}
    return params, dims


def rms_norm(x, w, eps):
    # In f32, then back to the activation dtype before the weight (as HF Qwen3RMSNorm).
    xf = x.astype(jnp.float32)
    return w * (xf * jax.lax.rsqrt(jnp.mean(xf * xf, -1, keepdims=True) + eps)).astype(x.dtype)


def rotate(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + jnp.concatenate([-x[..., h:], x[..., :h]], -1) * sin


def make_forward(dims: dict, labels: np.ndarray, implementation: str):
    H, Hkv, D, eps = dims["H"], dims["Hkv"], dims["D"], dims["eps"]
    inv_freq = 1.0 / (dims["theta"] ** (np.arange(0, D, 2, dtype=np.float32) / D))

    def forward(params, ids, pos, req, item, rows):
        """Packed tokens [T] -> log-probs at the labels for the rows [S]."""
        T = ids.shape[0]
        x = params["embed"][ids][None]  # [1, T, Dm]
        f = pos.astype(jnp.float32)[:, None] * inv_freq
        e = jnp.concatenate([f, f], -1)[None, :, None, :]  # [1, T, 1, D]
        cos, sin = jnp.cos(e).astype(x.dtype), jnp.sin(e).astype(x.dtype)
        t = jnp.arange(T)
        mask = ((req[:, None] == req[None, :]) & (t[None, :] <= t[:, None])
                & ((item[None, :] < 0) | (item[None, :] == item[:, None])))[None, None]  # [1, 1, T, T]

        def layer(x, w):
            h = rms_norm(x, w["ln1"], eps)
            q = rotate(rms_norm((h @ w["wq"]).reshape(1, T, H, D), w["qn"], eps), cos, sin)
            k = rotate(rms_norm((h @ w["wk"]).reshape(1, T, Hkv, D), w["kn"], eps), cos, sin)
            v = (h @ w["wv"]).reshape(1, T, Hkv, D)
            o = jax.nn.dot_product_attention(q, k, v, mask=mask, implementation=implementation)
            x = x + o.reshape(1, T, H * D) @ w["wo"]
            h = rms_norm(x, w["ln2"], eps)
            return x + (jax.nn.silu(h @ w["wg"]) * (h @ w["wu"])) @ w["wd"], None

        x, _ = jax.lax.scan(layer, x, params["layers"])
        logits = rms_norm(x[0, rows], params["norm"], eps) @ params["embed"].T
        return jax.nn.log_softmax(logits.astype(jnp.float32), -1)[:, labels]

    return jax.jit(forward)


# ---- the methods -------------------------------------------------------------

class JaxPeer:
    def __init__(self, args, labels):
        self.args = args
        self.dev = jax.devices()[0]
        if args.device == "cuda" and self.dev.platform != "gpu":
            raise SystemExit(f"--device cuda: jax sees {self.dev.platform}, not a GPU")
        self.on_gpu = self.dev.platform == "gpu"
        dtype = {"bf16": jnp.bfloat16, "f32": jnp.float32}[args.dtype]
        self.params, self.dims = load_params(args.model, dtype)
        self.labels = np.asarray(labels, dtype=np.int32)
        want = args.attention if args.attention != "auto" else ("cudnn" if self.on_gpu else "xla")
        self.forwards = {impl: make_forward(self.dims, self.labels, impl) for impl in {want, "xla"}}
        self.want = want

    def method(self, name: str, batched: bool) -> common.Method:
        m = common.Method(name, None, batched=batched, info={"attention": self.want})

        def call(requests):
            p = common.pack(requests, self.args.pad)
            run = lambda impl: np.asarray(self.forwards[impl](self.params, p.ids, p.pos, p.req, p.item, p.rows))
            try:
                lp = run(m.info["attention"])
            except Exception as e:
                # Only the first (warm-up) call can meet a refusal: later calls run what worked.
                if self.args.attention != "auto" or m.info["attention"] == "xla":
                    raise
                m.info["attention"] = "xla"
                m.info["attention_note"] = f"cudnn refused, xla ran: {type(e).__name__}: {str(e)[:500]}"
                print(f"jax   {name}: {m.info['attention_note'].splitlines()[0]}", file=sys.stderr, flush=True)
                lp = run("xla")
            return common.split_rows(lp, p.items_per_request), len(p.rows)

        m.call = call
        return m

    def methods(self, workload: str, requests: list) -> list:
        ms = [self.method("packed", False)]
        if len(requests) > 1:
            ms.append(self.method("batch8", True))
        return ms

    def sync(self):
        pass  # each call ends with np.asarray of its result: the device is done

    def versions(self) -> dict:
        import jaxlib
        v = {"python": platform.python_version(), "jax": jax.__version__, "jaxlib": jaxlib.__version__,
             "device": self.dev.platform, "device_kind": self.dev.device_kind}
        if self.on_gpu:
            v["gpu"] = self.dev.device_kind
            try:  # private module: versions are a courtesy, never a failure
                from jax._src.lib import cuda_versions
                v["cuda"] = cuda_versions.cuda_runtime_get_version()
                v["cudnn"] = cuda_versions.cudnn_get_version()
            except Exception as e:
                v["cuda"] = f"unknown ({type(e).__name__})"
        else:
            v["cpu"] = platform.processor() or platform.machine()
        return v


def main():
    labels, workloads = common.load_inputs(args.inputs, args.workloads)
    common.progress(f"jax peer: loading {args.model} ({args.dtype})")
    peer = JaxPeer(args, labels)
    common.progress(f"jax peer: model loaded, attention {peer.want}")
    common.run_peer("jax", args, labels, workloads, peer.methods, peer.versions(), peer.sync,
                    {"device": peer.dev.platform})


if __name__ == "__main__":
    sys.exit(main())
