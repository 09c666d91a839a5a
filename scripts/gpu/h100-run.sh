#!/usr/bin/env bash
# One prepared measurement of the cuDNN fused attention form on an NVIDIA GPU
# (issue 34), within 8 minutes on an H100. Run from the repository root on the
# device machine, with .cache/gpu-carry made by scripts/gpu/prepare-carry.sh
# carried along; writes everything under $OUT (default ./gpu-out):
#
#   1. unpacks node and the bundle (dist/, the addon, production modules);
#   2. prints the plugin's wheel version and the custom calls the fused
#      configuration emits (bench:gpu --emit-only);
#   3. npm run bench:gpu's script with --plugin cuda, --configs narrowed to the
#      fused configuration and today's best (bf16/bf16), both with
#      cross-request batching (the 8-concurrent PR row), --peers torch
#      (FlexAttention with the whole forward compiled, and PyTorch f32 with
#      TF32 off as the parity reference). A fused configuration that fails to
#      build or compile fails its own process only: its error is printed and
#      the baseline still runs;
#   4. the accuracy gate for the fused form against true f32 (max |diff| <= 0.02,
#      mean <= 0.01 over label probabilities), printed and in gate.json;
#   5. the host memory probe (scripts/gpu/memory-probe.js) with the client's
#      defaults and with unstaged host-to-device transfers;
#   6. a kernel profile of one target pass of the fused configuration under
#      Nsight Compute (one metric, gpu__time_duration; at most 100 s; skipped
#      where ncu is missing), summed by kernel and kind
#      (scripts/gpu/profile-pass.js, scripts/gpu/kernel-table.py);
#   7. the JAX peer with the time that is left.
set -uo pipefail
START=$(date +%s)
BUDGET=${BUDGET_S:-470}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "== [$(($(date +%s) - START)) s] $*"; }
CARRY=.cache/gpu-carry
WORK=/tmp/pjrt-score-gpu
FUSED=${FUSED:-bf16/bf16/cudnn/cudnn+cross-request}
BASE=${BASE:-bf16/bf16+cross-request}
export FUSED BASE

say "unpack node and the bundle"
mkdir -p "$WORK"
if command -v xz >/dev/null; then xz -dc "$CARRY/node.xz" > "$WORK/node"; else python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$CARRY/node.xz" "$WORK/node"; fi
chmod +x "$WORK/node"
export PATH="$WORK:$PATH"
tar xzf "$CARRY/pjrt-score.tar.gz" -C "$WORK"
for d in dist build node_modules; do rm -rf "$d"; ln -s "$WORK/pjrt-score/$d" "$d"; done
node --version; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -c "import jax_plugins.xla_cuda13.version as v, jax, torch; print('jax-cuda13-pjrt', v._version, 'jax', jax.__version__, 'torch', torch.__version__)" || true

DIR=$WORK/bench
say "custom calls the fused configuration emits"
node scripts/bench-gpu.js --plugin cuda --configs "$FUSED" --emit-only 1 --dir "$DIR" 2>&1 | cut -c1-600

say "bench:gpu: $FUSED and $BASE (budget $(left) s)"
timeout $(( $(left) - 40 )) node scripts/bench-gpu.js --plugin cuda --configs "$FUSED,$BASE" --restart 0 \
  --peers none --repeats 3 --breakdown 1 --dir "$DIR" --out "$OUT/results.json"
say "bench:gpu exit $?"
# Names with '+' do not come back from the device: '+' becomes '_'.
for f in "$DIR"/pjrt-*.json; do [ -e "$f" ] && cp "$f" "$OUT/$(basename "$f" | tr '+' '_')"; done

# Host memory step by step (client, load, first request), with the client's
# defaults and with host-to-device transfers not staged through pinned
# buffers: one process each, at most 40 s each.
for opts in '{}' '{"should_stage_host_to_device_transfers":false}'; do
  [ "$(left)" -gt 200 ] || break
  say "memory probe, client options $opts"
  timeout 40 node scripts/gpu/memory-probe.js --model "$DIR/model" --inputs "$DIR/inputs-full.json" --plugin cuda \
    --client-options "$opts" | tee -a "$OUT/memory-probe.jsonl" | cut -c1-400
done

