#!/usr/bin/env node
'use strict';
// `npm run build:prebuilds`: the shipped binaries, one per platform of TARGETS
// (prebuilds/linux-x64/ and prebuilds/linux-arm64/, each
// pjrt-score.glibc.napi.node), built the same way as the from-source fallback
// (cmake-js, Node-API headers from the node-api-headers package: no header
// download), but with zig's C++ toolchain targeting glibc GLIBC_TARGET, so
// they load on older Linux than the build machine's. zig cross-compiles: both
// are built on an x86-64 machine, each in its own build folder. zig comes from PyPI (ziglang, pinned, sha256
// checked) and lives in the cache dir with its own build cache, never in git.
// zig links libc++ statically: the binary needs no GLIBCXX_ version at all.
// Measured: Debian 12's gcc needs glibc 2.34 (2.36 with -static-libstdc++);
// this build needs GLIBC_2.16 at most. The build folder (build/prebuild) is
// kept, so a second run only recompiles what changed; and a run whose inputs
// (native sources, build files, this script, the Node-API headers' versions)
// hash the same as the last build's, with that build's file still in place,
// builds nothing for that platform (--force builds anyway). `npm pack` runs it
// (prepack, before `npm run build`), and the package and prebuild tests run it
// too: with the stamp the addon is compiled once per change.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');

/** The oldest glibc the prebuild supports; README.md states the same number and test/prebuild.test.js checks both. */
const GLIBC_TARGET = '2.17';

const ZIG = {
  label: 'zig toolchain (for prebuilds)',
  requirement: 'ziglang==0.15.2',
  wheelFile: 'ziglang-0.15.2-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64.whl',
  wheelSha256: '806316453d1ede7174ed3fefb8e5348154629089c3bb5fe812dfd0e172fac130',
  pipArgs: ['--only-binary=:all:', '--platform', 'manylinux_2_12_x86_64', '--python-version', '3.11'],
};

/** The machine prebuilds are made on (the zig wheel above is its build). */
const PLATFORM = 'linux-x64';

/**
 * What `npm run build:prebuilds` makes: per node-gyp-build platform folder, zig's
 * target triple and the cmake-js build folder (outside build/Release and
 * build/Debug, where node-gyp-build would look). docs/install.md's platforms table
 * lists the same platforms.
 */
const TARGETS = [
  { platform: 'linux-x64', zigTarget: 'x86_64-linux-gnu', buildDir: path.join('build', 'prebuild') },
  { platform: 'linux-arm64', zigTarget: 'aarch64-linux-gnu', buildDir: path.join('build', 'prebuild-arm64') },
];
const PREBUILD_NAME = 'pjrt-score.glibc.napi.node';

function target(platform) {
  const t = TARGETS.find((x) => x.platform === platform);
  if (!t)
    throw new Error(`no prebuild target ${platform}; the targets are ${TARGETS.map((x) => x.platform).join(', ')}`);
  return t;
}

function prebuildPath(dir = root, platform = PLATFORM) {
  return path.join(dir, 'prebuilds', target(platform).platform, PREBUILD_NAME);
}

const log = (line) => console.error(`[pjrt-score] ${line}`);

/** Where the digest of the last build's inputs and output is kept (not in prebuilds/: that folder is shipped). */
function stampPath(dir = root, platform = PLATFORM) {
  return path.join(dir, target(platform).buildDir, 'prebuild-inputs.sha256');
}

/** What the prebuild is made from, as files: a change to any of them makes it stale. */
function inputFiles(dir = root) {
  const native = fs
    .readdirSync(path.join(dir, 'native'), { recursive: true })
    .filter((f) => /\.(h|cc)$/.test(f))
    .sort()
    .map((f) => path.join(dir, 'native', f));
  const headers = ['node-addon-api', 'node-api-headers'].map((name) =>
    require.resolve(`${name}/package.json`, { paths: [dir] }),
  );
  return [...native, path.join(dir, 'CMakeLists.txt'), __filename, ...headers];
}

function sha256(data) {
  return require('node:crypto').createHash('sha256').update(data).digest('hex');
}

/** The inputs' digest and the prebuild's own, as one line; null when there is no prebuild. */
function currentStamp(dir = root, platform = PLATFORM) {
  const file = prebuildPath(dir, platform);
  if (!fs.existsSync(file)) return null;
  const inputs = sha256(
    inputFiles(dir)
      .map((f) => `${path.relative(dir, f)}\0${sha256(fs.readFileSync(f))}`)
      .join('\n'),
  );
  return `inputs ${inputs} prebuild ${sha256(fs.readFileSync(file))}\n`;
}

/** True when the platform's prebuild in place was built by this script from the inputs as they are now. */
function prebuildIsCurrentFor(dir, platform) {
  const stamp = currentStamp(dir, platform);
  const file = stampPath(dir, platform);
  return stamp !== null && fs.existsSync(file) && fs.readFileSync(file, 'utf8') === stamp;
}

/** True when every platform's prebuild is current (`platform`: just that one). */
function prebuildIsCurrent(dir = root, platform = null) {
  return (platform ? [platform] : TARGETS.map((t) => t.platform)).every((p) => prebuildIsCurrentFor(dir, p));
}

