'use strict';
// The shipped binary: prebuildify (through binding.gyp and node-gyp) makes a
// prebuild, and node-gyp-build loads it in a package copy that has no build/.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');

test('prebuildify builds binding.gyp; the prebuild loads with build/ absent', (t) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-prebuild-'));
  try {
    // A copy of the sources, so the checkout's build/ is not touched.
    for (const f of ['package.json', 'binding.gyp']) fs.copyFileSync(path.join(root, f), path.join(work, f));
    fs.cpSync(path.join(root, 'native'), path.join(work, 'native'), { recursive: true });
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(work, 'node_modules'));
    const prebuildify = require.resolve('prebuildify/bin.js');
    const built = spawnSync(process.execPath, [prebuildify, '--napi', '--strip', '--target', 'node@20.0.0'], {
      cwd: work,
      encoding: 'utf8',
      env: { ...process.env, npm_config_nodedir: process.env.npm_config_nodedir || '/usr' },
      timeout: 600000,
    });
    t.equal(built.status, 0, `prebuildify exit ${built.status}${built.status ? `: ${built.stderr.slice(-2000)}` : ''}`);
    const prebuilt = path.join(work, 'prebuilds', `${process.platform}-${process.arch}`);
    const files = fs.existsSync(prebuilt) ? fs.readdirSync(prebuilt) : [];
    t.ok(files.some((f) => f.endsWith('.node')), `prebuild made: ${files.join(', ')}`);

    // An installed-package layout: dist/ + prebuilds/, no build/.
    fs.rmSync(path.join(work, 'build'), { recursive: true, force: true });
    // A real copy: a symlink would resolve back to this checkout, whose prebuilds/ may be stale or absent.
    fs.cpSync(path.join(root, 'dist'), path.join(work, 'dist'), { recursive: true });
    const script = `
      const { Client } = require(${JSON.stringify(work)});
      const resolved = require('node-gyp-build').resolve(${JSON.stringify(work)});
      (async () => {
        const c = await Client.create();
        const e = await c.compile('func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\\n %0 = stablehlo.add %a, %a : tensor<3xf32>\\n return %0 : tensor<3xf32>\\n}');
        const [o] = await e.execute([await c.upload(new Float32Array([1, 2, 3]), [3])]);
        console.log(JSON.stringify({ resolved, out: Array.from(await o.toHost()) }));
        c.dispose();
      })();`;
    const ran = spawnSync(process.execPath, ['-e', script], {
      cwd: work,
      encoding: 'utf8',
      env: { ...process.env, PREBUILDS_ONLY: '1' },
      timeout: 120000,
    });
    t.equal(ran.status, 0, `child exit ${ran.status}${ran.status ? `: ${ran.stderr.slice(-2000)}` : ''}`);
    const line = ran.stdout.trim().split('\n').pop() || '{}';
    const report = JSON.parse(line);
    t.ok(String(report.resolved).startsWith(prebuilt), `loaded ${report.resolved}`);
    t.deepEqual(report.out, [2, 4, 6], 'the prebuilt addon runs a program');
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  t.end();
});
