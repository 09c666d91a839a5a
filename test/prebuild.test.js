'use strict';
// The shipped binaries: `npm run build:prebuilds` (scripts/build/prebuild.js: cmake-js with
// zig c++ for an old glibc, no header download) makes
// prebuilds/linux-x64/ and prebuilds/linux-arm64/pjrt-score.glibc.napi.node;
// objdump -T shows each needs no glibc symbol version above the minimum
// README.md states and nothing from libstdc++ (binutils' objdump reads the
// aarch64 file as a generic little-endian ELF: the dynamic symbols and their
// versions are all this needs); node-gyp-build loads the x86-64 one in a
// package copy that has no build/ (the arm64 one runs in npm run test:arm64,
// under emulation).
// Cold (empty cache: zig download and its libc++ build) this takes minutes;
// warm, a few seconds. The build is forced here (--force: this file tests
// the build); a run without it builds nothing while the inputs' digest
// matches the last build's, which is what package.test.js and `npm pack` get.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const prebuild = require('../scripts/build/prebuild.js');
const file = prebuild.prebuildPath(root);

/** "2.3.2" -> [2, 3, 2], compared part by part (2.16 > 2.2.5). */
function versionParts(v) {
  return v.split('.').map(Number);
}
function compareVersions(a, b) {
  const x = versionParts(a);
  const y = versionParts(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] || 0) - (y[i] || 0);
    if (d !== 0) return d;
  }
  return 0;
}

test('npm run build:prebuilds makes both prebuilds with cmake-js, from every .cc under native/', (t) => {
  const started = Date.now();
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'build', 'prebuild.js'), '--force'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 1200000,
  });
  t.equal(
    r.status,
    0,
    r.status === 0
      ? `scripts/build/prebuild.js (${((Date.now() - started) / 1000).toFixed(1)} s)`
      : `exit ${r.status}: ${(r.stderr || '').slice(-3000)}`,
  );
  for (const { platform } of prebuild.TARGETS)
    t.ok(
      fs.existsSync(prebuild.prebuildPath(root, platform)),
      `made ${path.relative(root, prebuild.prebuildPath(root, platform))}`,
    );
  t.deepEqual(
    prebuild.TARGETS.map((x) => x.platform),
    ['linux-x64', 'linux-arm64'],
    'the targets: linux-x64 and linux-arm64',
  );
  const output = `${r.stdout}\n${r.stderr}`;
  t.doesNotMatch(output, /node-gyp|nodejs\.org|-headers\.tar/i, 'no node-gyp, no header download');

  // One list of sources: what CMake compiled is every .cc under native/, and binding.gyp's expression names the same.
  const sources = fs
    .readdirSync(path.join(root, 'native'), { recursive: true })
    .filter((f) => f.endsWith('.cc'))
    .sort();
  for (const { platform, buildDir } of prebuild.TARGETS) {
    const objects = path.join(root, buildDir, 'CMakeFiles', 'pjrt_score.dir', 'native');
    const compiled = fs.existsSync(objects)
      ? fs
          .readdirSync(objects, { recursive: true })
          .filter((f) => f.endsWith('.cc.o'))
          .map((f) => f.slice(0, -2))
          .sort()
      : [];
    t.deepEqual(compiled, sources, `${platform}: CMake compiled every .cc under native/ (${sources.length})`);
  }
  const gyp = fs.readFileSync(path.join(root, 'binding.gyp'), 'utf8');
  const expr = /"sources": \["<!@\(node -p \\"(.+?)\\"\)"\]/.exec(gyp);
  t.ok(expr, 'binding.gyp derives its sources with one node expression');
  if (expr) {
    const listed = spawnSync(process.execPath, ['-p', expr[1]], { cwd: root, encoding: 'utf8' })
      .stdout.trim()
      .split(/\s+/);
    t.deepEqual(
      listed,
      sources.map((f) => `native/${f}`),
      'binding.gyp lists the same files',
    );
  }
  t.end();
});

test('a second run builds nothing while the inputs are unchanged; a stamp that does not match makes it build', (t) => {
  const stamps = prebuild.TARGETS.map((x) => path.relative(root, prebuild.stampPath(root, x.platform))).join(' and ');
  t.ok(prebuild.prebuildIsCurrent(root), `the stamps ${stamps} match the inputs and the prebuilds`);
  const again = spawnSync(process.execPath, [path.join(root, 'scripts', 'build', 'prebuild.js')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120000,
  });
  t.equal(again.status, 0, 'scripts/build/prebuild.js again: exit 0');
  t.match(again.stderr, /prebuild is current/, 'it says the prebuild is current');
  t.doesNotMatch(`${again.stdout}${again.stderr}`, /cmake|Building|Linking/i, 'and runs no build');
  const stamp = fs.readFileSync(prebuild.stampPath(root), 'utf8');
  try {
    fs.writeFileSync(
      prebuild.stampPath(root),
      stamp.replace(/inputs ([0-9a-f])/, (m, c) => `inputs ${c === '0' ? '1' : '0'}`),
    );
    t.notOk(
      prebuild.prebuildIsCurrent(root),
      'inputs whose digest differs from the stamp: not current (the next run builds)',
    );
  } finally {
    fs.writeFileSync(prebuild.stampPath(root), stamp);
  }
  t.end();
});