/** A compiled module of the library; prepack runs this script before `npm run build`, so dist/ may not exist yet. */
function distModule(rel) {
  const file = path.join(root, 'dist', rel);
  if (!fs.existsSync(`${file}.js`)) {
    log('dist/ is missing: compiling TypeScript first');
    const r = spawnSync(
      process.execPath,
      [require.resolve('typescript/bin/tsc', { paths: [root] }), '-p', 'tsconfig.json'],
      { cwd: root, stdio: 'inherit' },
    );
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
      const code = await runToStderr('python3', [
        '-m',
        'pip',
        'install',
        '-q',
        '--no-deps',
        '--no-index',
        '--disable-pip-version-check',
        '--target',
        partial,
        wheel,
      ]);
      if (code !== 0) throw new Error(`pip install ${path.basename(wheel)} failed with exit code ${code}`);
      fs.renameSync(partial, dir);
      return zig;
    } finally {
      fs.rmSync(partial, { recursive: true, force: true });
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
}

/** A one-file compiler for CMake: zig c++ for the target's glibc, with zig's cache in the cache dir. */
function writeCompilerWrapper(zig, t) {
  const { cacheDir } = distModule('util/cache-dir');
  const zigCache = path.join(cacheDir(), 'toolchains', 'zig-cache');
  const wrapper = path.join(root, t.buildDir, `zig-c++-${t.zigTarget}.${GLIBC_TARGET}`);
  fs.mkdirSync(path.dirname(wrapper), { recursive: true });
  const q = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
  const text =
    '#!/bin/sh\n# Written by scripts/build/prebuild.js.\n' +
    `ZIG_GLOBAL_CACHE_DIR=${q(zigCache)} ZIG_LOCAL_CACHE_DIR=${q(zigCache)} exec ${q(zig)} c++ -target ${t.zigTarget}.${GLIBC_TARGET} "$@"\n`;
  if (!fs.existsSync(wrapper) || fs.readFileSync(wrapper, 'utf8') !== text)
    fs.writeFileSync(wrapper, text, { mode: 0o755 });
  return wrapper;
}

/** Builds one platform's prebuild (cmake-js in its own build folder) and writes its stamp. */
function buildTarget(zig, t) {
  fs.rmSync(stampPath(root, t.platform), { force: true });
  const wrapper = writeCompilerWrapper(zig, t);
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js', { paths: [root] });
  const target = prebuildPath(root, t.platform);
  log(
    `building ${path.relative(root, target)} with zig c++ for ${t.zigTarget}, glibc ${GLIBC_TARGET} (cmake-js, ${t.buildDir}/)`,
  );
  // -s: strip at link time (no binutils needed).
  const r = spawnSync(
    process.execPath,
    [cmakeJs, 'compile', '--out', t.buildDir, `--CDCMAKE_CXX_COMPILER=${wrapper}`, '--CDCMAKE_SHARED_LINKER_FLAGS=-s'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  if (r.status !== 0) throw new Error(`cmake-js failed for ${t.platform} (exit ${r.status ?? r.signal})`);
  const built = path.join(root, t.buildDir, 'Release', 'pjrt_score.node');
  fs.mkdirSync(path.dirname(target), { recursive: true });
  // Only this one file in the folder: an older prebuild must not be picked instead.
  for (const f of fs.readdirSync(path.dirname(target)))
    if (f.endsWith('.node') && f !== PREBUILD_NAME) fs.rmSync(path.join(path.dirname(target), f));
  const tmp = `${target}.tmp-${process.pid}`;
  fs.copyFileSync(built, tmp);
  fs.renameSync(tmp, target);
  fs.writeFileSync(stampPath(root, t.platform), currentStamp(root, t.platform));
  log(`prebuild ready: ${path.relative(root, target)} (${(fs.statSync(target).size / 1024).toFixed(0)} KiB)`);
}

async function main() {
  if (`${process.platform}-${process.arch}` !== PLATFORM) {
    throw new Error(
      `prebuilds are made on ${PLATFORM} (this is ${process.platform}-${process.arch}); build from source with npm run build:native`,
    );
  }
  // --platform linux-arm64 (repeatable): only those; default: every target.
  const named = process.argv.flatMap((a, i) => (a === '--platform' ? [process.argv[i + 1]] : []));
  const targets = named.length ? named.map(target) : TARGETS;
  const force = process.argv.includes('--force');
  let zig = null;
  for (const t of targets) {
    if (!force && prebuildIsCurrentFor(root, t.platform)) {
      log(
        `prebuild is current: ${path.relative(root, prebuildPath(root, t.platform))} was built from these inputs (${path.relative(root, stampPath(root, t.platform))}); nothing to do (--force builds anyway)`,
      );
      continue;
    }
    zig ??= await ensureZig();
    buildTarget(zig, t);
  }
}

module.exports = { GLIBC_TARGET, ZIG, PLATFORM, TARGETS, PREBUILD_NAME, prebuildPath, prebuildIsCurrent, stampPath };

if (require.main === module) {
  main().catch((err) => {
    log(err.message);
    process.exit(1);
  });
}
