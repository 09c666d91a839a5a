#!/usr/bin/env node
'use strict';
// The package's "install" step: the native addon, built at most once.
// - An installed copy (no lib/): if the shipped prebuild for this platform
//   loads, there is nothing to build.
// - Otherwise (a git checkout, no prebuild for this platform, or one that does
//   not load here, e.g. on a musl libc), build from source once with cmake-js.
//   Its Node-API headers come from the node-api-headers package, so nothing is
//   downloaded outside the npm registry (node-gyp would fetch Node's headers).
// npm_config_build_from_source=true (`npm install --build-from-source`) forces the build.
// A checkout always builds: node-gyp-build prefers build/Release over
// prebuilds/, and an incremental build keeps build/ in step with native/.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const log = (line) => console.error(`[pjrt-score] ${line}`);

/** Loads the prebuild (never build/) in a child process, so a failed dlopen cannot take this one down. */
function loadPrebuild() {
  const loader = require.resolve('node-gyp-build', { paths: [root] });
  const script = `const l = require(${JSON.stringify(loader)}); const f = l.resolve(${JSON.stringify(root)}); require(f); process.stdout.write(f);`;
  const r = spawnSync(process.execPath, ['-e', script], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, PREBUILDS_ONLY: '1' },
  });
  if (r.status === 0) return { file: r.stdout.trim() };
  const reason = (r.stderr || '').split('\n').find((l) => /Error/.test(l)) || `exit ${r.status}`;
  return { reason: reason.trim() };
}

function buildFromSource() {
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js', { paths: [root] });
  log('building the native addon from source with cmake-js (needs cmake and a C++17 compiler)');
  const r = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'build'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    log(
      `cmake-js failed (exit ${r.status ?? r.signal}). Install cmake and a C++17 compiler, then run: npm rebuild pjrt-score`,
    );
    process.exit(r.status || 1);
  }
}

const checkout = fs.existsSync(path.join(root, 'lib')) && fs.existsSync(path.join(root, 'tsconfig.json'));
const forced = process.env.npm_config_build_from_source === 'true';
if (checkout || forced) {
  buildFromSource();
} else {
  const prebuild = loadPrebuild();
  if (prebuild.file) {
    log(`using the prebuilt addon ${path.relative(root, prebuild.file)}: nothing to compile`);
  } else {
    log(`no prebuilt addon loads here (${prebuild.reason})`);
    buildFromSource();
  }
}
