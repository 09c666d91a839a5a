'use strict';
/**
 * Runs test/helpers/decoder_reference.py (a float64 numpy forward pass of a
 * Hugging Face directory, independent of lib/) and returns its label
 * log-probabilities.
 *
 *   referenceLabelLogprobs(dir, sequences, labels) -> number[][]
 *
 * numpy comes from the system python3 when it has it, else it is installed
 * once with pip into the pjrt-score cache (scripts/lib/pip-target.js).
 */
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { bytecodeEnv, pipTargetDir, python } = require('../../scripts/lib/pip-target');

const SCRIPT = path.join(__dirname, 'decoder_reference.py');
const NUMPY = 'numpy==2.4.6';

let env;

/** An environment in which python3 imports numpy (installing it into the cache when it must). */
function numpyEnv() {
  if (env) return env;
  if (python(['-c', 'import numpy']).status === 0) return (env = { ...process.env, ...bytecodeEnv() });
  const dir = pipTargetDir(NUMPY, path.join('numpy', '__init__.py'));
  return (env = {
    ...process.env,
    ...bytecodeEnv(),
    PYTHONPATH: [dir, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
  });
}

function referenceLabelLogprobs(dir, sequences, labels) {
  const run = spawnSync('python3', [SCRIPT, dir], {
    input: JSON.stringify({ sequences, labels }),
    env: numpyEnv(),
    encoding: 'utf8',
    maxBuffer: 64 * 2 ** 20,
  });
  if (run.status !== 0) throw new Error(`decoder_reference.py failed: ${run.stderr}`);
  return JSON.parse(run.stdout).logprobs;
}

module.exports = { referenceLabelLogprobs, numpyEnv };
