'use strict';
// node-llama-cpp lives outside the project's dependencies: installed on demand in the cache.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** The node_modules directory that holds node-llama-cpp@3.22.1 (installed now if missing). */
function llamaCppModules() {
  const { cacheDir } = require('../../../dist/util/cache-dir');
  const dir = path.join(cacheDir(), 'bench-peers');
  const modules = path.join(dir, 'node_modules');
  if (!fs.existsSync(path.join(modules, 'node-llama-cpp'))) {
    fs.mkdirSync(dir, { recursive: true });
    if (!fs.existsSync(path.join(dir, 'package.json')))
      fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"pjrt-score-bench-peers","private":true}\n');
    process.stderr.write(`[bench] installing node-llama-cpp@3.22.1 into ${dir} (once)\n`);
    const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', 'node-llama-cpp@3.22.1'], {
      cwd: dir,
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error('could not install node-llama-cpp');
  }
  return modules;
}

module.exports = { llamaCppModules };
