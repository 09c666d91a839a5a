#!/usr/bin/env bash
# A short prepared probe on an NVIDIA GPU, pjrt-score only, no
# FlexAttention: within 4.5 minutes (BUDGET_S, default 260 s) it measures
# candidate forms and XLA options and brings back what the next change needs
# (XLA's optimized programs, a kernel profile). Run from the repository root
# on the device machine, with .cache/gpu-carry (scripts/lab/gpu/prepare-carry.sh)
# carried along; everything goes under $OUT (default ./gpu-out):
#
#   1. unpacks node and the bundle (scripts/lab/gpu/call-common.sh);
#   2. bench:gpu on the candidate ($CAND: cuDNN with the prefill joined to the
#      items. prefix call) and today's default ($FUSED: cuDNN
#      for both parts), target packed and 8-concurrent PR;
#   3. the candidate once per XLA flag in $VARIANTS (label=XLA_FLAGS;...),
#      target packed and 8-concurrent PR (a flag the platform's XLA options
#      also set is theirs: they apply per compile, after XLA_FLAGS);
#   4. the candidate's target program compiled with XLA's dump on: the HLO
#      before and after optimization, as text, in the archive (dump/);
#   5. PyTorch f32 with TF32 off (the parity reference), then a kernel
#      profile of one target pass of the candidate and the accuracy gate.
set -uo pipefail
BUDGET_S=${BUDGET_S:-260}
# shellcheck source=scripts/lab/gpu/call-common.sh
. "$(dirname "$0")/call-common.sh"
CAND=${CAND:-bf16/bf16/cudnn_join/cudnn+cross-request}
FUSED=${FUSED:-bf16/bf16/cudnn/cudnn+cross-request}
VARIANTS=${VARIANTS:-no-triton-gemm=--xla_gpu_enable_triton_gemm=false;cublaslt=--xla_gpu_enable_cublaslt=true}
export BENCH_RESERVE_S=${BENCH_RESERVE_S:-70} PROFILE_RESERVE_S=${PROFILE_RESERVE_S:-35}
QUICK=(--methods packed,8-concurrent --breakdown 1)

say "custom calls the candidate emits"
node scripts/bench/gpu.js --plugin cuda --configs "$CAND" --emit-only 1 --dir "$DIR" 2>&1 | cut -c1-400

bench main --configs "$CAND,$FUSED" "${QUICK[@]}"
rm -rf "$DIR/executables-main" && cp -r "$DIR/executables" "$DIR/executables-main" 2>/dev/null
IFS=';' read -r -a variants <<<"$VARIANTS"
for v in "${variants[@]}"; do
  [ -n "$v" ] && XLA_FLAGS="${v#*=}" bench "${v%%=*}" --configs "$CAND" "${QUICK[@]}"
done
XLA_FLAGS="--xla_dump_to=$OUT/dump --xla_dump_hlo_as_text" bench dump --configs "$CAND" --methods packed
say "dump: $(find "$OUT/dump" -type f 2>/dev/null | wc -l) files, $(du -sh "$OUT/dump" 2>/dev/null | cut -f1)"

peer "f32 sdpa, target" 45 --out "$OUT/peer-torch-f32.json" --dtype f32 --precision highest --methods sdpa --workloads target --repeats 3 --warmup 1
profile target "$CAND" "$DIR/executables-main"
gate
finish
