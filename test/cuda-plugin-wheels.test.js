'use strict';
// `pjrt-score fetch --plugin cuda` (lib/assets/cuda-plugin-wheels.ts) without
// downloading its ~1.9 GB: the pinned set names each wheel by the file pip
// saves for its requirement, with a sha256, the plugin wheel first; and the
// plugin name `cuda` loads the cached plugin exactly when every wheel's marker
// matches its sha256 (a child process with its own cache).
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const dist = path.join(__dirname, '..', 'dist');

test('the pinned CUDA wheel set: one file per requirement, sha256 each, the plugin first, libdevice and ptxas included', (t) => {
  const { CUDA13_WHEELS, CUDA13_PLUGIN_VERSION } = require(path.join(dist, 'assets', 'cuda-plugin-wheels'));
  t.equal(CUDA13_WHEELS[0].requirement, `jax-cuda13-pjrt==${CUDA13_PLUGIN_VERSION}`, 'the plugin wheel first');
  const names = new Set();
  for (const w of CUDA13_WHEELS) {
    const [name, version] = w.requirement.split('==');
    t.ok(
      w.wheelFile.startsWith(`${name.replace(/-/g, '_')}-${version}-py3-none-`) && w.wheelFile.endsWith('.whl'),
      `${w.wheelFile} is ${w.requirement}`,
    );
    t.match(w.wheelSha256, /^[0-9a-f]{64}$/, `${name}: sha256`);
    names.add(name);
  }
  t.equal(names.size, CUDA13_WHEELS.length, 'no package twice');
  for (const needed of [
    'nvidia-cuda-runtime',
    'nvidia-cudnn-cu13',
    'nvidia-cublas',
    'nvidia-nvvm',
    'nvidia-cuda-nvcc',
    'nvidia-nccl-cu13',
  ])
    t.ok(names.has(needed), `${needed} is in the set`);
  t.end();
});

test('plugin "cuda" resolves to the cached plugin only when every wheel is marked with its sha256', (t) => {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-cuda-wheels-'));
  const script = `
    const w = require(${JSON.stringify(path.join(dist, 'assets', 'cuda-plugin-wheels'))});
    const { resolvePluginPath } = require(${JSON.stringify(path.join(dist, 'runtime', 'plugin-path'))});
    const fs = require('node:fs'), path = require('node:path');
    const resolved = () => { try { return resolvePluginPath('cuda'); } catch (e) { return 'error'; } };
    const out = { site: w.CUDA13_SITE, file: w.CUDA13_PLUGIN_FILE, empty: w.isCuda13Fetched() };
    fs.mkdirSync(path.dirname(w.CUDA13_PLUGIN_FILE), { recursive: true });
    fs.writeFileSync(w.CUDA13_PLUGIN_FILE, 'not a real plugin');
    fs.mkdirSync(path.join(w.CUDA13_SITE, '.wheels'), { recursive: true });
    w.CUDA13_WHEELS.forEach((s, i) => fs.writeFileSync(path.join(w.CUDA13_SITE, '.wheels', s.wheelFile + '.sha256'), (i === 3 ? '0'.repeat(64) : s.wheelSha256) + '\\n'));
    out.oneWrong = w.isCuda13Fetched();
    out.oneWrongResolved = resolved();
    const s = w.CUDA13_WHEELS[3];
    fs.writeFileSync(path.join(w.CUDA13_SITE, '.wheels', s.wheelFile + '.sha256'), s.wheelSha256 + '\\n');
    out.all = w.isCuda13Fetched();
    out.allResolved = resolved();
    process.stdout.write(JSON.stringify(out));
  `;
  try {
    const r = spawnSync(process.execPath, ['-e', script], {
      env: { ...process.env, PJRT_SCORE_CACHE: cache, PJRT_SCORE_PYTHON: '/nonexistent/python3' },
      encoding: 'utf8',
    });
    t.equal(r.status, 0, `child ran${r.status ? `: ${r.stderr}` : ''}`);
    const out = JSON.parse(r.stdout);
    t.ok(out.site.startsWith(cache), 'the set lives in the cache');
    t.equal(out.empty, false, 'an empty cache holds no set');
    t.equal(out.oneWrong, false, 'one marker with another sha256: not fetched');
    t.equal(out.oneWrongResolved, 'error', 'and `cuda` falls back to Python (here: none, an error)');
    t.equal(out.all, true, 'every marker right: fetched');
    t.equal(out.allResolved, out.file, '`cuda` loads the cached plugin file');
  } finally {
    fs.rmSync(cache, { recursive: true, force: true });
  }
  t.end();
});
