#!/usr/bin/env bash
# The whole prepared GPU measurement in one run of at most 9 minutes (BUDGET_S,
# default 540 s): the host check, pjrt-score against its peers with a
# same-run ratio on both workloads, the accuracy gate, and the service over
# HTTP. Run from the repository root on the device machine, with
# .cache/gpu-carry made by scripts/lab/gpu/prepare-carry.sh carried along (and
# bench-deps.tar.gz in it from scripts/build/pack-modules.js, for the HTTP
# step's load generator); writes everything under $OUT (default ./gpu-out):
#
#   0. the AMX host check, first and alone, when scripts/lab/cpu/amx-host-check.sh
#      is in the tree (AMX_S, default 200 s; its files under amx/);
#   1. unpacks node and the bundle (scripts/lab/gpu/call-common.sh, which holds
#      the steps the GPU scripts share), prints the custom calls the
#      candidate emits (bench:gpu --emit-only);
#   2. npm run bench:gpu's pjrt-score half with --plugin cuda on $CAND (the
#      cuda defaults: cuDNN with the prefill joined, cross-request batching)
#      and $BASE when set: target packed and the PR workload's 8 callers
#      (BENCH_METHODS), at most BENCH_S (90 s); $VARIANTS and DUMP=1 add runs;
#   3. the service over HTTP: `pjrt-score serve --plugin cuda` (bf16
#      defaults, cross-request batching) under npm run bench:service --load
#      open: the PR workload as text at HTTP_RATES (120 req/s), then the
#      HTTP_SWEEP rates until one is not held (P99 <= 100 ms), at most HTTP_S
#      (60 s) and leaving 160 s for the peers;
#   4. the peers, one process at a time, each printing its progress as it
#      goes: PyTorch f32 with TF32 off (the gate's reference); then
#      FlexAttention with the whole forward compiled (PR 8 per call first,
#      then the target) in a slot of its own, alone on the GPU and the
#      cores (FLEX_SLOT_S, default 60 s: the target's whole-forward compile
#      took about 7 minutes beside other work on an H100, so its fallback is
#      the usual case); for each workload that slot left
#      without a figure, the fallbacks: FlexAttention with only the attention
#      compiled, and the JAX cuDNN peer. The log says which peer ran and why;
#   5. the same-run ratios (pjrt-score / best peer, per workload:
#      scripts/lab/gpu/same-run-ratios.py, ratios.json), the accuracy gate
#      against true f32 (gate.json) and the HTTP table again.
# Every step is bounded by its own limit and by the time left, so the run
# ends inside BUDGET_S; a step with no time left is skipped and says so.
set -uo pipefail
BUDGET_S=${BUDGET_S:-540}
DEFER_UNPACK=1
# shellcheck source=scripts/lab/gpu/call-common.sh
. "$(dirname "$0")/call-common.sh"
CAND=${CAND:-bf16/bf16/cudnn_join/cudnn+cross-request}
BASE=${BASE:-}
VARIANTS=${VARIANTS:-}
AMX_S=${AMX_S:-200}
FLEX_SLOT_S=${FLEX_SLOT_S:-60}
FALLBACK_S=${FALLBACK_S:-40}
HTTP_S=${HTTP_S:-60}
HTTP_RATES=${HTTP_RATES:-120}
HTTP_SWEEP=${HTTP_SWEEP:-240,480,720}
export BENCH_S=${BENCH_S:-90} BENCH_RESERVE_S=${BENCH_RESERVE_S:-120} PEER_RESERVE_S=${PEER_RESERVE_S:-15}

AMX=scripts/lab/cpu/amx-host-check.sh
if [ -e "$AMX" ]; then
  say "AMX host check first, alone ($AMX, budget $AMX_S s; its files in amx/)"
  BUDGET_S=$AMX_S OUT="$OUT/amx" timeout $(( AMX_S + 10 )) bash "$AMX"
  say "AMX host check exit $?"
else
  say "no $AMX in this tree: no AMX host check"
fi
unpack

say "custom calls the candidate emits"
timeout 30 node scripts/bench/gpu.js --plugin cuda --configs "$CAND" --emit-only 1 --dir "$DIR" 2>&1 | cut -c1-400

bench main --configs "$CAND${BASE:+,$BASE}" --methods "${BENCH_METHODS:-packed,8-concurrent}" --breakdown 1
IFS=';' read -r -a variants <<<"$VARIANTS"
for v in "${variants[@]}"; do
  [ -n "$v" ] && PJRT_SCORE_PLATFORM_FACTS="${v#*=}" bench "${v%%=*}" --configs "$CAND" --methods packed,8-concurrent
done
[ "${DUMP:-0}" = 1 ] && XLA_FLAGS="--xla_dump_to=$OUT/dump --xla_dump_hlo_as_text" bench dump --configs "$CAND" --methods packed

# The service over HTTP: the PR workload as text, open loop (scripts/bench/lib/open-loop.js).
# What the peers need after it: the f32 reference, a slot, two fallbacks, the ratios and the gate.
cap=$(( $(left) - 160 )); [ "$cap" -lt "$HTTP_S" ] || cap=$HTTP_S
if [ "$cap" -gt 30 ]; then
  say "HTTP: pjrt-score serve --plugin cuda under autocannon, $HTTP_RATES req/s then $HTTP_SWEEP (at most $cap s)"
  timeout -k 10 "$cap" node scripts/bench/service.js --load open --serve-args "--plugin cuda --model $DIR/model --batching cross-request" \
    --rates "$HTTP_RATES" --sweep "$HTTP_SWEEP" --duration "${HTTP_DURATION_S:-3}" --warm 2 --out "$OUT/service-open.json" > "$OUT/service-open.txt" 2>&1
  say "HTTP exit $?$( [ -e "$OUT/service-open.json" ] || echo ': no table')"
  grep -v '^warmup\|^{' "$OUT/service-open.txt" | tail -20
