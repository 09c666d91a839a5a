#!/usr/bin/env bash
# Prepares what the device scripts need on a GPU machine that has Python
# (jax, jax-cuda13-pjrt, torch) but no Node, in the git-ignored folder
# .cache/gpu-carry (the device run's `carry`, at most 64 MiB):
#   - the package bundle (npm run bundle: dist/, bin/, the built addon,
#     production dependencies) and this machine's node binary, xz-compressed
#     (scripts/lab/gpu/h100-run.sh and the other GPU scripts), and autocannon with
#     what it requires (the HTTP step's load generator: scripts/build/pack-modules.js);
#   - for the AMX host check on the GPU machine's host CPU
#     (scripts/lab/cpu/amx-host-check.sh): the XLA CPU plugin stripped of its
#     symbols (strip --strip-unneeded, then xz -9e: about 34 MB; node and
#     the plugin at -9e keep the whole carry near 63 MiB) and the test
#     runner's modules (tape and what it requires). --gpu-only leaves them out.
#
#   scripts/lab/gpu/prepare-carry.sh [--gpu-only]
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=.cache/gpu-carry
rm -rf "$out" && mkdir -p "$out"
npm run build:ts >/dev/null
node scripts/build/bundle.js --out "$out/pjrt-score.tar.gz" >&2
xz -T2 -9e -c "$(command -v node)" > "$out/node.xz"
node --version > "$out/node-version.txt"
node scripts/build/pack-modules.js --out "$out/bench-deps.tar.gz" autocannon >&2
if [ "${1:-}" != "--gpu-only" ]; then
  plugin=$(node -e "require('./dist/runtime').ensurePluginPath().then((p) => console.log(p))")
  strip --strip-unneeded -o "$out/xla_cpu_pjrt.so" "$plugin"
  xz -T2 -9e "$out/xla_cpu_pjrt.so"
  node scripts/build/pack-modules.js --out "$out/test-modules.tar.gz" tape >&2
fi
du -sh "$out"/*
total=$(du -sb "$out" | cut -f1)
echo "carry: $((total / 1048576)) MiB of 64"
[ "$total" -le $((64 * 1048576)) ] || { echo "carry is over 64 MiB: the device refuses it" >&2; exit 1; }
