'use strict';
// The prepared GPU measurements (scripts/lab/gpu/h100-run.sh, h100-defaults-run.sh, h100-probe-run.sh) run once per lent
// GPU call, so a slip in their shell logic costs the call. Here they run on this machine against
// stand-ins for node, python3 and nvidia-smi that record their arguments and write results: each
// script must run its steps in order, return exactly the three files the device sends back, and its
// accuracy gate must pass scores equal to the reference and fail scores 0.05 off (checked against the
// gate's rule: max <= 0.02, mean <= 0.01). h100-run.sh runs the host check first when the tree has
// one, gives FlexAttention's whole-forward compile a slot of its own, and when a stand-in compile
// hangs past that slot falls back to the attention-only FlexAttention and the JAX peer and says why;
// its same-run ratios must be the stand-ins' figures divided as the test divides them.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');
/** The real python3 (the stub in front of it on PATH hands everything but the peers to it). */
const PYTHON = spawnSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).stdout.trim();

/** The stand-ins' figures (items/s): pjrt-score's main run, and each peer row by peer:workload:method. */
const PJRT = { target: 10000, pr: 6000, prP99: 20 };
const PEERS = {
  'torch:pr:batch8full': 5000,
  'torch:target:flexfull': 9000,
  'torch:target:flex': 7000,
  'torch:pr:batch8': 4000,
  'jax:target:packed': 8000,
  'jax:pr:batch8': 4500,
};

/**
 * A fake machine: stub commands, a carry with a stub node inside, a work tree holding the scripts
 * (and a stub host check under scripts/lab/cpu/ when `amx`).
 */
