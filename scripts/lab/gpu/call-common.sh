# Sourced by the prepared GPU measurements (scripts/lab/gpu/h100-run.sh,
# scripts/lab/gpu/h100-defaults-run.sh): the clock and budget, the log, node and
# the bundle unpacked from .cache/gpu-carry (scripts/lab/gpu/prepare-carry.sh),
# and the steps they share. Run from the repository root on the device
# machine; everything goes under $OUT (default ./gpu-out). With
# DEFER_UNPACK=1 the caller runs `unpack` itself (h100-run.sh runs the host
# check first). When the carry has bench-deps.tar.gz
# (scripts/build/pack-modules.js: the HTTP step's load generator), it goes
# on NODE_PATH.
START=$(date +%s)
BUDGET=${BUDGET_S:-570}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "== [$(($(date +%s) - START)) s] $*"; }
# pin CORES command...: the command on those cores (taskset), or as is where they cannot be set.
pin() { local cores=$1; shift; if taskset -c "$cores" true 2>/dev/null; then taskset -c "$cores" "$@"; else "$@"; fi; }
CARRY=${CARRY:-.cache/gpu-carry}
WORK=${WORK:-/tmp/pjrt-score-gpu}
DIR=$WORK/bench

# Python's output unbuffered everywhere: a process killed by its time limit leaves its progress in the log.
export PYTHONUNBUFFERED=1

unpack() {
  say "unpack node and the bundle"
  mkdir -p "$WORK"
  if command -v xz >/dev/null; then xz -dc "$CARRY/node.xz" > "$WORK/node"; else python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$CARRY/node.xz" "$WORK/node"; fi
  chmod +x "$WORK/node"
  export PATH="$WORK:$PATH"
  tar xzf "$CARRY/pjrt-score.tar.gz" -C "$WORK"
  for d in dist build node_modules; do rm -rf "$d"; ln -s "$WORK/pjrt-score/$d" "$d"; done
  if [ -e "$CARRY/bench-deps.tar.gz" ]; then
    mkdir -p "$WORK/bench-deps" && tar xzf "$CARRY/bench-deps.tar.gz" -C "$WORK/bench-deps"
    export NODE_PATH="$WORK/bench-deps/node_modules${NODE_PATH:+:$NODE_PATH}"
  fi
  node --version; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
  python3 -c "import jax_plugins.xla_cuda13.version as v, jax, torch; print('jax-cuda13-pjrt', v._version, 'jax', jax.__version__, 'torch', torch.__version__)" || true
}
[ "${DEFER_UNPACK:-0}" = 1 ] || unpack

# bench LABEL ARGS...: bench:gpu's pjrt-score half (no peers, 3 repeats) with
# the caller's environment, on cores 0-5, at most BENCH_S (default 150) s, skipped with
# BENCH_RESERVE_S (default 300) or less left. Result files come back with
# LABEL in their name ('+' becomes '_').
bench() {
  local label=$1; shift
  [ "$(left)" -gt "${BENCH_RESERVE_S:-300}" ] || { say "no time left for $label"; return; }
  say "bench:gpu $label (budget $(left) s, $(date +%s))"
  pin 0-5 timeout "${BENCH_S:-150}" node scripts/bench/gpu.js --plugin cuda --restart 0 --peers none --repeats 3 --dir "$DIR" \
    --out "$OUT/results-$label.json" "$@"
  say "bench:gpu $label exit $? ($(date +%s))"
  for f in "$DIR"/pjrt-*.json; do [ -e "$f" ] && mv "$f" "$OUT/$(basename "$f" .json | tr '+' '_')-$label.json"; done
}

# peer NAME SECONDS ARGS...: one PyTorch peer run, bounded by SECONDS and the time left (less
# PEER_RESERVE_S, default 10); exit 124 when the bound stopped it. jaxpeer: the same for the JAX peer.
peer() { pypeer torch "$@"; }
jaxpeer() { pypeer jax "$@"; }
pypeer() { # torch|jax, name, seconds, args...
  local kind=$1 name=$2 cap=$3; shift 3
  local room=$(( $(left) - ${PEER_RESERVE_S:-10} ))
  [ "$room" -gt 20 ] || { say "no time left for $kind $name"; return 125; }
  [ "$cap" -lt "$room" ] || cap=$room
  say "$kind $name (at most $cap s)"
  timeout "$cap" python3 -u "scripts/lab/gpu/peer_$kind.py" --model "$DIR/model" --inputs "$DIR/inputs-full.json" "$@"
  local rc=$?
  say "$kind $name exit $rc$([ $rc = 124 ] && echo ": stopped at its bound of $cap s")"
  return $rc
}

