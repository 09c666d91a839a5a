#!/usr/bin/env bash
# The CPU kernels' check on a host with AMX (the GPU machines' host CPU, an
# Intel Xeon, family 6 model 207), in one run of at most BUDGET_S seconds
# (default 230), from the repository root, with .cache/gpu-carry made by
# scripts/lab/gpu/prepare-carry.sh carried along; prints everything and keeps it
# under $OUT (default ./cpu-out). Runs on any x86-64 Linux host (then it
# checks that host's paths):
#
#   1. the CPU: model, family, model number, cores, the flags the kernels use;
#   2. the kernel paths (attentionKernelPaths(64)) and the probe's trials in
#      a child process (docs/design.md, 'Kernel paths are tried in a child
#      first'): `bf16: 'amx'` where the CPU has AMX;
#   3. every CPU kernel test file (f32 and bf16, every path the host has, amx
#      included, against the float64 reference), the bf16 tiles' self-check,
#      and the forced-fault probe test, on a random
#      model of SmolLM2-135M's shape (the real one does not travel);
#   4. one PR-shaped request's label probabilities on each bf16 path against
#      true f32 (highest): within the accuracy gate;
#   5. the figures: XLA's f32 and bf16 dot roofs, then the target workload in
#      bf16, highest and auto, on 2 pinned cores and on all cores, each run's
#      share of the roof of its precision (npm run bench -- --shapes-only).
#
#   BUDGET_S=230 OUT=/tmp/out bash scripts/lab/cpu/amx-host-check.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
START=$(date +%s)
BUDGET=${BUDGET_S:-230}
OUT=${OUT:-$PWD/cpu-out}
CARRY=${CARRY:-.cache/gpu-carry}
WORK=${CPU_WORK:-/tmp/pjrt-score-cpu}
mkdir -p "$OUT" "$WORK"
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "== amx-host-check [$(($(date +%s) - START)) s] $*" | tee -a "$OUT/cpu-log.txt"; }
run() { "$@" 2>&1 | tee -a "$OUT/cpu-log.txt"; return "${PIPESTATUS[0]}"; }
unxz_to() { if command -v xz >/dev/null; then xz -dc "$1" > "$2"; else python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; fi; }

say "unpack node, the bundle, the test modules and the CPU plugin"
if ! command -v node >/dev/null || [ -n "${CPU_CHECK_UNPACK:-}" ]; then
  unxz_to "$CARRY/node.xz" "$WORK/node" && chmod +x "$WORK/node"
  export PATH="$WORK:$PATH"
fi
if [ -f "$CARRY/pjrt-score.tar.gz" ] && [ ! -e dist/index.js -o -n "${CPU_CHECK_UNPACK:-}" ]; then
  tar xzf "$CARRY/pjrt-score.tar.gz" -C "$WORK"
  for d in dist build node_modules prebuilds; do [ -e "$WORK/pjrt-score/$d" ] && { rm -rf "$d"; ln -s "$WORK/pjrt-score/$d" "$d"; }; done
  tar xzf "$CARRY/test-modules.tar.gz" -C "$WORK/pjrt-score"
fi
if [ -f "$CARRY/xla_cpu_pjrt.so.xz" ]; then
  unxz_to "$CARRY/xla_cpu_pjrt.so.xz" "$WORK/xla_cpu_pjrt.so"
  export PJRT_PLUGIN_PATH="$WORK/xla_cpu_pjrt.so"
fi
export PJRT_SCORE_CACHE="$WORK/cache"
mkdir -p "$PJRT_SCORE_CACHE"

say "1. the CPU"
run lscpu | grep -E '^(Model name|CPU family|Model|Stepping|CPU\(s\)|Thread|Core|Socket|Hypervisor)' | tee -a "$OUT/cpu-log.txt"
echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'avx2|fma|avx512f|avx512bw|avx512vl|avx512_bf16|amx_tile|amx_bf16|amx_int8' | tr '\n' ' ')" | tee -a "$OUT/cpu-log.txt"
echo "kernel: $(uname -r); node $(node --version)" | tee -a "$OUT/cpu-log.txt"

say "2. the kernel paths and the probe's trials"
run node -e "
const r = require('./dist/runtime');
console.log('attentionKernelPaths(64):', JSON.stringify(r.attentionKernelPaths(64)));
const v = require('./dist/runtime/binding').kernelProbe();
for (const t of v.trials) console.log('trial', t.isa, t.ok ? 'ok' : 'FAILED', '-', t.detail);
console.log('probe:', v.source, 'tried', v.tried, v.note || '');"

say "random model of SmolLM2-135M's shape"
run node -e "const r = require('./scripts/bench/lib/random-model.js'); const m = r.writeRandomModel('$WORK/model', r.PRESETS.smollm2_135m); console.log('random model:', m.params, 'parameters,', m.fileBytes, 'bytes')"
export PJRT_SCORE_MODEL="$WORK/model"

say "3. the CPU kernel test files"
tests=(test/attention.test.js test/attention-bf16-self-check.test.js test/attention-bf16-ffi.test.js test/kernel-probe.test.js)
tests+=(test/attention-ffi.test.js test/attention-causal-ffi.test.js)
run timeout $(( $(left) * 45 / 100 )) node test/run.js "${tests[@]}" > "$OUT/cpu-tests.txt" 2>&1
echo "kernel tests exit $?" | tee -a "$OUT/cpu-log.txt"
grep -E '^# (ok|FAIL) |^[0-9]+ passed' "$OUT/cpu-tests.txt" | tee -a "$OUT/cpu-log.txt"
grep -E '^not ok' "$OUT/cpu-tests.txt" | head -20 | tee -a "$OUT/cpu-log.txt"

say "4. label probabilities on each bf16 path against highest (true f32)"
run timeout 60 node scripts/lab/cpu/paths-agree.js

say "5. roofs and the target workload ($(left) s left)"
for cores in "0-1" "all"; do
  [ "$(left)" -gt 40 ] || { say "no time left for the figures on $cores cores"; break; }
  prefix=()
  [ "$cores" != all ] && taskset -c "$cores" true 2>/dev/null && prefix=(taskset -c "$cores")
  say "cores $cores${prefix[*]:+ (${prefix[*]})}"
  run timeout $(( $(left) - 15 )) ${prefix[@]+"${prefix[@]}"} node scripts/bench/plans.js --shapes-only --shapes target --shapes-precision auto,bf16,highest --skip-llama-cpp ${SHAPES_ITEMS:+--shapes-items $SHAPES_ITEMS}
done
say "done"
