#!/usr/bin/env node
'use strict';
// `npm run test:arm64`: the linux-arm64 package on this x86-64 machine, under
// user-mode emulation (scripts/lab/arm64/emulator.js: Debian's arm64 Node and
// qemu-user-static, fetched as packages into the cache). In a package copy
// holding both prebuilds and no build/, scripts/lab/arm64/workload.js runs under
// the emulated arm64 Node and under this machine's Node: each loads its own
// prebuild, fetches and verifies the CPU plugin of its architecture, runs one
// StableHLO program and scores one request with a tiny random model; the
// arm64 results must be within 1e-5 of the x86-64 ones. Where the packages
// cannot be fetched it says so and fails. Step times are printed for the
// reader; they are emulation times, not performance figures, and no verdict
// depends on them. Ends with the line "N passed, N failed".
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..', '..', '..');
const prebuild = require('../../build/prebuild.js');
const { EmulatorUnavailable, ensureEmulator, emulatedNode } = require('./emulator.js');
const { makeTinyModel, writeTinyGguf } = require('../../../test/helpers/tiny-model.js');

const TOLERANCE = 1e-5;
const RAW_TOLERANCE = 1e-4;
const ELF_MACHINE = { x64: 62, arm64: 183 }; // EM_X86_64, EM_AARCH64

let passed = 0;
let failed = 0;
function check(condition, message) {
  if (condition) passed++;
  else failed++;
  console.log(`${condition ? 'ok' : 'not ok'} ${passed + failed} ${message}`);
  return Boolean(condition);
}

const log = (line) => console.log(`# ${line}`);

function timed(what, fn) {
  const started = Date.now();
  const value = fn();
  log(`${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return value;
}

function elfMachine(file) {
  const header = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, header, 0, 20, 0);
  } finally {
    fs.closeSync(fd);
  }
  return header.readUInt16LE(18);
}

function maxAbsDiff(a, b) {
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return Infinity;
  let m = 0;
  a.forEach((x, i) => (m = Math.max(m, Array.isArray(x) ? maxAbsDiff(x, b[i]) : Math.abs(x - b[i]))));
  return m;
}

function maxRelDiff(a, b) {
  return Math.max(...a.flat().map((x, i) => Math.abs(x - b.flat()[i]) / Math.abs(b.flat()[i])));
}

/** The workload in the package copy, under `command`; its JSON report, or null (the output is shown). */
function runWorkload(label, command, args, env, pkg, model) {
  const r = timed(`${label}: workload`, () =>
    spawnSync(command, [...args, path.join(__dirname, 'workload.js'), pkg, model], {
      cwd: pkg,
      encoding: 'utf8',
      env: { ...env, PREBUILDS_ONLY: '1' },
      maxBuffer: 64 << 20,
    }),
  );
  const line = (r.stdout || '')
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  if (
    !check(
      r.status === 0 && line,
      `${label}: the workload ran (exit ${r.status}${r.signal ? `, signal ${r.signal}` : ''})`,
    )
  ) {
    console.log(`# --- stderr (tail)\n${(r.stderr || r.error?.message || '').slice(-3000).replace(/^/gm, '# ')}`);
    return null;
  }
  return JSON.parse(line);
}

function checkReport(report, arch, pkg) {
  check(report.arch === arch, `${arch}: process.arch is ${report.arch} (Node ${report.node}, N-API ${report.napi})`);
  const expected = prebuild.prebuildPath(pkg, `linux-${arch}`);
  check(report.prebuild === expected, `${arch}: node-gyp-build loaded ${path.relative(pkg, report.prebuild || '')}`);
  const machine = arch === 'arm64' ? 'aarch64' : 'x86_64';
  check(
    report.pluginWheel === `xla_cpu_pjrt-0.0.1-py3-none-manylinux_2_27_${machine}.whl`,
    `${arch}: the plugin wheel of its architecture: ${report.pluginWheel}`,
  );
  check(
    report.pluginVerified === true,
    `${arch}: the plugin's wheel sha256 was verified (marker beside ${report.plugin})`,
  );
  check(
    fs.existsSync(report.plugin) && elfMachine(report.plugin) === ELF_MACHINE[arch],
    `${arch}: the plugin file is an ELF for ${machine}`,
  );
  for (const line of report.fetchLog) log(`${arch}: ${line}`);
  log(
    `${arch}: platform ${report.platform}; fused kernels registered: ${report.prefixAttentionKernel}; prefix attention ${report.prefixAttention}${report.kernelPaths ? `; kernel paths ${JSON.stringify(report.kernelPaths)}` : ''}`,
  );
  log(`${arch}: platform facts: ${report.platformFacts}`);
}