for (const { platform } of prebuild.TARGETS) {
  test(`the ${platform} prebuild is for its architecture and needs no glibc above the minimum README.md states, and no libstdc++`, (t) => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const stated = /prebuilt addon[^\n]*?glibc (?:>=|≥) ?(\d+\.\d+)/.exec(readme)?.[1];
    t.equal(
      stated,
      prebuild.GLIBC_TARGET,
      `README.md states glibc ${stated}, the target scripts/build/prebuild.js builds for`,
    );
    const minimum = stated || prebuild.GLIBC_TARGET;
    const target = prebuild.prebuildPath(root, platform);

    // e_machine of the ELF header: what the file runs on, read without objdump.
    const header = Buffer.alloc(20);
    const fd = fs.openSync(target, 'r');
    fs.readSync(fd, header, 0, 20, 0);
    fs.closeSync(fd);
    const machine = { 62: 'x86-64', 183: 'aarch64' }[header.readUInt16LE(18)] ?? `e_machine ${header.readUInt16LE(18)}`;
    t.equal(machine, platform === 'linux-arm64' ? 'aarch64' : 'x86-64', `ELF header: ${machine}`);

    const dyn = spawnSync('objdump', ['-T', target], { encoding: 'utf8' });
    t.equal(
      dyn.status,
      0,
      `objdump -T ${path.relative(root, target)}${dyn.error ? ` (${dyn.error.message}: install binutils)` : ''}`,
    );
    if (dyn.status !== 0) return t.end();
    const glibc = [...new Set([...dyn.stdout.matchAll(/\bGLIBC_(\d+(?:\.\d+)+)\b/g)].map((m) => m[1]))].sort(
      compareVersions,
    );
    const glibcxx = [...new Set([...dyn.stdout.matchAll(/\bGLIBCXX_(\d+(?:\.\d+)+)\b/g)].map((m) => m[1]))];
    t.ok(glibc.length > 0, `reads the symbol versions: GLIBC_ ${glibc.join(', ')}`);
    const above = glibc.filter((v) => compareVersions(v, minimum) > 0);
    t.deepEqual(above, [], `no GLIBC_ version above ${minimum} (highest: ${glibc[glibc.length - 1]})`);
    t.deepEqual(glibcxx, [], 'no GLIBCXX_ version (libc++ is linked in statically)');

    const needed = spawnSync('objdump', ['-p', target], { encoding: 'utf8' });
    const libs = [...needed.stdout.matchAll(/NEEDED\s+(\S+)/g)].map((m) => m[1]);
    t.ok(libs.length > 0 && !libs.some((l) => /libstdc\+\+|libc\+\+|libgcc_s/.test(l)), `NEEDED: ${libs.join(', ')}`);
    t.end();
  });
}

test('the prebuild loads with build/ absent (PREBUILDS_ONLY) and runs a program', (t) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-prebuild-'));
  try {
    // An installed-package layout: package.json, dist/, prebuilds/; no build/.
    // Real copies: a symlink would resolve back to this checkout.
    fs.copyFileSync(path.join(root, 'package.json'), path.join(work, 'package.json'));
    fs.cpSync(path.join(root, 'dist'), path.join(work, 'dist'), { recursive: true });
    const copied = prebuild.prebuildPath(work);
    fs.mkdirSync(path.dirname(copied), { recursive: true });
    fs.copyFileSync(file, copied);
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(work, 'node_modules'));
    const script = `
      const { Client } = require(${JSON.stringify(work)});
      const resolved = require('node-gyp-build').resolve(${JSON.stringify(work)});
      (async () => {
        const c = await Client.create();
        const e = await c.compile('func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\\n %0 = stablehlo.add %a, %a : tensor<3xf32>\\n return %0 : tensor<3xf32>\\n}');
        const [o] = await e.execute([await c.upload(new Float32Array([1, 2, 3]), [3])]);
        let error = null;
        try { await c.compile('not a program'); } catch (err) { error = err.name; }
        console.log(JSON.stringify({ resolved, out: Array.from(await o.toHost()), error }));
        c.dispose();
      })();`;
    const ran = spawnSync(process.execPath, ['-e', script], {
      cwd: work,
      encoding: 'utf8',
      env: { ...process.env, PREBUILDS_ONLY: '1' },
      timeout: 120000,
    });
    t.equal(ran.status, 0, `child exit ${ran.status}${ran.status ? `: ${ran.stderr.slice(-2000)}` : ''}`);
    const report = JSON.parse(ran.stdout.trim().split('\n').pop() || '{}');
    t.equal(report.resolved, copied, `loaded ${report.resolved}`);
    t.deepEqual(report.out, [2, 4, 6], 'the prebuilt addon runs a program');
    t.equal(report.error, 'PjrtError', 'a PJRT error raised in the prebuild (static libc++) reaches JS as a PjrtError');
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  t.end();
});
