'use strict';
/**
 * gguf-py (PyPI `gguf`, llama.cpp's own Python package): an implementation
 * of GGUF reading and dequantization independent of lib/, used as the
 * reference for our decoders. Installed once with pip into the cache
 * (<cache>/python/gguf-<version>, `pip install --target`, numpy with it) and
 * run as `python3 -c SCRIPT ...` with that folder on PYTHONPATH.
 *
 *   runGgufPy(script, args) -> stdout; throws with pip's or python's message
 *   GGUF_PY_VERSION
 */
const path = require('node:path');
const { pipTargetDir, python } = require('../../scripts/lib/pip-target');

const GGUF_PY_VERSION = '0.19.0';

/** Runs a Python script with gguf-py importable; returns its stdout. */
function runGgufPy(script, args = []) {
  const dir = pipTargetDir(`gguf==${GGUF_PY_VERSION}`, path.join('gguf', 'quants.py'));
  const r = python(['-c', script, ...args], { PYTHONPATH: dir, PYTHONNOUSERSITE: '1' });
  if (r.status !== 0) throw new Error(`gguf-py script failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-8).join('\n')}`);
  return r.stdout;
}

module.exports = { GGUF_PY_VERSION, runGgufPy };
