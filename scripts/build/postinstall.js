#!/usr/bin/env node
'use strict';
// Runs after `npm install` in this repository or from the tarball:
// 1. in a git checkout (lib/ present), compile the TypeScript to dist/;
// 2. fetch the CPU plugin and the default model into the cache.
// Set PJRT_SCORE_SKIP_FETCH=1 to skip step 2. The library does not need this
// script: Client.create() and Scorer.load() fetch what is missing on first use
// (npm may not run a dependency's scripts at all).
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

if (fs.existsSync(path.join(root, 'lib')) && fs.existsSync(path.join(root, 'tsconfig.json'))) {
  console.error('[pjrt-score] compiling TypeScript (lib/ -> dist/)');
  run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json']);
  run(process.execPath, [path.join(__dirname, 'write-esm-entry.js')]);
}

if (process.env.PJRT_SCORE_SKIP_FETCH === '1') {
  console.error('[pjrt-score] PJRT_SCORE_SKIP_FETCH=1: not fetching the plugin and model');
} else {
  run(process.execPath, [path.join(__dirname, 'fetch-plugin.js')]);
  run(process.execPath, [path.join(__dirname, 'fetch-model.js')]);
}
