'use strict';
/**
 * A pinned Python package installed once with pip into the cache
 * (<cache>/python/<name>-<version>, `pip install --target`) and imported with
 * that folder on PYTHONPATH: the tests' independent references (gguf-py,
 * numpy, transformers, smg, ...) and the benchmarks' Python peers (torch),
 * the one copy of that step. No python3 or no pip is an error, not a skip.
 *
 *   pipTargetDir(requirement, marker, { noDeps }) -> the folder (marker: a file
 *     in it that shows a finished install, e.g. 'gguf/quants.py'; noDeps: the
 *     package alone, for one whose dependencies another folder already holds)
 *   python(args, env, input) -> spawnSync's result (throws when python3 cannot run;
 *     input: text for its stdin; compiled modules kept in <cache>/python/.pycache)
 *   bytecodeEnv() -> those two variables, for a Python run spawned elsewhere
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { cacheDir } = require('../../dist/util/cache-dir');

/**
 * Every Python run here keeps its compiled modules under <cache>/python/.pycache
 * (PYTHONPYCACHEPREFIX), even where PYTHONDONTWRITEBYTECODE is set: the packages
 * are installed without .pyc files (--no-compile), so a module is compiled on its
 * first import, once, and nothing is written outside the cache.
 */
function bytecodeEnv() {
  return { PYTHONPYCACHEPREFIX: path.join(cacheDir(), 'python', '.pycache'), PYTHONDONTWRITEBYTECODE: '' };
}

function python(args, env = {}, input = undefined) {
  const r = spawnSync('python3', args, {
    encoding: 'utf8',
    env: { ...process.env, ...bytecodeEnv(), ...env },
    maxBuffer: 64 << 20,
    input,
  });
  if (r.error)
    throw new Error(
      `python3 (with pip) is needed for the tests' Python references; running it failed: ${r.error.message}`,
    );
  return r;
}

/** `requirement` is `name==version`. */
function pipTargetDir(requirement, marker, { noDeps = false } = {}) {
  const dir = path.join(cacheDir(), 'python', requirement.replace('==', '-'));
  if (fs.existsSync(path.join(dir, marker))) return dir;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const staging = `${dir}.partial-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  // --no-compile: Python compiles the modules a run imports, not every module of every package
  // (torch, its nvidia-* wheels and transformers hold thousands); --no-cache-dir: the folder is the
  // one copy, and pip's own cache would be a second one of every wheel (torch's pull 2.9 GB).
  const r = python([
    '-m',
    'pip',
    'install',
    '--disable-pip-version-check',
    '--no-input',
    '--quiet',
    '--no-compile',
    '--no-cache-dir',
    '--target',
    staging,
    ...(noDeps ? ['--no-deps'] : []),
    requirement,
  ]);
  if (r.status !== 0) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw new Error(
      `pip install --target ${staging} ${requirement} failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-5).join('\n')}`,
    );
  }
  try {
    fs.renameSync(staging, dir);
  } catch (err) {
    // Another process put it in place first.
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(path.join(dir, marker))) throw err;
  }
  return dir;
}

module.exports = { pipTargetDir, python, bytecodeEnv };
