'use strict';
/**
 * gguf-py (PyPI `gguf`, llama.cpp's own Python package): an implementation
 * of GGUF reading and dequantization independent of lib/, used as the
 * reference for our decoders. Installed once with pip into the cache
 * (<cache>/python/gguf-<version>, `pip install --target`, numpy with it) and
 * run as `python3 -c SCRIPT ...` with that folder on PYTHONPATH.
 *
 *   runGgufPy(script, args) -> stdout; throws with pip's or python's message
 *   ggufPyEnv() -> the environment in which python3 imports gguf and numpy
 *   GGUF_PY_VERSION
 */
const path = require('node:path');
const { pipTargetDir, python } = require('../../scripts/lib/pip-target');

const GGUF_PY_VERSION = '0.19.0';

/** The variables that make gguf-py (and the numpy it brought) importable, installing it first when it must. */
function ggufPyEnv() {
  return {
    PYTHONPATH: pipTargetDir(`gguf==${GGUF_PY_VERSION}`, path.join('gguf', 'quants.py')),
    PYTHONNOUSERSITE: '1',
  };
}

/** Runs a Python script with gguf-py importable; returns its stdout. */
function runGgufPy(script, args = []) {
  const r = python(['-c', script, ...args], ggufPyEnv());
  if (r.status !== 0)
    throw new Error(`gguf-py script failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-8).join('\n')}`);
  return r.stdout;
}

module.exports = { GGUF_PY_VERSION, ggufPyEnv, runGgufPy };
