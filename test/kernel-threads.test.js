'use strict';
// Threads from what the process may use (docs/design.md, 'Threads'): the
// kernels' own pool has one thread per CPU of the process's affinity mask,
// capped by its cgroup's CPU quota, and XLA's CPU pool follows the mask. Each
// case runs in a child process (the pool is sized once per process), and the
// reference for the mask is Python's os.sched_getaffinity, read in a child
// with the same mask.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');

/** What a child reports: kernelThreads(), and XLA's CPU pool threads once a client exists. */
const CHILD = `
const fs = require('node:fs');
const { Client, kernelThreads } = require('./dist/runtime');
(async () => {
  const threads = kernelThreads();
  let xla = null;
  if (process.argv[1] === 'client') {
    const client = await Client.create();
    xla = fs.readdirSync('/proc/self/task').filter((t) => fs.readFileSync('/proc/self/task/' + t + '/comm', 'utf8').startsWith('tf_XLAEigen')).length;
    client.dispose();
  }
  console.log(JSON.stringify({ ...threads, xla }));
})().catch((e) => { console.error(e); process.exit(3); });
`;

function env(extra = {}) {
  const e = { ...process.env, ...extra };
  for (const [k, v] of Object.entries(extra)) if (v === undefined) delete e[k];
  return e;
}

/** Runs `argv` (a command line that ends by running the child script) and parses its report. */
function report(argv, extra) {
  const r = spawnSync(argv[0], argv.slice(1), {
    cwd: root,
    encoding: 'utf8',
    env: env({ PJRT_SCORE_KERNEL_THREADS: undefined, ...extra }),
  });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

const child = (mode = 'threads') => [process.execPath, '-e', CHILD, mode];

/** CPUs in the affinity mask, as Python sees it under the same prefix command. */
function pythonAffinity(prefix = []) {
  const argv = [...prefix, 'python3', '-c', 'import os; print(len(os.sched_getaffinity(0)))'];
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
  if (r.error || r.status !== 0) throw new Error(`${argv.join(' ')} failed: ${r.error ? r.error.message : r.stderr}`);
  return Number(r.stdout.trim());
}

test('kernel threads: one per CPU of the affinity mask', (t) => {
  const want = pythonAffinity();
  const got = report(child());
  t.equal(got.affinity, want, `the mask has ${want} CPUs (Python's sched_getaffinity)`);
  if (got.quota === 0 || got.quota >= want) {
    t.equal(got.threads, want, 'the pool has one thread per CPU of the mask');
    t.equal(got.source, 'affinity', 'sized by the mask');
  } else {
    t.equal(got.threads, got.quota, 'a cgroup quota below the mask sizes the pool');
  }
  t.end();
});

test("kernel threads under taskset -c 0: one thread, and XLA's pool follows the mask too", (t) => {
  const prefix = ['taskset', '-c', '0'];
  t.equal(pythonAffinity(prefix), 1, 'taskset -c 0 leaves one CPU (Python sees 1)');
  const got = report([...prefix, ...child('client')]);
  t.equal(got.affinity, 1, 'the mask has 1 CPU');
  t.equal(got.threads, 1, 'the kernels run on 1 thread');
  t.equal(got.source, 'affinity', 'sized by the mask');
  t.equal(got.xla, 1, "XLA's CPU pool has 1 thread");
  t.end();
});

test('PJRT_SCORE_KERNEL_THREADS sizes the pool where set; out-of-range values are ignored', (t) => {
  const set = report(child(), { PJRT_SCORE_KERNEL_THREADS: '3' });
  t.equal(set.threads, 3, '3 threads');
  t.equal(set.source, 'PJRT_SCORE_KERNEL_THREADS');
  const bad = report(['taskset', '-c', '0', ...child()], { PJRT_SCORE_KERNEL_THREADS: '1000' });
  t.equal(bad.threads, 1, '1000 (over 256) is ignored: the mask sizes the pool');
  t.end();
});

// A cgroup of our own needs a writable cgroup file system (root, as CI runs):
// v1's cpu controller, or v2 with the cpu controller enabled for children.
function writableCpuCgroup() {
  const v1 = '/sys/fs/cgroup/cpu';
  try {
    fs.accessSync(path.join(v1, 'cpu.cfs_quota_us'), fs.constants.W_OK);
    return {
      dir: v1,
      quota: (dir, cpus) => fs.writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(cpus * 100000)),
    };
  } catch {
    // no writable cgroup v1 cpu controller: try v2
  }
  const v2 = '/sys/fs/cgroup';
  try {
    if (!fs.readFileSync(path.join(v2, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('cpu')) return null;
    fs.accessSync(path.join(v2, 'cgroup.procs'), fs.constants.W_OK);
    return { dir: v2, quota: (dir, cpus) => fs.writeFileSync(path.join(dir, 'cpu.max'), `${cpus * 100000} 100000`) };
  } catch {
    // no writable cgroup v2 with the cpu controller
  }
  return null;
}

test('kernel threads under a cgroup CPU quota smaller than the mask: the quota sizes the pool', (t) => {
  const mask = pythonAffinity();
  const cgroup = writableCpuCgroup();
  if (mask < 2 || !cgroup) {
    t.skip(
      mask < 2
        ? 'the mask has 1 CPU: no quota can be smaller'
        : 'no writable cgroup cpu controller here (not root, or none mounted)',
    );
    t.end();
    return;
  }
  const dir = path.join(cgroup.dir, `pjrt-score-test-${process.pid}`);
  fs.mkdirSync(dir);
  try {
    cgroup.quota(dir, 1);
    const got = report(['sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, ...child()]);
    t.equal(got.quota, 1, 'a quota of 100000 us per 100000 us is 1 CPU');
    t.equal(got.threads, 1, 'the kernels run on 1 thread');
    t.match(got.source, /^cgroup quota \(/, 'sized by the quota, and says which file');
  } finally {
    fs.rmdirSync(dir);
  }
  t.end();
});
