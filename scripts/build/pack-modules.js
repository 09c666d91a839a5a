'use strict';
// Development packages for a device machine without npm, each with every
// package it requires, as node_modules/... in one archive (the package bundle
// holds production dependencies only). scripts/lab/gpu/prepare-carry.sh packs
// autocannon (the GPU run's HTTP step: scripts/lab/gpu/call-common.sh puts it on
// NODE_PATH) and tape (the AMX host check's test files:
// scripts/lab/cpu/amx-host-check.sh).
//
//   node scripts/build/pack-modules.js --out FILE.tar.gz PACKAGE [PACKAGE ...]
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.join(__dirname, '..', '..');

/** The package directory `name` resolves to from `from` (a package directory), walking up node_modules as Node does. */
function packageDir(name, from) {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === root || dir === path.dirname(dir))
      throw new Error(`${name} (needed from ${path.relative(root, from) || '.'}) is not installed: run npm install`);
  }
}

/** Every package directory `names` need, transitively (dependencies and installed optional ones). */
function closure(names) {
  const seen = new Set();
  const visit = (name, from) => {
    const dir = packageDir(name, from);
    if (seen.has(dir)) return;
    seen.add(dir);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    for (const dep of Object.keys(pkg.dependencies || {})) visit(dep, dir);
    for (const dep of Object.keys(pkg.optionalDependencies || {})) {
      try {
        visit(dep, dir);
      } catch {
        // an optional dependency not installed here is not needed
      }
    }
  };
  for (const n of names) visit(n, root);
  return [...seen].map((d) => path.relative(root, d)).sort();
}

const argv = process.argv.slice(2);
const at = argv.indexOf('--out');
const roots = argv.filter((a, i) => i !== at && i !== at + 1);
if (at < 0 || !argv[at + 1] || roots.length === 0)
  throw new Error('usage: node scripts/build/pack-modules.js --out FILE.tar.gz PACKAGE [PACKAGE ...]');
const out = path.resolve(argv[at + 1]);
const dirs = closure(roots);
execFileSync('tar', ['czf', out, '-C', root, ...dirs]);
process.stdout.write(`${out}: ${dirs.length} packages, ${(fs.statSync(out).size / 2 ** 20).toFixed(1)} MiB\n`);
