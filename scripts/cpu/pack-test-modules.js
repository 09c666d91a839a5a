#!/usr/bin/env node
'use strict';
// The test runner's modules for a machine without npm (the AMX host check,
// scripts/cpu/amx-host-check.sh): tape and everything it requires, resolved
// from this checkout's node_modules the way Node resolves them, archived as
// node_modules/... beside the bundle's.
//
//   node scripts/cpu/pack-test-modules.js OUT.tar.gz
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const out = path.resolve(process.argv[2] || 'test-modules.tar.gz');

/** The folder of package `name` as required from `fromDir` (nested node_modules first, then up). */
function packageDir(name, fromDir) {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === root || dir === path.dirname(dir)) throw new Error(`${name} (needed from ${path.relative(root, fromDir)}) is not installed: run npm install`);
  }
}

const seen = new Set();
const queue = [packageDir('tape', root)];
while (queue.length) {
  const dir = queue.pop();
  if (seen.has(dir)) continue;
  seen.add(dir);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  for (const name of Object.keys(pkg.dependencies || {})) queue.push(packageDir(name, dir));
}
const entries = [...seen].map((d) => path.relative(root, d)).sort();
execFileSync('tar', ['czf', out, '-C', root, ...entries]);
process.stdout.write(`${out}: ${(fs.statSync(out).size / 2 ** 20).toFixed(1)} MiB (${entries.length} packages)\n`);
