'use strict';
/**
 * Runs test/helpers/decoder_reference.py (a float64 numpy forward pass of a
 * Hugging Face directory, independent of lib/) and returns its label
 * log-probabilities.
 *
 *   referenceLabelLogprobs(dir, sequences, labels) -> number[][]
 *
 * numpy comes from the system python3 when it has it, else it is installed
 * once with pip into the pjrt-score cache (python-numpy/), as the assets are.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { cacheDir } = require('../../dist/util/cache-dir');

const SCRIPT = path.join(__dirname, 'decoder_reference.py');

let env;

/** An environment in which python3 imports numpy (installing it into the cache when it must). */
function numpyEnv() {
  if (env) return env;
  const probe = (e) => spawnSync('python3', ['-c', 'import numpy'], { env: e, encoding: 'utf8' }).status === 0;
  if (probe(process.env)) return (env = process.env);
  const target = path.join(cacheDir(), 'python-numpy');
  const withTarget = { ...process.env, PYTHONPATH: [target, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) };
  if (!probe(withTarget)) {
    fs.mkdirSync(target, { recursive: true });
    const pip = spawnSync('python3', ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--target', target, 'numpy'], { encoding: 'utf8', timeout: 600000 });
    if (pip.status !== 0 || !probe(withTarget)) throw new Error(`cannot install numpy for the reference: ${pip.stderr}`);
  }
  return (env = withTarget);
}

function referenceLabelLogprobs(dir, sequences, labels) {
  const run = spawnSync('python3', [SCRIPT, dir], { input: JSON.stringify({ sequences, labels }), env: numpyEnv(), encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (run.status !== 0) throw new Error(`decoder_reference.py failed: ${run.stderr}`);
  return JSON.parse(run.stdout).logprobs;
}

module.exports = { referenceLabelLogprobs, numpyEnv };