# The peers one by one, cheapest first, each bounded, so a slow compile costs
# only its own row: PyTorch f32 with TF32 off (the parity reference), then
# FlexAttention with the whole forward compiled on the target workload, then
# its 8-per-batch figure on the PR workload.
peer() { # name, seconds, args...
  local name=$1 cap=$2; shift 2
  [ "$(left)" -gt 30 ] || { say "no time left for $name"; return; }
  [ "$cap" -lt "$(( $(left) - 10 ))" ] || cap=$(( $(left) - 10 ))
  say "torch $name (at most $cap s)"
  timeout "$cap" python3 scripts/bench/gpu/peer_torch.py --model "$DIR/model" --inputs "$DIR/inputs-full.json" "$@"
  say "torch $name exit $?"
}
peer "f32 sdpa, target" 120 --out "$OUT/peer-torch-f32.json" --dtype f32 --precision highest --methods sdpa --workloads target --repeats 3
peer "bf16 flexfull, target" 240 --out "$OUT/peer-torch-bf16.json" --dtype bf16 --precision default --methods flexfull --workloads target --repeats 3
peer "bf16 batch8full, pr" 200 --out "$OUT/peer-torch-bf16-pr.json" --dtype bf16 --precision default --methods batch8full --workloads pr --repeats 3
for f in "$OUT"/peer-torch-*.json; do [ -e "$f" ] && python3 -c "import json,sys; [print('torch', r.get('workload'), r.get('method'), r.get('dtype', ''), {k: r[k] for k in r if k in ('items_per_s','p50_ms','p99_ms','error')}) for r in json.load(open(sys.argv[1]))]" "$f"; done

say "gate: the fused form against true f32"
python3 - "$OUT" "$FUSED" <<'PY'
import glob, json, math, os, sys
out, fused = sys.argv[1], sys.argv[2]
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) else None
def soft(lp):
    m = max(lp); e = [math.exp(x - m) for x in lp]; s = sum(e); return [x / s for x in e]
ref_rows = load('peer-torch-f32.json') or []
ref = next((r for r in ref_rows if r.get('workload') == 'target' and not r.get('error') and r.get('logprobs')), None)
refname = 'PyTorch f32 sdpa (TF32 off)'
if ref is None:
    print('no PyTorch f32 reference: gate not checked'); sys.exit(0)
want = [[soft(i) for i in q] for q in ref['logprobs']]
gate = {}
for name in (fused, os.environ.get('BASE', 'bf16/bf16+cross-request')):
    r = load('pjrt-' + name.replace('/', '-').replace('+', '_') + '.json')
    if not r:
        print(f'{name}: no result (failed)'); gate[name] = None; continue
    for row in r['rows']:
        if row.get('workload') != 'target' or not row.get('scores'): continue
        got = row['scores']; ds = []
        for q in range(min(len(got), len(want))):
            for i in range(min(len(got[q]), len(want[q]))):
                ds += [abs(a - b) for a, b in zip(got[q][i], want[q][i])]
        mx, mean = max(ds), sum(ds) / len(ds)
        ok = mx <= 0.02 and mean <= 0.01
        gate[f'{name} {row["method"]}'] = {'max': mx, 'mean': mean, 'n': len(ds), 'pass': ok}
        print(f'{name} target {row["method"]}: max {mx:.2e} mean {mean:.2e} over {len(ds)} values against {refname}: {"PASS" if ok else "FAIL"} (gate 0.02 / 0.01)')
    print(f'{name}: peak RSS {r["peak_rss"]/1e9:.2f} GB, {r["load_peak_rss"]/1e9:.2f} GB after load, client-only {r["client_peak_rss"]/1e9:.2f} GB')
json.dump(gate, open(os.path.join(out, 'gate.json'), 'w'), indent=1)
PY

NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ] && [ "$(left)" -gt 130 ]; then
  say "kernel profile of one target pass of $FUSED ($NCU, at most 100 s)"
  IFS=/ read -r P W PA CA <<<"${FUSED%%+*}"
  timeout 100 "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --log-file "$OUT/ncu-target.csv" node scripts/gpu/profile-pass.js --model "$DIR/model" --inputs "$DIR/inputs-full.json" \
    --plugin cuda --precision "$P" --weights "$W" ${PA:+--prefix-attention "$PA"} ${CA:+--causal-attention "$CA"} \
    --disk-cache "$DIR/executables" > "$OUT/ncu-stdout.txt" 2>&1
  say "kernel profile exit $? ($(wc -l < "$OUT/ncu-target.csv" 2>/dev/null || echo 0) lines)"
  tail -5 "$OUT/ncu-stdout.txt"
  python3 scripts/gpu/kernel-table.py "$OUT/ncu-target.csv" --top 30 | tee "$OUT/kernel-table.md"
else
  say "no kernel profile (ncu: ${NCU:-not found}, $(left) s left)"
fi

if [ "$(left)" -gt 60 ]; then
  say "JAX peer with the $(left) s left"
  timeout $(( $(left) - 5 )) python3 scripts/bench/gpu/peer_jax.py --model "$DIR/model" --inputs "$DIR/inputs-full.json" \
    --out "$OUT/peer-jax-bf16.json" --dtype bf16 --precision default --repeats 3
  say "JAX peer exit $?"
else
  say "no time left for the JAX peer"
fi
say "done"