else
  say "no time left for the HTTP step ($(left) s left)"
fi

# has_row FILE WORKLOAD: FILE has a timed bf16 row of WORKLOAD; else prints why not.
has_row() {
  python3 - "$1" "$2" <<'PY'
import json, os, sys
path, workload = sys.argv[1], sys.argv[2]
if not os.path.exists(path):
    print("no results file"); sys.exit(1)
rows = [r for r in json.load(open(path)) if r.get("workload") == workload]
if any(isinstance(r.get("items_per_s"), (int, float)) for r in rows):
    sys.exit(0)
errors = [r["error"].splitlines()[0][:200] for r in rows if r.get("error")]
print("error: " + errors[0] if errors else "no timed row"); sys.exit(1)
PY
}

# why RC FILE WORKLOAD: why a peer left no figure for WORKLOAD.
why() {
  local rc=$1 detail; detail=$(has_row "$2" "$3")
  case $rc in
    124) echo "did not finish in its slot: stopped at its bound (exit 124; $detail)" ;;
    125) echo "not started: no time left" ;;
    *) echo "exit $rc; $detail" ;;
  esac
}

peer "f32 sdpa, target (the gate's reference)" 35 --out "$OUT/peer-torch-f32.json" --dtype f32 --precision highest --methods sdpa --workloads target --repeats 3 --warmup 1

# FlexAttention with the whole forward compiled: its own slot, alone. The PR workload first (it has
# compiled in time before); its row is written before the target's compile starts.
slot=$(( $(left) - PEER_RESERVE_S - 2 * FALLBACK_S )); [ "$slot" -lt "$FLEX_SLOT_S" ] || slot=$FLEX_SLOT_S
say "FlexAttention, whole forward compiled: a slot of $slot s alone on the GPU and the cores (PR 8 per call, then target)"
if [ "$slot" -ge "$(( FLEX_SLOT_S < 20 ? FLEX_SLOT_S : 20 ))" ]; then
  peer "bf16 batch8full pr, flexfull target (own slot)" "$slot" --out "$OUT/peer-torch-bf16.json" --dtype bf16 --precision default \
    --methods batch8full,flexfull --workloads pr,target --only pr:batch8full,target:flexfull --repeats 3
  FLEX_RC=$?
else
  FLEX_RC=125
fi
torch_pairs=() jax_pairs=() fallback_workloads=()
for w in pr target; do
  if has_row "$OUT/peer-torch-bf16.json" "$w" >/dev/null; then
    say "peer for $w: FlexAttention, whole forward compiled (its figure came within its slot)"
  else
    say "peer for $w: FlexAttention's whole-forward run $(why $FLEX_RC "$OUT/peer-torch-bf16.json" "$w"): falling back to FlexAttention with only the attention compiled, and to the JAX cuDNN peer"
    fallback_workloads+=("$w")
    if [ "$w" = pr ]; then torch_pairs+=(pr:batch8); jax_pairs+=(pr:batch8); else torch_pairs+=(target:flex); jax_pairs+=(target:packed); fi
  fi
done
if [ ${#fallback_workloads[@]} -gt 0 ]; then
  ws=$(IFS=,; echo "${fallback_workloads[*]}") tp=$(IFS=,; echo "${torch_pairs[*]}") jp=$(IFS=,; echo "${jax_pairs[*]}")
  PEER_RESERVE_S=$(( PEER_RESERVE_S + FALLBACK_S )) peer "bf16 $tp, attention compiled (fallback)" "$FALLBACK_S" \
    --out "$OUT/peer-torch-bf16-fallback.json" --dtype bf16 --precision default --methods flex,batch8 --workloads "$ws" --only "$tp" --repeats 3
  rc=$?; for w in "${fallback_workloads[@]}"; do has_row "$OUT/peer-torch-bf16-fallback.json" "$w" >/dev/null || say "fallback FlexAttention for $w: no figure ($(why $rc "$OUT/peer-torch-bf16-fallback.json" "$w"))"; done
  jaxpeer "bf16 cuDNN $jp (fallback)" "$FALLBACK_S" --out "$OUT/peer-jax-bf16.json" --dtype bf16 --precision default \
    --attention auto --methods packed,batch8 --workloads "$ws" --only "$jp" --repeats 3
  rc=$?; for w in "${fallback_workloads[@]}"; do has_row "$OUT/peer-jax-bf16.json" "$w" >/dev/null || say "JAX cuDNN peer for $w: no figure ($(why $rc "$OUT/peer-jax-bf16.json" "$w"))"; done
fi
for f in "$OUT"/peer-*.json; do [ -e "$f" ] && python3 -c "import json,sys; [print(r.get('peer'), r.get('workload'), r.get('method'), r.get('dtype', ''), {k: r[k] for k in r if k in ('items_per_s','p50_ms','p99_ms','warmup_s','attention','error')}) for r in json.load(open(sys.argv[1]))]" "$f"; done

say "same-run ratios"
python3 scripts/lab/gpu/same-run-ratios.py "$OUT" --label main
gate
[ -e "$OUT/service-open.txt" ] && { say "the service over HTTP (again)"; grep -E '^(machine|load|held|step|rate|sweep|highest)' "$OUT/service-open.txt"; }
finish