function fakeMachine(scoreOffset, { amx = false } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-gpu-scripts-'));
  const stub = path.join(dir, 'stub');
  const carry = path.join(dir, 'carry');
  const tree = path.join(dir, 'tree');
  for (const d of [stub, carry, path.join(tree, 'scripts', 'lab', 'gpu'), path.join(dir, 'pkg', 'pjrt-score', 'dist')])
    fs.mkdirSync(d, { recursive: true });
  for (const f of fs
    .readdirSync(path.join(root, 'scripts', 'lab', 'gpu'))
    .filter((f) => f.endsWith('.sh') || f.endsWith('.py'))) {
    fs.copyFileSync(path.join(root, 'scripts', 'lab', 'gpu', f), path.join(tree, 'scripts', 'lab', 'gpu', f));
  }
  if (amx) {
    fs.mkdirSync(path.join(tree, 'scripts', 'lab', 'cpu'));
    fs.writeFileSync(
      path.join(tree, 'scripts', 'lab', 'cpu', 'amx-host-check.sh'),
      `echo "[amx BUDGET_S=$BUDGET_S OUT=$OUT]" >> "${dir}/calls.txt"; echo "amx check says hello"\n`,
    );
  }
  // The stub node: bench/gpu.js writes one pjrt-score result (label probabilities 0.5 + offset) into --dir.
  const node = `#!/bin/bash
echo "[node $*] [XLA_FLAGS=\${XLA_FLAGS:-}] [FACTS=\${PJRT_SCORE_PLATFORM_FACTS:-}]" >> "${dir}/calls.txt"
if [[ "$*" == *--version* ]]; then echo v20; exit 0; fi
if [[ "$*" == *bench/gpu.js* && "$*" != *--emit-only* ]]; then
  d=""; prev=""; for x in "$@"; do [ "$prev" = "--dir" ] && d=$x; prev=$x; done
  mkdir -p "$d/model"; touch "$d/inputs-full.json"; mkdir -p "$d/executables"
  p=$(python3 -c "print(0.5 + ${scoreOffset})"); q=$(python3 -c "print(0.5 - ${scoreOffset})")
  echo "{\\"rows\\":[{\\"workload\\":\\"target\\",\\"method\\":\\"packed\\",\\"items_per_s\\":${PJRT.target},\\"scores\\":[[[$p,$q]]]},{\\"workload\\":\\"pr\\",\\"method\\":\\"8-concurrent\\",\\"items_per_s\\":${PJRT.pr},\\"p99_ms\\":${PJRT.prP99}}],\\"peak_rss\\":1e9,\\"load_peak_rss\\":1e9,\\"client_peak_rss\\":3e8}" > "$d/pjrt-bf16-bf16_cross-request.json"
fi
if [[ "$*" == *bench/service.js* ]]; then
  o=""; prev=""; for x in "$@"; do [ "$prev" = "--out" ] && o=$x; prev=$x; done
  echo '{"highestHeld":480}' > "$o"
  echo "step   offered  req/s   2xx  server   items/s   p50 ms   p99 ms errors  held"
  echo "rate      120   120.00    480    480    1200.0     20.0     30.0      0  yes"
  echo "highest rate held: 480 req/s, 4800.0 items/s, p99 90 ms"
fi
exit 0
`;
  fs.writeFileSync(path.join(dir, 'node'), node, { mode: 0o755 });
  spawnSync('sh', ['-c', `xz -c "${path.join(dir, 'node')}" > "${path.join(carry, 'node.xz')}"`]);
  spawnSync('tar', ['czf', path.join(carry, 'pjrt-score.tar.gz'), '-C', path.join(dir, 'pkg'), 'pjrt-score']);
  // The stub python3: the f32 peer writes a reference of log-probabilities log(0.5) for both labels;
  // the other peers write a row for each --only pair with its figure from PEERS, except the
  // whole-forward run with FLEX_MODE=hang, which writes its PR row, then hangs in the target's
  // "compile"; anything else is the real python3.
  const rows = Object.entries(PEERS)
    .map(
      ([k, v]) =>
        `${k}) r='{"peer":"${k.split(':')[0]}","workload":"${k.split(':')[1]}","method":"${k.split(':')[2]}","dtype":"bf16","items_per_s":${v},"requests_per_call":${k.split(':')[1] === 'pr' ? 8 : 1}}' ;;`,
    )
    .join('\n      ');
  const python = `#!/bin/bash
echo "[python3 $*]" >> "${dir}/calls.txt"
if [[ "$*" == *peer_torch.py* || "$*" == *peer_jax.py* ]]; then
  o=""; only=""; prev=""; for x in "$@"; do [ "$prev" = "--out" ] && o=$x; [ "$prev" = "--only" ] && only=$x; prev=$x; done
  if [[ "$*" == *"--dtype f32"* ]]; then
    echo '[{"peer":"torch","workload":"target","method":"sdpa","dtype":"f32","logprobs":[[[-0.6931471805599453,-0.6931471805599453]]],"items_per_s":1}]' > "$o"
    exit 0
  fi
  peer=torch; [[ "$*" == *peer_jax.py* ]] && peer=jax
  out=""
  for pair in \${only//,/ }; do
    if [ "$peer:$pair" = torch:target:flexfull ] && [ "\${FLEX_MODE:-}" = hang ]; then
      echo "[$out]" > "$o"; echo "[    0.1 s] flexfull: warm-up 1/2 (compile start)"; exec sleep 600
    fi
    case "$peer:$pair" in
      ${rows}
      *) r="" ;;
    esac
    [ -n "$r" ] && out="\${out:+$out,}$r"
  done
  echo "[$out]" > "$o"
  exit 0
fi
exec "${PYTHON}" "$@"
`;
  fs.writeFileSync(path.join(stub, 'python3'), python, { mode: 0o755 });
  fs.writeFileSync(path.join(stub, 'nvidia-smi'), '#!/bin/bash\necho fake-gpu\n', { mode: 0o755 });
  return { dir, stub, carry, tree, out: path.join(dir, 'out'), work: path.join(dir, 'work') };
}