function main() {
  const { cacheDir } = require('../../../dist/util/cache-dir');
  const cache = cacheDir();
  log(`cache ${cache}; host ${os.cpus()[0]?.model || 'unknown CPU'}, ${os.cpus().length} cores`);

  let emulator;
  try {
    emulator = timed('emulator packages', () => ensureEmulator(cache, log));
  } catch (err) {
    if (!(err instanceof EmulatorUnavailable)) throw err;
    check(
      false,
      `Debian's arm64 Node and qemu-user-static could not be fetched into ${path.join(cache, 'arm64')}: ${err.message}. ` +
        'test:arm64 needs apt-get and the Debian package archive (the sources configured in /etc/apt); it cannot run on this machine',
    );
    return;
  }
  const version = spawnSync(
    ...(({ command, args, env }) => [command, args, { env, encoding: 'utf8' }])(
      emulatedNode(emulator, ['-p', 'process.arch + " " + process.version']),
    ),
  );
  if (
    !check(
      version.status === 0 && /^arm64 /.test(version.stdout),
      `the emulated Node runs: ${(version.stdout || version.stderr || '').trim()}`,
    )
  )
    return;

  const built = timed('npm run build:prebuilds (both platforms; nothing when current)', () =>
    spawnSync(process.execPath, [path.join(__dirname, '..', '..', 'build', 'prebuild.js')], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'inherit', 'inherit'],
    }),
  );
  if (
    !check(
      built.status === 0 && prebuild.prebuildIsCurrent(root),
      'both prebuilds are built from the sources as they are',
    )
  )
    return;

  // An installed-package layout: real copies (a symlink would resolve back to this checkout).
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-arm64-'));
  try {
    const pkg = path.join(work, 'package');
    fs.mkdirSync(pkg);
    fs.copyFileSync(path.join(root, 'package.json'), path.join(pkg, 'package.json'));
    fs.cpSync(path.join(root, 'dist'), path.join(pkg, 'dist'), { recursive: true });
    for (const t of prebuild.TARGETS) {
      fs.mkdirSync(path.dirname(prebuild.prebuildPath(pkg, t.platform)), { recursive: true });
      fs.copyFileSync(prebuild.prebuildPath(root, t.platform), prebuild.prebuildPath(pkg, t.platform));
    }
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(pkg, 'node_modules'));
    // qwen3's tiny model has head dim 16: on x86-64 the fused kernel takes its vector path (AVX2 or
    // AVX-512: D a multiple of 16), on arm64 the portable one, so the comparison spans both.
    const model = writeTinyGguf(makeTinyModel('qwen3', 7), path.join(work, 'tiny.gguf'));

    const x64 = runWorkload('x64', process.execPath, [], process.env, pkg, model);
    const emulated = emulatedNode(emulator, []);
    const arm64 = runWorkload('arm64 (emulated)', emulated.command, emulated.args, emulated.env, pkg, model);
    if (x64) checkReport(x64, 'x64', pkg);
    if (arm64) checkReport(arm64, 'arm64', pkg);
    if (!x64 || !arm64) return;
    const program = maxAbsDiff(arm64.program, x64.program);
    check(
      program <= TOLERANCE,
      `the StableHLO program's ${x64.program.length} outputs on arm64 within ${TOLERANCE} of x86-64 (max |diff| ${program.toExponential(2)})`,
    );
    const softmax = maxAbsDiff(arm64.softmax, x64.softmax);
    check(
      softmax <= TOLERANCE,
      `the tiny model's ${x64.softmax.flat().length} scores (softmax over the labels) on arm64 within ${TOLERANCE} of x86-64 (max |diff| ${softmax.toExponential(2)})`,
    );
    // The raw probabilities are exp(log p) with log p near -20: f32's rounding of log p (about 2e-6 at 20)
    // is their relative error, so 1e-5 relative would leave a margin of only a few ulps; 1e-4 is checked.
    const raw = maxRelDiff(arm64.scores, x64.scores);
    check(
      raw <= RAW_TOLERANCE,
      `its raw label probabilities (${Math.min(...x64.scores.flat()).toExponential(1)} to ${Math.max(...x64.scores.flat()).toExponential(1)}) within ${RAW_TOLERANCE} relative (max ${raw.toExponential(2)})`,
    );
    const flat = x64.softmax.flat();
    check(
      flat.every((x) => x > 0 && x < 1) && new Set(flat).size === flat.length,
      'the scores are in (0, 1) and all differ',
    );
    // The kernels' paths and the CPU class the platform facts are keyed by (native/kernels/kernel_isa.h,
    // lib/scoring/platform/profiles.ts): on arm64 the portable path, a class nothing was measured on.
    const paths = arm64.kernelPaths;
    check(
      paths && paths.cpu === 'portable' && paths.f32 === 'portable',
      `arm64: the attention kernels run their portable path (${JSON.stringify(paths)})`,
    );
    check(
      arm64.cpuClass &&
        arm64.cpuClass.isa === 'portable' &&
        arm64.cpuClass.measured === false &&
        /portable: not measured/.test(arm64.platformFacts),
      `arm64: the platform facts are the portable class's and say it was not measured there`,
    );
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

const started = Date.now();
try {
  main();
} catch (err) {
  check(false, `test:arm64 stopped: ${err.stack || err}`);
}
log(`test:arm64: ${((Date.now() - started) / 1000).toFixed(0)} s wall (emulation: not a performance figure)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
