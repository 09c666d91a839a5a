#!/usr/bin/env node
'use strict';
// `npm run prebuild`: the shipped binary, prebuilds/linux-x64/pjrt-score.glibc.napi.node,
// built the same way as the from-source fallback (cmake-js, Node-API headers
// from the node-api-headers package: no header download), but with zig's
// C++ toolchain targeting glibc GLIBC_TARGET, so it loads on older Linux
// than the build machine's. zig comes from PyPI (ziglang, pinned, sha256
// checked) and lives in the cache dir with its own build cache, never in git.
// zig links libc++ statically: the binary needs no GLIBCXX_ version at all.
// Measured: Debian 12's gcc needs glibc 2.34 (2.36 with -static-libstdc++);
// this build needs GLIBC_2.16 at most. The build folder (build/prebuild) is
// kept, so a second run only recompiles what changed.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');

/** The oldest glibc the prebuild supports; README.md states the same number and test/prebuild.test.js checks both. */
const GLIBC_TARGET = '2.17';

const ZIG = {
  label: 'zig toolchain (for prebuilds)',
  requirement: 'ziglang==0.15.2',
  wheelFile: 'ziglang-0.15.2-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64.whl',
  wheelSha256: '806316453d1ede7174ed3fefb8e5348154629089c3bb5fe812dfd0e172fac130',
  pipArgs: ['--only-binary=:all:', '--platform', 'manylinux_2_12_x86_64', '--python-version', '3.11'],
};

const PLATFORM = 'linux-x64';
const PREBUILD_NAME = 'pjrt-score.glibc.napi.node';
const BUILD_DIR = path.join('build', 'prebuild'); // node-gyp-build only looks in build/Release and build/Debug

function prebuildPath(dir = root) {
  return path.join(dir, 'prebuilds', PLATFORM, PREBUILD_NAME);
}

const log = (line) => console.error(`[pjrt-score] ${line}`);

/** A compiled module of the library; npm runs this script before `build`, so dist/ may not exist yet. */
function distModule(rel) {
  const file = path.join(root, 'dist', rel);
  if (!fs.existsSync(`${file}.js`)) {
    log('dist/ is missing: compiling TypeScript first');
    const r = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc', { paths: [root] }), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('tsc failed');
  }
  return require(file);
}

/** zig from PyPI, installed once into <cache>/toolchains/ziglang-<version>; returns the zig binary. */
async function ensureZig() {
  const { cacheDir } = distModule('util/cache-dir');
  const { withFileLock } = distModule('assets/file-lock');
  const { downloadVerifiedWheel, runToStderr, uniqueSibling } = distModule('assets/wheel-fetch');
  const toolchains = path.join(cacheDir(), 'toolchains');
  const dir = path.join(toolchains, ZIG.requirement.replace('==', '-'));
  const zig = path.join(dir, 'ziglang', 'zig');
  if (fs.existsSync(zig)) return zig;
  fs.mkdirSync(toolchains, { recursive: true });
  return withFileLock(`${dir}.lock`, async () => {
    if (fs.existsSync(zig)) return zig;
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-zig-'));
    const partial = uniqueSibling(dir, 'partial');
    try {
      const wheel = await downloadVerifiedWheel(ZIG, work);
      // pip install (not a plain unzip) keeps the executable bits.
      log(`${ZIG.label}: installing into ${dir}`);
      const code = await runToStderr('python3', ['-m', 'pip', 'install', '-q', '--no-deps', '--no-index', '--disable-pip-version-check', '--target', partial, wheel]);
      if (code !== 0) throw new Error(`pip install ${path.basename(wheel)} failed with exit code ${code}`);
      fs.renameSync(partial, dir);
      return zig;
    } finally {
      fs.rmSync(partial, { recursive: true, force: true });
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
}

/** A one-file compiler for CMake: zig c++ for the glibc target, with zig's cache in the cache dir. */
function writeCompilerWrapper(zig) {
  const { cacheDir } = distModule('util/cache-dir');
  const zigCache = path.join(cacheDir(), 'toolchains', 'zig-cache');
  const wrapper = path.join(root, BUILD_DIR, `zig-c++-glibc${GLIBC_TARGET}`);
  fs.mkdirSync(path.dirname(wrapper), { recursive: true });
  const q = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
  const text =
    '#!/bin/sh\n# Written by scripts/prebuild.js.\n' +
    `ZIG_GLOBAL_CACHE_DIR=${q(zigCache)} ZIG_LOCAL_CACHE_DIR=${q(zigCache)} exec ${q(zig)} c++ -target x86_64-linux-gnu.${GLIBC_TARGET} "$@"\n`;
  if (!fs.existsSync(wrapper) || fs.readFileSync(wrapper, 'utf8') !== text) fs.writeFileSync(wrapper, text, { mode: 0o755 });
  return wrapper;
}

async function main() {
  if (`${process.platform}-${process.arch}` !== PLATFORM) {
    throw new Error(`prebuilds are made on ${PLATFORM} (this is ${process.platform}-${process.arch}); build from source with npm run build:native`);
  }
  const zig = await ensureZig();
  const wrapper = writeCompilerWrapper(zig);
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js', { paths: [root] });
  log(`building ${path.relative(root, prebuildPath())} with zig c++ for glibc ${GLIBC_TARGET} (cmake-js, ${BUILD_DIR}/)`);
  // -s: strip at link time (no binutils needed).
  const r = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', BUILD_DIR, `--CDCMAKE_CXX_COMPILER=${wrapper}`, '--CDCMAKE_SHARED_LINKER_FLAGS=-s'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error(`cmake-js failed (exit ${r.status ?? r.signal})`);
  const built = path.join(root, BUILD_DIR, 'Release', 'pjrt_score.node');
  const target = prebuildPath();
  fs.mkdirSync(path.dirname(target), { recursive: true });
  // Only this one file in the folder: an older prebuild must not be picked instead.
  for (const f of fs.readdirSync(path.dirname(target))) if (f.endsWith('.node') && f !== PREBUILD_NAME) fs.rmSync(path.join(path.dirname(target), f));
  const tmp = `${target}.tmp-${process.pid}`;
  fs.copyFileSync(built, tmp);
  fs.renameSync(tmp, target);
  log(`prebuild ready: ${path.relative(root, target)} (${(fs.statSync(target).size / 1024).toFixed(0)} KiB)`);
}

module.exports = { GLIBC_TARGET, ZIG, PLATFORM, PREBUILD_NAME, prebuildPath };

if (require.main === module) {
  main().catch((err) => {
    log(err.message);
    process.exit(1);
  });
}
