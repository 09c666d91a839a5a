#!/usr/bin/env node
'use strict';
// The pjrt-score command line: serve, score, fetch. The code is in
// lib/cli/ (compiled to dist/cli/); this file only runs it.
let cli;
try {
  cli = require('../dist/cli');
} catch (err) {
  if (err && err.code === 'MODULE_NOT_FOUND' && /dist[\\/]cli/.test(err.message)) {
    console.error('pjrt-score: the compiled library is missing (dist/). Build it with:  npm run build');
    process.exit(1);
  }
  throw err;
}

cli.main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`pjrt-score: ${err && err.stack ? err.stack : err}`);
    process.exit(1);
  },
);