function runScript(name, scoreOffset, { amx = false, env = {} } = {}) {
  const m = fakeMachine(scoreOffset, { amx });
  const r = spawnSync('bash', [path.join('scripts', 'lab', 'gpu', name)], {
    cwd: m.tree,
    env: { ...process.env, PATH: `${m.stub}:${process.env.PATH}`, CARRY: m.carry, WORK: m.work, OUT: m.out, ...env },
    encoding: 'utf8',
    timeout: 120000,
  });
  const calls = fs.existsSync(path.join(m.dir, 'calls.txt'))
    ? fs.readFileSync(path.join(m.dir, 'calls.txt'), 'utf8')
    : '';
  const files = fs.existsSync(m.out) ? fs.readdirSync(m.out).sort() : [];
  const archived = files.includes('all.tar.gz')
    ? spawnSync('tar', ['tzf', path.join(m.out, 'all.tar.gz')], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter(Boolean)
    : [];
  const gate = files.includes('gate.json') ? JSON.parse(fs.readFileSync(path.join(m.out, 'gate.json'), 'utf8')) : {};
  const log = files.includes('log.txt') ? fs.readFileSync(path.join(m.out, 'log.txt'), 'utf8') : '';
  const ratios = archived.includes('ratios.json')
    ? JSON.parse(spawnSync('tar', ['xzOf', path.join(m.out, 'all.tar.gz'), 'ratios.json'], { encoding: 'utf8' }).stdout)
    : null;
  // The log's tee may still be closing: retry the removal.
  if (process.env.KEEP_FAKE) console.error(m.dir);
  else fs.rmSync(m.dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  return { status: r.status, stderr: r.stderr, calls, files, archived, gate, log, ratios };
}

const hasTools = PYTHON !== '' && ['xz', 'tar'].every((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0);

/** The index in `calls` of the first call matching `re` (-1 when none). */
function at(calls, re) {
  const m = re.exec(calls);
  return m ? m.index : -1;
}

test('h100-run.sh: the host check first, pjrt-score, HTTP, then the peers; a whole-forward compile hanging past its slot falls back, says why, and the ratios use the fallbacks', (t) => {
  t.ok(hasTools, `python3 (${PYTHON}), xz and tar are here`);
  const r = runScript('h100-run.sh', 0, { amx: true, env: { FLEX_MODE: 'hang', FLEX_SLOT_S: '3' } });
  t.equal(r.status, 0, `exit 0 ${r.stderr.slice(-300)}`);
  t.ok(
    /^\[amx BUDGET_S=200 OUT=\S+\/amx\]/.test(r.calls),
    'the AMX host check is the first call, with 200 s and its own folder',
  );
  t.match(r.log, /amx check says hello/, 'its output is in the log');
  const benches = [...r.calls.matchAll(/bench\/gpu\.js .*?--out \S+results-(\S+)\.json/g)].map((m) => m[1]);
  t.same(benches, ['main'], `one pjrt-score run by default: ${benches.join(', ')}`);
  t.ok(
    /results-main\.json.*--configs bf16\/bf16\/cudnn_join\/cudnn\+cross-request --methods packed,8-concurrent/.test(
      r.calls,
    ),
    'the candidate, target packed and 8 PR callers',
  );
  t.ok(
    /bench\/service\.js --load open --serve-args --plugin cuda --model \S+ --batching cross-request --rates 120 --sweep 240,480,720 /.test(
      r.calls,
    ),
    'the HTTP step: serve --plugin cuda at 120 req/s, then the sweep',
  );
  const order = [
    /results-main\.json/,
    /bench\/service\.js/,
    /peer_torch\.py.*--dtype f32/,
    /--only pr:batch8full,target:flexfull/,
    /peer_torch\.py.*--only target:flex /,
    /peer_jax\.py.*--only target:packed /,
  ].map((re) => at(r.calls, re));
  t.ok(
    order.every((x, i) => x >= 0 && (i === 0 || x > order[i - 1])),
    `in order: pjrt-score, HTTP, f32 reference, the whole-forward slot, the FlexAttention and JAX fallbacks (${order})`,
  );
  t.match(r.log, /flexfull: warm-up 1\/2 \(compile start\)/, "the hung peer's progress is in the log");
  t.match(
    r.log,
    /torch bf16 batch8full pr, flexfull target \(own slot\) exit 124: stopped at its bound of 3 s/,
    'the slot stopped it',
  );
  t.match(
    r.log,
    /peer for pr: FlexAttention, whole forward compiled \(its figure came within its slot\)/,
    'PR kept its whole-forward figure',
  );
  t.match(
    r.log,
    /peer for target: FlexAttention's whole-forward run did not finish in its slot: stopped at its bound \(exit 124; no timed row\): falling back to FlexAttention with only the attention compiled, and to the JAX cuDNN peer/,
    'the log says which peer ran for the target and why',
  );
  const target = PJRT.target / Math.max(PEERS['torch:target:flex'], PEERS['jax:target:packed']);
  const pr = PJRT.pr / PEERS['torch:pr:batch8full'];
  t.ok(
    r.log.includes(`target: pjrt-score ${PJRT.target.toFixed(1)} items/s`) &&
      r.log.includes(
        `/ jax packed ${PEERS['jax:target:packed'].toFixed(1)} = ${target.toFixed(2)}x (goal >= 1.5x: not met)`,
      ),
    `target ratio ${target.toFixed(2)}x against the best fallback`,
  );
  t.ok(
    r.log.includes(
      `/ torch batch8full ${PEERS['torch:pr:batch8full'].toFixed(1)} = ${pr.toFixed(2)}x (goal >= 1.3x: not met)`,
    ) && r.log.includes(`p99 ${PJRT.prP99.toFixed(1)} ms`),
    `PR ratio ${pr.toFixed(2)}x with pjrt-score's p99`,
  );
  t.ok(
    r.ratios && Math.abs(r.ratios.target.ratio - target) < 1e-12 && Math.abs(r.ratios.pr.ratio - pr) < 1e-12,
    'ratios.json has both',
  );
  t.match(r.log, /highest rate held: 480 req\/s/, 'the HTTP table is in the log');
  t.same(r.files, ['all.tar.gz', 'gate.json', 'log.txt'], 'three files come back');
  t.ok(
    ['service-open.json', 'peer-jax-bf16.json', 'peer-torch-bf16-fallback.json'].every((f) => r.archived.includes(f)),
    "the HTTP table and the fallbacks' results are in the archive",
  );
  const verdicts = Object.values(r.gate);
  t.ok(
    verdicts.length >= 1 && verdicts.every((v) => v.pass && v.max < 1e-12),
    `the gate passes ${verdicts.length} runs equal to the reference`,
  );
  t.end();
});

test('h100-run.sh: no host check in the tree is said; a whole-forward run that finishes in its slot needs no fallback', (t) => {
  const r = runScript('h100-run.sh', 0, { env: { FLEX_SLOT_S: '30' } });
  t.equal(r.status, 0, `exit 0 ${r.stderr.slice(-300)}`);
  t.match(
    r.log,
    /no scripts\/lab\/cpu\/amx-host-check\.sh in this tree: no AMX host check/,
    'the log says there was no host check',
  );
  t.notOk(/\[amx/.test(r.calls), 'and none ran');
  t.notOk(/peer_jax\.py|fallback/.test(r.calls), 'no fallback ran');
  const target = PJRT.target / PEERS['torch:target:flexfull'];
  t.ok(
    r.log.includes(`/ torch flexfull ${PEERS['torch:target:flexfull'].toFixed(1)} = ${target.toFixed(2)}x`),
    `target ratio ${target.toFixed(2)}x against the whole-forward FlexAttention`,
  );
  t.ok(r.ratios && r.ratios.pr.best_peer.method === 'batch8full', 'PR against its whole-forward figure');
  t.end();
});

test("h100-defaults-run.sh: the defaults, the bridge with the first call's options, cuda_async; the gate fails scores 0.05 off", (t) => {
  const r = runScript('h100-defaults-run.sh', 0.05);
  t.equal(r.status, 0, `exit 0 ${r.stderr.slice(-300)}`);
  const benches = [...r.calls.matchAll(/--out \S+results-(\S+)\.json/g)].map((m) => m[1]);
  t.same(benches, ['defaults', 'bridge', 'cuda-async'], `bench runs in order: ${benches.join(', ')}`);
  t.ok(/results-bridge\.json.*"preallocate":true/.test(r.calls), 'the bridge preallocates, as the first call did');
  t.ok(/results-cuda-async\.json.*"allocator":"cuda_async"/.test(r.calls), 'cuda_async is asked for');
  t.same(r.files, ['all.tar.gz', 'gate.json', 'log.txt'], 'three files come back');
  const verdicts = Object.values(r.gate);
  // 0.05 off on both labels: max 0.05 > 0.02 and mean 0.05 > 0.01 under the gate's rule.
  t.ok(
    verdicts.length === 3 && verdicts.every((v) => !v.pass && Math.abs(v.max - 0.05) < 1e-9),
    `the gate fails all ${verdicts.length} runs 0.05 off`,
  );
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
  t.ok(
    /^--xla_dump_to=\S+\/dump --xla_dump_hlo_as_text$/.test(flags.dump),
    `the dump run dumps under $OUT: ${flags.dump}`,
  );
  t.ok(
    /results-main\.json.*--configs bf16\/bf16\/cudnn_join\/cudnn\+cross-request,bf16\/bf16\/cudnn\/cudnn\+cross-request/.test(
      r.calls,
    ),
    'the candidate and the default in the main run',
  );
  t.notOk(/flexfull/.test(r.calls), 'no FlexAttention in the probe');
  t.same(r.files, ['all.tar.gz', 'gate.json', 'log.txt'], 'three files come back');
  const verdicts = Object.values(r.gate);
  t.ok(
    verdicts.length >= 4 && verdicts.every((v) => v.pass),
    `the gate passes ${verdicts.length} runs equal to the reference`,
  );
  t.end();
});
