'use strict';
// The prepared GPU measurements (scripts/gpu/h100-run.sh, h100-defaults-run.sh, h100-probe-run.sh) run once per lent
// GPU call, so a slip in their shell logic costs the call. Here they run on this machine against
// stand-ins for node, python3 and nvidia-smi that record their arguments and write results: each
// script must run its steps in order, keep the background FlexAttention run behind its gate, return
// exactly the three files the device sends back, and its accuracy gate must pass scores equal to the
// reference and fail scores 0.05 off (checked against the gate's rule: max <= 0.02, mean <= 0.01).
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');
/** The real python3 (the stub in front of it on PATH hands everything but the peers to it). */
const PYTHON = spawnSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).stdout.trim();

/** A fake machine: stub commands, a carry with a stub node inside, a work tree holding the scripts. */
function fakeMachine(scoreOffset) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-gpu-scripts-'));
  const stub = path.join(dir, 'stub');
  const carry = path.join(dir, 'carry');
  const tree = path.join(dir, 'tree');
  for (const d of [stub, carry, path.join(tree, 'scripts', 'gpu'), path.join(dir, 'pkg', 'pjrt-score', 'dist')]) fs.mkdirSync(d, { recursive: true });
  for (const f of fs.readdirSync(path.join(root, 'scripts', 'gpu')).filter((f) => f.endsWith('.sh'))) {
    fs.copyFileSync(path.join(root, 'scripts', 'gpu', f), path.join(tree, 'scripts', 'gpu', f));
  }
  // The stub node: bench-gpu.js writes one pjrt-score result (label probabilities 0.5 + offset) into --dir.
  const node = `#!/bin/bash
echo "[node $*] [XLA_FLAGS=\${XLA_FLAGS:-}] [FACTS=\${PJRT_SCORE_PLATFORM_FACTS:-}]" >> "${dir}/calls.txt"
if [[ "$*" == *--version* ]]; then echo v20; exit 0; fi
if [[ "$*" == *bench-gpu.js* && "$*" != *--emit-only* ]]; then
  d=""; prev=""; for x in "$@"; do [ "$prev" = "--dir" ] && d=$x; prev=$x; done
  mkdir -p "$d/model"; touch "$d/inputs-full.json"; mkdir -p "$d/executables"
  p=$(python3 -c "print(0.5 + ${scoreOffset})"); q=$(python3 -c "print(0.5 - ${scoreOffset})")
  echo "{\\"rows\\":[{\\"workload\\":\\"target\\",\\"method\\":\\"packed\\",\\"scores\\":[[[$p,$q]]]}],\\"peak_rss\\":1e9,\\"load_peak_rss\\":1e9,\\"client_peak_rss\\":3e8}" > "$d/pjrt-bf16-bf16_cross-request.json"
fi
exit 0
`;
  fs.writeFileSync(path.join(dir, 'node'), node, { mode: 0o755 });
  spawnSync('sh', ['-c', `xz -c "${path.join(dir, 'node')}" > "${path.join(carry, 'node.xz')}"`]);
  spawnSync('tar', ['czf', path.join(carry, 'pjrt-score.tar.gz'), '-C', path.join(dir, 'pkg'), 'pjrt-score']);
  // The stub python3: peer_torch.py writes a reference of log-probabilities log(0.5) for both labels,
  // waiting for --gate first when given one; anything else is the real python3.
  const python = `#!/bin/bash
echo "[python3 $*]" >> "${dir}/calls.txt"
if [[ "$*" == *peer_torch.py* ]]; then
  g=""; o=""; prev=""; for x in "$@"; do [ "$prev" = "--gate" ] && g=$x; [ "$prev" = "--out" ] && o=$x; prev=$x; done
  if [ -n "$g" ]; then while [ ! -e "$g" ]; do sleep 0.1; done; echo "[gate open]" >> "${dir}/calls.txt"; fi
  echo '[{"workload":"target","method":"sdpa","logprobs":[[[-0.6931471805599453,-0.6931471805599453]]],"items_per_s":1}]' > "$o"
  exit 0
fi
exec "${PYTHON}" "$@"
`;
  fs.writeFileSync(path.join(stub, 'python3'), python, { mode: 0o755 });
  fs.writeFileSync(path.join(stub, 'nvidia-smi'), '#!/bin/bash\necho fake-gpu\n', { mode: 0o755 });
  return { dir, stub, carry, tree, out: path.join(dir, 'out'), work: path.join(dir, 'work') };
}

