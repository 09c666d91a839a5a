'use strict';
// The GPU peers' shared loop (scripts/lab/gpu/peer_common.py) must leave its progress in the log even
// when a time limit kills the process mid-compile (docs/gpu.md "The prepared run"): each line is flushed
// as it happens, not at exit. Run here with the real python3 and a stand-in method (no torch or jax; an
// empty numpy module where numpy is missing, since the loop itself does not use it): a method that
// hangs in its first warm-up, killed after 2 s, must have printed "compile start"; one that runs prints
// each warm-up with its seconds and each timed run, and --only keeps just the workload:method pairs named.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const PYTHON = spawnSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).stdout.trim();

function runPeer(hang, only) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-peer-progress-'));
  if (spawnSync(PYTHON, ['-c', 'import numpy']).status !== 0) fs.writeFileSync(path.join(dir, 'numpy.py'), '');
  const script = `
import sys, time
sys.argv = ["peer", "--model", "m", "--inputs", "i", "--out", ${JSON.stringify(path.join(dir, 'out.json'))},
            "--methods", "fast,other", "--workloads", "target,pr", "--warmup", "2", "--repeats", "2"] + (["--only", ${JSON.stringify(only)}] if ${JSON.stringify(only)} else [])
import peer_common as c
args = c.parse_args("stub", ["fast", "other"])
def call(requests):
    if ${hang ? 'True' : 'False'}:
        time.sleep(600)
    return [[[0.0, 0.0] for _ in r["items"]] for r in requests], sum(len(r["items"]) for r in requests)
reqs = {"target": [{"query": [1], "items": [[2], [3]]}], "pr": [{"query": [1], "items": [[2]]}, {"query": [4], "items": [[5]]}]}
c.run_peer("stub", args, [0, 1], reqs, lambda w, r: [c.Method("fast", call), c.Method("other", call)], {"device": "cpu"}, lambda: None, {})
`;
  const r = spawnSync(PYTHON, ['-c', script], {
    cwd: dir,
    env: { ...process.env, PYTHONPATH: [dir, path.join(root, 'scripts', 'lab', 'gpu')].join(path.delimiter) },
    encoding: 'utf8',
    timeout: hang ? 2000 : 30000,
    killSignal: 'SIGKILL',
  });
  const rows = fs.existsSync(path.join(dir, 'out.json'))
    ? JSON.parse(fs.readFileSync(path.join(dir, 'out.json'), 'utf8'))
    : [];
  fs.rmSync(dir, { recursive: true, force: true });
  return { ...r, rows };
}

test('peer_common: a peer killed mid-compile has already printed how far it got', (t) => {
  const r = runPeer(true, '');
  t.equal(r.signal, 'SIGKILL', 'the time limit killed it');
  t.match(r.stdout, /stub: ready \(cpu\); methods fast,other on target,pr/, 'the start is in its output');
  t.match(
    r.stdout,
    /stub fast target: start\n.*fast: warm-up 1\/2 \(compile start\)/,
    '"compile start" came out before the kill',
  );
  t.end();
});

test('peer_common: each warm-up with its seconds, each timed run; --only keeps the named pairs', (t) => {
  const r = runPeer(false, 'target:fast,pr:other');
  t.equal(r.status, 0, `exit 0 ${r.stderr.slice(-300)}`);
  const lines = r.stdout
    .split('\n')
    .filter((l) => /^\[.*(warm-up|timed run)/.test(l))
    .map((l) => l.replace(/^\[\s*[\d.]+ s\] /, '').replace(/[\d.]+ (s|ms)/g, 'N $1'));
  const one = (m) => [
    `${m}: warm-up 1/2 (compile start)`,
    `${m}: warm-up 1/2 done in N s (compile end)`,
    `${m}: warm-up 2/2`,
    `${m}: warm-up 2/2 done in N s`,
  ];
  t.same(
    lines,
    [
      ...one('fast'),
      'fast: timed run 1/2: N ms for 2 items',
      'fast: timed run 2/2: N ms for 2 items',
      ...one('other'),
      'other: timed run 1/2: N ms for 2 items',
      'other: timed run 2/2: N ms for 2 items',
    ],
    'progress in order',
  );
  t.same(
    r.rows.map((x) => `${x.workload}:${x.method}`),
    ['target:fast', 'pr:other'],
    'only the pairs named ran',
  );
  t.end();
});
