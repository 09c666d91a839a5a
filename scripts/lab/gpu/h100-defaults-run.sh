#!/usr/bin/env bash
# The second prepared GPU measurement, after scripts/lab/gpu/h100-run.sh
# chose the forms: the CUDA defaults as a user gets them, within 5 minutes
# (BUDGET_S, default 290 s). Run from the repository root on the device
# machine, with .cache/gpu-carry (scripts/lab/gpu/prepare-carry.sh) carried along;
# everything goes under $OUT (default ./gpu-out):
#
#   1. unpacks node and the bundle (scripts/lab/gpu/call-common.sh);
#   2. bench:gpu on $DEFAULTS (precision and weights bf16, every other choice
#      the platform's: cuDNN's forms, the growing device allocator, the
#      1.25x item-count ladder), all methods;
#   3. the bridge to the first call: the same forms with that call's client
#      options and count ladder ($BRIDGE: preallocated allocator, unstaged
#      uploads, 1.5x counts), so the two calls' figures can be compared;
#   4. the defaults with cudaMallocAsync's pool instead of the BFC allocator;
#   5. PyTorch f32 with TF32 off (the parity reference) and FlexAttention's
#      8-per-call figure on the PR workload, in this call;
#   6. a kernel profile of one cross-request pass of the PR workload on the
#      defaults; the accuracy gate.
set -uo pipefail
BUDGET_S=${BUDGET_S:-290}
# shellcheck source=scripts/lab/gpu/call-common.sh
. "$(dirname "$0")/call-common.sh"
DEFAULTS=${DEFAULTS:-bf16/bf16+cross-request}
BRIDGE=${BRIDGE:-bf16/bf16/cudnn/cudnn+cross-request}
export BENCH_RESERVE_S=150 PROFILE_RESERVE_S=50

bench defaults --configs "$DEFAULTS" --breakdown 1
rm -rf "$DIR/executables-defaults" && cp -r "$DIR/executables" "$DIR/executables-defaults" 2>/dev/null
QUICK=(--methods packed,8-concurrent --breakdown 1)
PJRT_SCORE_PLATFORM_FACTS='{"countSteps":[1.5]}' bench bridge --configs "$BRIDGE" "${QUICK[@]}" \
  --options '{"clientOptions":{"preallocate":true,"should_stage_host_to_device_transfers":false}}'
bench cuda-async --configs "$DEFAULTS" "${QUICK[@]}" --options '{"clientOptions":{"allocator":"cuda_async"}}'

peer "f32 sdpa, target" 45 --out "$OUT/peer-torch-f32.json" --dtype f32 --precision highest --methods sdpa --workloads target --repeats 3 --warmup 1
peer "bf16 batch8full, pr" 100 --out "$OUT/peer-torch-bf16-pr.json" --dtype bf16 --precision default --methods batch8full --workloads pr --repeats 3
for f in "$OUT"/peer-torch-*.json; do [ -e "$f" ] && python3 -c "import json,sys; [print('torch', r.get('workload'), r.get('method'), r.get('dtype', ''), {k: r[k] for k in r if k in ('items_per_s','p50_ms','p99_ms','warmup_s','error')}) for r in json.load(open(sys.argv[1]))]" "$f"; done

profile pr "$DEFAULTS" "$DIR/executables-defaults" --workload pr
gate
finish
