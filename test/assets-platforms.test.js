'use strict';
// The CPU plugin per architecture (lib/assets/plugin.ts): linux-x64 and
// linux-arm64 each get their own pinned wheel and cache folder; any other
// platform or architecture is a FetchError that names it, before pip runs.
// The aarch64 wheel itself is fetched and its sha256 checked by
// npm run test:arm64 (scripts/lab/arm64/run.js), under emulation.
const test = require('tape');
const path = require('node:path');
const { CPU_PLUGIN, CPU_PLUGINS, cpuPluginFor, FetchError } = require('../dist/assets');

test('each Linux architecture has its own wheel, sha256 and cache file', (t) => {
  const x64 = cpuPluginFor('linux', 'x64');
  const arm64 = cpuPluginFor('linux', 'arm64');
  t.equal(x64.wheelFile, 'xla_cpu_pjrt-0.0.1-py3-none-manylinux_2_27_x86_64.whl', 'x64: the x86_64 wheel');
  t.equal(arm64.wheelFile, 'xla_cpu_pjrt-0.0.1-py3-none-manylinux_2_27_aarch64.whl', 'arm64: the aarch64 wheel');
  t.ok(
    arm64.pipArgs.includes('manylinux_2_27_aarch64') && x64.pipArgs.includes('manylinux_2_27_x86_64'),
    'pip asks for the platform of each',
  );
  for (const a of [x64, arm64]) t.match(a.wheelSha256, /^[0-9a-f]{64}$/, `${a.label}: a sha256 pin`);
  t.notEqual(x64.wheelSha256, arm64.wheelSha256, 'two different pins');
  t.notEqual(
    path.dirname(x64.destination),
    path.dirname(arm64.destination),
    'two cache folders: one cache can hold both',
  );
  t.match(arm64.label, /linux-arm64/, 'the progress lines name the architecture');
  t.deepEqual(Object.keys(CPU_PLUGINS).sort(), ['arm64', 'x64'], 'exactly these two');
  t.equal(CPU_PLUGIN, cpuPluginFor(), `CPU_PLUGIN is this machine's (${process.arch})`);
  t.end();
});

test('a platform without a wheel is an error that names it', (t) => {
  for (const [platform, arch] of [
    ['darwin', 'arm64'],
    ['darwin', 'x64'],
    ['win32', 'x64'],
    ['linux', 'ia32'],
    ['linux', 'riscv64'],
  ]) {
    try {
      cpuPluginFor(platform, arch);
      t.fail(`${platform}-${arch}: no error`);
    } catch (err) {
      t.ok(err instanceof FetchError, `${platform}-${arch}: a FetchError`);
      t.match(
        err.message,
        new RegExp(`no XLA CPU PJRT plugin for ${platform}-${arch}: .*linux-x64 and linux-arm64 .*PJRT_PLUGIN_PATH`),
        `says: ${err.message.slice(0, 60)}...`,
      );
    }
  }
  t.end();
});
