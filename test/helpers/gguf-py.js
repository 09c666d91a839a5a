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
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { cacheDir } = require('../../dist/util/cache-dir');

const GGUF_PY_VERSION = '0.19.0';

function python(args, env) {
  const r = spawnSync('python3', args, { encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 64 << 20 });
  if (r.error) {
    throw new Error(`the gguf-py reference needs python3 with pip (python3 -m pip install gguf==${GGUF_PY_VERSION}); running python3 failed: ${r.error.message}`);
  }
  return r;
}

/** The folder gguf-py is installed in, installing it first if needed. */
function ggufPyDir() {
  const dir = path.join(cacheDir(), 'python', `gguf-${GGUF_PY_VERSION}`);
  if (fs.existsSync(path.join(dir, 'gguf', 'quants.py'))) return dir;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const staging = `${dir}.partial-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  const r = python(['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--quiet', '--target', staging, `gguf==${GGUF_PY_VERSION}`]);
  if (r.status !== 0) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw new Error(`the gguf-py reference: pip install --target ${staging} gguf==${GGUF_PY_VERSION} failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-5).join('\n')}`);
  }
  try {
    fs.renameSync(staging, dir);
  } catch (err) {
    // Another process put it in place first.
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(path.join(dir, 'gguf', 'quants.py'))) throw err;
  }
  return dir;
}

/** Runs a Python script with gguf-py importable; returns its stdout. */
function runGgufPy(script, args = []) {
  const dir = ggufPyDir();
  const r = python(['-c', script, ...args], { PYTHONPATH: dir, PYTHONNOUSERSITE: '1' });
  if (r.status !== 0) throw new Error(`gguf-py script failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-8).join('\n')}`);
  return r.stdout;
}

module.exports = { GGUF_PY_VERSION, runGgufPy };
