"""JAX's own lowering of cuDNN fused attention for the CUDA platform, on a machine without a GPU.

Prints, per shape, the `stablehlo.custom_call @__cudnn$fmha...` lines that
`jax.nn.dot_product_attention(..., implementation='cudnn')` lowers to for
platform 'cuda': the forward-only form and the training forward (the forward
of jax.vjp), whose custom call also returns the softmax statistics. These
are the reference that lib/hlo/attention/cudnn-call.ts is compared with
(test/attention-cudnn.test.js; fixture test/fixtures/jax-cudnn-0.11.2.txt).

Usage (python >= 3.12, which jax 0.11.2 requires):
    python3.12 scripts/lab/gpu/jax_cudnn_reference.py [--install] [--cache DIR] > out.txt

--install pip-installs the pinned wheels below with --no-deps into
DIR/python-jax-<version> (DIR: $PJRT_SCORE_CACHE or ~/.cache/pjrt-score).
No GPU and no CUDA library is needed: the cuDNN version and compute
capability checks, which would ask the GPU, are replaced by stubs.
"""
import argparse
import os
import subprocess
import sys

# jax-cuda13-pjrt 0.11.2 is the plugin docs/gpu.md documents; these are the wheels of the same release.
JAX_VERSION = '0.11.2'
PINNED = [
    f'jax=={JAX_VERSION}',
    f'jaxlib=={JAX_VERSION}',
    f'jax-cuda13-plugin=={JAX_VERSION}',
    'numpy==2.3.5',
    'ml_dtypes==0.5.4',
    'opt_einsum==3.4.0',
    'scipy==1.16.3',
]

# The shapes our programs use: (name, batch, q rows, kv rows, q heads, kv heads, head dim, mask).
# mask: none, causal, padding (key_value_seq_lengths given: the prefix keys past the prefix length), or
# padding_causal (both: a query's prefill rows and its item rows against the prefix keys in one call).
SHAPES = [
    ('qwen3-prefix', 1, 256, 512, 16, 8, 128, 'none'),
    ('qwen3-prefix-padded', 1, 256, 512, 16, 8, 128, 'padding'),
    ('qwen3-grouped-prefix-padded', 4, 160, 384, 16, 8, 128, 'padding'),
    ('qwen3-causal', 1, 512, 512, 16, 8, 128, 'causal'),
    ('qwen3-prefill-and-items', 1, 832, 512, 16, 8, 128, 'padding_causal'),
    ('qwen3-grouped-prefill-and-items', 8, 544, 304, 16, 8, 128, 'padding_causal'),
    ('qwen3-items-causal', 64, 20, 20, 16, 8, 128, 'causal'),
    ('smollm2-prefix', 1, 128, 256, 9, 3, 64, 'none'),
    ('smollm2-prefix-padded', 1, 128, 256, 9, 3, 64, 'padding'),
    ('smollm2-causal', 1, 256, 256, 9, 3, 64, 'causal'),
]


def cache_dir(arg):
    if arg:
        return arg
    return os.environ.get('PJRT_SCORE_CACHE') or os.path.join(os.path.expanduser('~'), '.cache', 'pjrt-score')


def install(target):
    marker = os.path.join(target, '.installed-' + '-'.join(p.replace('==', '-') for p in PINNED))
    if os.path.exists(marker):
        return
    os.makedirs(target, exist_ok=True)
    cmd = [sys.executable, '-m', 'pip', 'install', '--quiet', '--no-deps', '--upgrade', '--target', target] + PINNED
    print('# ' + ' '.join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    open(marker, 'w').close()


def stub_gpu_checks():
    from jax._src.cudnn import fused_attention_stablehlo as fa
    fa.check_cudnn_version = lambda *a, **k: None
    fa.check_compute_capability = lambda *a, **k: True
    # Some releases ask for the cuDNN version elsewhere too (layout choices); answer with the
    # version the jax-cuda13 wheels pin (nvidia-cudnn-cu13 9.x).
    if hasattr(fa, 'get_cudnn_version'):
        fa.get_cudnn_version = lambda *a, **k: 91200


def custom_calls(text):
    return [line.strip() for line in text.splitlines() if 'stablehlo.custom_call @__cudnn$' in line]


def lower(shape):
    import jax
    import jax.numpy as jnp
    name, b, tq, tk, hq, hkv, d, mask = shape
    q = jax.ShapeDtypeStruct((b, tq, hq, d), jnp.bfloat16)
    k = jax.ShapeDtypeStruct((b, tk, hkv, d), jnp.bfloat16)
    v = jax.ShapeDtypeStruct((b, tk, hkv, d), jnp.bfloat16)
    lengths = jax.ShapeDtypeStruct((b,), jnp.int32)

    def attend(q, k, v, kv_lengths):
        return jax.nn.dot_product_attention(
            q, k, v, is_causal=mask in ('causal', 'padding_causal'),
            key_value_seq_lengths=kv_lengths if mask in ('padding', 'padding_causal') else None, implementation='cudnn')

    def training_forward(q, k, v, kv_lengths):
        out, _ = jax.vjp(lambda q, k, v: attend(q, k, v, kv_lengths), q, k, v)
        return out

    out = []
    for form, fn in (('forward', attend), ('training', training_forward)):
        text = jax.jit(fn).trace(q, k, v, lengths).lower(lowering_platforms=('cuda',)).as_text()
        calls = custom_calls(text)
        if not calls:
            raise SystemExit(f'{name} {form}: no cuDNN custom call in the lowering')
        out.append(f'## {name} {form} q={b}x{tq}x{hq}x{d} kv={b}x{tk}x{hkv}x{d} mask={mask}')
        out.extend(calls)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--install', action='store_true', help='pip-install the pinned wheels into the cache first')
    ap.add_argument('--cache', help='cache directory (default $PJRT_SCORE_CACHE or ~/.cache/pjrt-score)')
    args = ap.parse_args()
    if sys.version_info < (3, 12):
        raise SystemExit(f'jax {JAX_VERSION} needs python >= 3.12, this is {sys.version.split()[0]}')
    target = os.path.join(cache_dir(args.cache), f'python-jax-{JAX_VERSION}')
    if args.install:
        install(target)
    sys.path.insert(0, target)
    os.environ.setdefault('JAX_PLATFORMS', 'cpu')
    import jax
    if jax.__version__ != JAX_VERSION:
        raise SystemExit(f'jax {jax.__version__} imported, {JAX_VERSION} pinned (run with --install)')
    stub_gpu_checks()
    print(f'# jax {jax.__version__}: jax.nn.dot_product_attention(implementation="cudnn") lowered for cuda (bf16)')
    for shape in SHAPES:
        print('\n'.join(lower(shape)))


if __name__ == '__main__':
    main()
