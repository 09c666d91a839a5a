'use strict';
// compile(): mutated StableHLO text through the public API to the plugin's
// MLIR parser and compiler (on the addon's large-stack thread). JS coverage
// cannot see inside the plugin, so the engine also counts each new kind of
// diagnostic as new behaviour.
const fs = require('node:fs');
const path = require('node:path');
const { DIST, scriptsUnder } = require('./common');
const { sharedClient, expected } = require('./native');

const SEEDS = path.join(__dirname, '..', 'seeds', 'compile');
let client = null;

async function setup() {
  client = await sharedClient();
}

function seeds() {
  const out = fs
    .readdirSync(SEEDS)
    .sort()
    .map((f) => fs.readFileSync(path.join(SEEDS, f)));
  const { programs } = require(path.join(DIST, 'hlo'));
  out.push(
    Buffer.from(
      programs.lmHeadGather({ tokens: 4, hiddenSize: 4, gatherCount: 2, vocabSize: 8, labelCount: 2, eps: 1e-5 }).text,
    ),
  );
  return out;
}

async function run(data) {
  const exe = await client.compile(data.toString('utf8'));
  exe.dispose();
}

module.exports = {
  name: 'native-compile',
  smokeExecs: 300,
  maxLength: 1 << 13,
  timeoutMs: 60_000,
  scripts: scriptsUnder('dist/runtime/'),
  setup,
  seeds,
  run,
  expected,
  dictionary: [
    'func.func',
    '@main',
    'stablehlo.',
    'tensor<',
    'xf32>',
    'xi32>',
    'bf16',
    'i1',
    'f64',
    'ui8',
    'complex<f32>',
    'tuple<',
    '!stablehlo.token',
    '%0',
    '%arg0',
    '->',
    'return',
    '^bb0(',
    'dense<',
    'array<i64: ',
    '#stablehlo<',
    'stablehlo.while',
    'stablehlo.reduce',
    'stablehlo.custom_call',
    'stablehlo.dot_general',
    'stablehlo.broadcast_in_dim',
    'stablehlo.reshape',
    'stablehlo.iota',
    'stablehlo.rng',
    'stablehlo.sort',
    'stablehlo.gather',
    'stablehlo.dynamic_slice',
    'stablehlo.pad',
    'stablehlo.transpose',
    'stablehlo.constant',
    'stablehlo.convolution',
    'stablehlo.fft',
    'dimensions = [',
    'module @m {',
    '}',
    '{',
    '(',
    ')',
    '"',
    'x',
    '?x',
    '0x7FC00000',
    'loc(',
    '#loc',
    'sym_name',
    'attributes {',
  ],
};
