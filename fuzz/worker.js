'use strict';
// Runs one fuzz target in this process and prints its figures as one JSON
// line prefixed with "@@fuzz ". Started by fuzz/run.js, which watches for a
// crash (the input being run is kept in --current).
const path = require('node:path');
const { fuzz } = require('./engine');
const targets = require('./targets');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

(async () => {
  const name = arg('target');
  if (!targets[name]) throw new Error(`unknown target ${name}; known: ${Object.keys(targets).join(', ')}`);
  const target = require(path.join(__dirname, 'targets', targets[name]));
  const result = await fuzz(target, {
    seconds: Number(arg('seconds', '10')),
    maxExecs: Number(arg('max-execs', 'Infinity')),
    delayMs: Number(arg('delay-ms', '0')),
    corpusDir: arg('corpus'),
    findingsDir: arg('findings'),
    currentFile: arg('current'),
    seed: Number(arg('seed', String(Date.now() % 2 ** 31))),
    log: (event) => console.log(`@@fuzz ${JSON.stringify(event)}`),
  });
  console.log(`@@fuzz ${JSON.stringify({ type: 'done', ...result })}`);
  // Native targets hold a client; exit without waiting on anything else.
  process.exit(0);
})().catch((error) => {
  console.error(error);
  process.exit(2);
});