function runScript(name, scoreOffset) {
  const m = fakeMachine(scoreOffset);
  const r = spawnSync('bash', [path.join('scripts', 'gpu', name)], {
    cwd: m.tree,
    env: { ...process.env, PATH: `${m.stub}:${process.env.PATH}`, CARRY: m.carry, WORK: m.work, OUT: m.out },
    encoding: 'utf8',
    timeout: 120000,
  });
  const calls = fs.existsSync(path.join(m.dir, 'calls.txt')) ? fs.readFileSync(path.join(m.dir, 'calls.txt'), 'utf8') : '';
  const files = fs.existsSync(m.out) ? fs.readdirSync(m.out).sort() : [];
  const archived = files.includes('all.tar.gz') ? spawnSync('tar', ['tzf', path.join(m.out, 'all.tar.gz')], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean) : [];
  const gate = files.includes('gate.json') ? JSON.parse(fs.readFileSync(path.join(m.out, 'gate.json'), 'utf8')) : {};
  const log = files.includes('log.txt') ? fs.readFileSync(path.join(m.out, 'log.txt'), 'utf8') : '';
  // The log's tee may still be closing: retry the removal.
  fs.rmSync(m.dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  return { status: r.status, stderr: r.stderr, calls, files, archived, gate, log };
}

const hasTools = PYTHON !== '' && ['xz', 'tar'].every((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0);

test('h100-run.sh: every step in order, FlexAttention timed only after pjrt-score, three files back, the gate passes equal scores', (t) => {
  t.ok(hasTools, `python3 (${PYTHON}), xz and tar are here`);
  const r = runScript('h100-run.sh', 0);
  t.equal(r.status, 0, `exit 0 ${r.stderr.slice(-300)}`);
  const benches = [...r.calls.matchAll(/bench-gpu\.js .*?--out \S+results-(\S+)\.json/g)].map((m) => m[1]);
  t.same(benches, ['main', 'no-xla-options', 'dump'], `bench runs in order: ${benches.join(', ')}`);
  t.ok(/results-main\.json.*--configs bf16\/bf16\/cudnn_join\/cudnn\+cross-request,bf16\/bf16\/cudnn\/cudnn\+cross-request /.test(r.calls), 'the candidate and the default forms in the main run');
  t.ok(/results-no-xla-options\.json.*\[FACTS=\{"xlaOptions":\{\}\}\]/.test(r.calls), 'the variant runs with its platform facts');
  t.ok(/results-dump\.json.*\[XLA_FLAGS=--xla_dump_to=\S+\/dump --xla_dump_hlo_as_text\]/.test(r.calls), 'the dump run dumps under $OUT');
  const gateOpen = r.calls.indexOf('[gate open]');
  const lastBench = r.calls.lastIndexOf('results-dump.json');
  t.ok(gateOpen > lastBench && lastBench > 0, 'FlexAttention passes its gate only after the last pjrt-score run');
  t.ok(/--methods flexfull .*--gate /.test(r.calls), 'FlexAttention runs with a gate');
  t.same(r.files, ['all.tar.gz', 'gate.json', 'log.txt'], 'three files come back');
  t.ok(r.archived.some((f) => /pjrt-bf16-bf16_cross-request-main\.json$/.test(f)) && r.archived.some((f) => /peer-torch-f32\.json$/.test(f)), 'the results are in the archive');
  const verdicts = Object.values(r.gate);
  t.ok(verdicts.length >= 3 && verdicts.every((v) => v.pass && v.max < 1e-12), `the gate passes ${verdicts.length} runs equal to the reference`);
  t.end();
});

test('h100-defaults-run.sh: the defaults, the bridge with the first call\'s options, cuda_async; the gate fails scores 0.05 off', (t) => {
  const r = runScript('h100-defaults-run.sh', 0.05);
  t.equal(r.status, 0, `exit 0 ${r.stderr.slice(-300)}`);
  const benches = [...r.calls.matchAll(/--out \S+results-(\S+)\.json/g)].map((m) => m[1]);
  t.same(benches, ['defaults', 'bridge', 'cuda-async'], `bench runs in order: ${benches.join(', ')}`);
  t.ok(/results-bridge\.json.*"preallocate":true/.test(r.calls), 'the bridge preallocates, as the first call did');
  t.ok(/results-cuda-async\.json.*"allocator":"cuda_async"/.test(r.calls), 'cuda_async is asked for');
  t.same(r.files, ['all.tar.gz', 'gate.json', 'log.txt'], 'three files come back');
  const verdicts = Object.values(r.gate);
  // 0.05 off on both labels: max 0.05 > 0.02 and mean 0.05 > 0.01 under the gate's rule.
  t.ok(verdicts.length === 3 && verdicts.every((v) => !v.pass && Math.abs(v.max - 0.05) < 1e-9), `the gate fails all ${verdicts.length} runs 0.05 off`);
  t.match(r.log, /FAIL \(gate 0\.02 \/ 0\.01\)/, 'and says so');
  t.end();
});

test('h100-probe-run.sh: both forms, one run per XLA option with its flags, the dump, three files back', (t) => {
  const r = runScript('h100-probe-run.sh', 0);
  t.equal(r.status, 0, `exit 0 ${r.stderr.slice(-300)}`);
  const runs = [...r.calls.matchAll(/--out \S+results-(\S+)\.json.*\[XLA_FLAGS=(.*?)\]/g)].map((m) => [m[1], m[2]]);
  t.same(
    runs.map(([label]) => label),
    ['main', 'no-triton-gemm', 'cublaslt', 'dump'],
    `bench runs in order: ${runs.map(([label]) => label).join(', ')}`,
  );
  const flags = Object.fromEntries(runs);
  t.equal(flags.main, '', 'the main run has no XLA flags');
  t.equal(flags['no-triton-gemm'], '--xla_gpu_enable_triton_gemm=false', 'each variant runs with its own flag');
  t.ok(/^--xla_dump_to=\S+\/dump --xla_dump_hlo_as_text$/.test(flags.dump), `the dump run dumps under $OUT: ${flags.dump}`);
  t.ok(/results-main\.json.*--configs bf16\/bf16\/cudnn_join\/cudnn\+cross-request,bf16\/bf16\/cudnn\/cudnn\+cross-request/.test(r.calls), 'the candidate and the default in the main run');
  t.notOk(/flexfull/.test(r.calls), 'no FlexAttention in the probe');
  t.same(r.files, ['all.tar.gz', 'gate.json', 'log.txt'], 'three files come back');
  const verdicts = Object.values(r.gate);
  t.ok(verdicts.length >= 4 && verdicts.every((v) => v.pass), `the gate passes ${verdicts.length} runs equal to the reference`);
  t.end();
});