# profile LABEL CONFIG DISK_CACHE [profile-pass.js args]: a kernel profile of
# one pass of CONFIG under Nsight Compute (at most 90 s), from DISK_CACHE's
# executables, summed by kernel and kind.
profile() {
  local label=$1 config=$2 cache=$3; shift 3
  local ncu; ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -z "$ncu" ] || [ "$(left)" -le "${PROFILE_RESERVE_S:-110}" ]; then say "no kernel profile $label (ncu: ${ncu:-not found}, $(left) s left)"; return; fi
  say "kernel profile $label: one pass of $config ($ncu, at most 90 s)"
  local P W PA CA
  IFS=/ read -r P W PA CA <<<"${config%%+*}"
  timeout 90 "$ncu" --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --log-file "$OUT/ncu-$label.csv" node scripts/lab/gpu/profile-pass.js --model "$DIR/model" --inputs "$DIR/inputs-full.json" \
    --plugin cuda --precision "$P" --weights "$W" ${PA:+--prefix-attention "$PA"} ${CA:+--causal-attention "$CA"} \
    --disk-cache "$cache" "$@" > "$OUT/ncu-$label-stdout.txt" 2>&1
  say "kernel profile $label exit $? ($(wc -l < "$OUT/ncu-$label.csv" 2>/dev/null || echo 0) lines)"
  python3 scripts/lab/gpu/kernel-table.py "$OUT/ncu-$label.csv" --top 30 | tee "$OUT/kernel-table-$label.md"
}

# gate: every pjrt-score result under $OUT against PyTorch f32 (peer-torch-f32.json), into gate.json.
gate() {
  say "gate: every pjrt-score run against true f32"
python3 - "$OUT" <<'PY'
import glob, json, math, os, sys
out = sys.argv[1]
def soft(lp):
    m = max(lp); e = [math.exp(x - m) for x in lp]; s = sum(e); return [x / s for x in e]
p = os.path.join(out, 'peer-torch-f32.json')
ref = next((r for r in (json.load(open(p)) if os.path.exists(p) else []) if r.get('workload') == 'target' and not r.get('error') and r.get('logprobs')), None)
if ref is None:
    print('no PyTorch f32 reference: gate not checked'); sys.exit(0)
want = [[soft(i) for i in q] for q in ref['logprobs']]
gate = {}
for f in sorted(glob.glob(os.path.join(out, 'pjrt-*.json'))):
    r = json.load(open(f)); name = os.path.basename(f)[5:-5]
    for row in r['rows']:
        if row.get('workload') != 'target' or not row.get('scores'): continue
        got = row['scores']; ds = []
        for q in range(min(len(got), len(want))):
            for i in range(min(len(got[q]), len(want[q]))):
                ds += [abs(a - b) for a, b in zip(got[q][i], want[q][i])]
        mx, mean = max(ds), sum(ds) / len(ds)
        ok = mx <= 0.02 and mean <= 0.01
        gate[f'{name} {row["method"]}'] = {'max': mx, 'mean': mean, 'n': len(ds), 'pass': ok}
        print(f'{name} target {row["method"]}: max {mx:.2e} mean {mean:.2e} over {len(ds)} values against PyTorch f32 sdpa (TF32 off): {"PASS" if ok else "FAIL"} (gate 0.02 / 0.01)')
    print(f'{name}: peak RSS {r["peak_rss"]/1e9:.2f} GB, {r["load_peak_rss"]/1e9:.2f} GB after load, client-only {r["client_peak_rss"]/1e9:.2f} GB')
json.dump(gate, open(os.path.join(out, 'gate.json'), 'w'), indent=1)
PY

}

# finish: at most 8 files come back from the device: the log, the gate, and one archive of the rest.
finish() {
  (cd "$OUT" && ls | grep -v -x -e log.txt -e gate.json > .rest && tar czf all.tar.gz -T .rest && xargs rm -rf < .rest && rm .rest)
  say "done"
}
