#!/usr/bin/env bash
# One prepared measurement of the cuDNN fused attention forms on an NVIDIA GPU
# (issue 34), within 9.5 minutes (BUDGET_S, default 570 s) on an H100. Run from the repository root
# on the device machine, with .cache/gpu-carry made by
# scripts/gpu/prepare-carry.sh carried along; writes everything under $OUT
# (default ./gpu-out):
#
#   1. unpacks node and the bundle (dist/, the addon, production modules:
#      scripts/gpu/call-common.sh, which holds the steps both GPU scripts share);
#   2. prints the plugin's wheel version and the custom calls the candidate
#      configuration emits (bench:gpu --emit-only);
#   3. npm run bench:gpu's script with --plugin cuda and --peers none on the
#      candidate ($CAND: cuDNN with the prefill joined to the items' prefix
#      call), today's default cuDNN forms ($FUSED: two calls for the items,
#      one for the prefill) and, when $BASE is set, more configurations, all
#      with cross-request batching (the 8-concurrent PR row); every run
#      prints its resident memory after the load. A configuration that fails
#      to build or compile fails its own process only;
#   4. the candidate again, target packed and 8-concurrent PR only, once per
#      variant in $VARIANTS (label=platform facts as JSON;...: without the
#      CUDA plugin's default XLA options, PJRT_SCORE_PLATFORM_FACTS), then
#      once with XLA's dump of the optimized programs (in the archive, dump/);
#   5. the PyTorch peers: FlexAttention with the whole forward compiled on
#      the target workload, compiling beside steps 3-4 on other cores and
#      timed after them (its --gate); f32 with TF32 off (the parity
#      reference); FlexAttention's 8-per-call figure on the PR workload;
#   6. a kernel profile of one target pass of the candidate under Nsight
#      Compute, when at least 110 s are left (scripts/gpu/profile-pass.js,
#      scripts/gpu/kernel-table.py);
#   7. the accuracy gate for the pjrt-score configurations against true f32
#      (max |diff| <= 0.02, mean <= 0.01 over label probabilities), printed
#      and in gate.json.
set -uo pipefail
# shellcheck source=scripts/gpu/call-common.sh
. "$(dirname "$0")/call-common.sh"
CAND=${CAND:-bf16/bf16/cudnn_join/cudnn+cross-request}
FUSED=${FUSED:-bf16/bf16/cudnn/cudnn+cross-request}
BASE=${BASE:-}
VARIANTS=${VARIANTS:-no-xla-options={\"xlaOptions\":{\}\}}

say "custom calls the candidate emits"
node scripts/bench-gpu.js --plugin cuda --configs "$CAND" --emit-only 1 --dir "$DIR" 2>&1 | cut -c1-400

# FlexAttention with the whole forward compiled on the target workload: its
# compile (CPU-bound, minutes; it outran 240 s twice on an H200) runs beside
# pjrt-score's runs on other cores, and its timed runs wait for the gate file,
# written when pjrt-score's runs are done. Its warm-up (two passes) may meet a
# pjrt-score run on the device: the log has both clocks.
GATE=$WORK/flex-gate
rm -f "$GATE"
say "torch bf16 flexfull, target: compiling in the background on cores 6-15"
pin 6-15 timeout $(( BUDGET - 20 )) python3 scripts/bench/gpu/peer_torch.py --model "$DIR/model" --inputs "$DIR/inputs-full.json" \
  --out "$OUT/peer-torch-bf16.json" --dtype bf16 --precision default --methods flexfull --workloads target --repeats 3 \
  --gate "$GATE" > "$OUT/flexfull-target.txt" 2>&1 &
FLEX=$!

bench main --configs "$CAND,$FUSED${BASE:+,$BASE}" --breakdown 1
# Each bench run starts from an empty disk cache: keep the main run's executables for the kernel profile.
rm -rf "$DIR/executables-main" && cp -r "$DIR/executables" "$DIR/executables-main" 2>/dev/null
QUICK=(--configs "$CAND" --methods packed,8-concurrent --breakdown 1)
IFS=';' read -r -a variants <<<"$VARIANTS"
for v in "${variants[@]}"; do
  [ -n "$v" ] && PJRT_SCORE_PLATFORM_FACTS="${v#*=}" bench "${v%%=*}" "${QUICK[@]}"
done
XLA_FLAGS="--xla_dump_to=$OUT/dump --xla_dump_hlo_as_text" bench dump --configs "$CAND" --methods packed
touch "$GATE"
say "pjrt-score done; flexfull's timed runs may start"

# The other peers one by one: PyTorch f32 with TF32 off (the parity
# reference), then FlexAttention's 8-per-call figure on the PR workload.
say "waiting for flexfull (its timed runs have the device alone)"
while kill -0 $FLEX 2>/dev/null && [ "$(left)" -gt 200 ]; do sleep 1; done
kill -0 $FLEX 2>/dev/null && say "flexfull still running with $(left) s left: the other peers go beside it"
peer "f32 sdpa, target" 60 --out "$OUT/peer-torch-f32.json" --dtype f32 --precision highest --methods sdpa --workloads target --repeats 3 --warmup 1
peer "bf16 batch8full, pr" 120 --out "$OUT/peer-torch-bf16-pr.json" --dtype bf16 --precision default --methods batch8full --workloads pr --repeats 3
while kill -0 $FLEX 2>/dev/null && [ "$(left)" -gt 25 ]; do sleep 1; done
kill $FLEX 2>/dev/null && say "flexfull stopped: out of time"
wait $FLEX; say "torch flexfull exit $?"
grep -v "^ " "$OUT/flexfull-target.txt" | tail -15
for f in "$OUT"/peer-torch-*.json; do [ -e "$f" ] && python3 -c "import json,sys; [print('torch', r.get('workload'), r.get('method'), r.get('dtype', ''), {k: r[k] for k in r if k in ('items_per_s','p50_ms','p99_ms','warmup_s','error')}) for r in json.load(open(sys.argv[1]))]" "$f"; done

kill -0 $FLEX 2>/dev/null || profile target "$CAND" "$DIR/executables-main"
gate
finish
