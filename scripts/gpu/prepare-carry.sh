#!/usr/bin/env bash
# Prepares what scripts/gpu/h100-run.sh needs on a GPU machine that has Python
# (jax, jax-cuda13-pjrt, torch) but no Node: the package bundle (npm run
# bundle: dist/, bin/, the built addon, production dependencies) and this
# machine's node binary, xz-compressed, in the git-ignored folder
# .cache/gpu-carry (the device run's `carry`, about 30 MB).
#
#   scripts/gpu/prepare-carry.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.cache/gpu-carry
rm -rf "$out" && mkdir -p "$out"
npm run build:ts >/dev/null
node scripts/bundle.js --out "$out/pjrt-score.tar.gz" >&2
xz -T2 -6 -c "$(command -v node)" > "$out/node.xz"
node --version > "$out/node-version.txt"
du -sh "$out"/*
