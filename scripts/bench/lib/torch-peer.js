'use strict';
// The PyTorch CPU peer (scripts/bench/lib/torch-peer.py; docs/performance.md, "The
// PyTorch peer"): torch and transformers from PyPI, installed once into the
// cache with the tests' one pip-into-the-cache helper (pip --target), never
// into the project's dependencies. One Python process per workload: it loads
// the GGUF once, checks its label probabilities against ours in each
// precision before any time counts, then times each precision.
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { bytecodeEnv, pipTargetDir } = require('../../lib/pip-target');
const { GGUF_PY_VERSION } = require('../../../test/helpers/gguf-py');
const { request } = require('./workloads');

const TORCH_VERSION = '2.15.0';
const TRANSFORMERS_VERSION = '5.24.0';

/**
 * The gates the peer's probabilities must hold against ours (precision 'highest', true f32) before
 * it is timed: in f32 the plans' exactness gate (docs/design.md, Scoring semantics), and within
 * 1e-3 of each probability (the random-token workloads' probabilities are small, about 1e-5, so
 * the absolute gate alone would pass a wrong model); in bf16 (its activations bf16 too) the
 * accuracy gate of a reduced precision (docs/design.md, The accuracy gate).
 */
const GATES = { f32: { max: 1e-4, mean: 1e-4, relative: 1e-3 }, bf16: { max: 0.02, mean: 0.01 } };

/** PYTHONPATH with torch, transformers and gguf-py (transformers' GGUF reader) importable; each installed now if missing. */
function torchPythonPath() {
  const dirs = [
    pipTargetDir(`torch==${TORCH_VERSION}`, path.join('torch', '__init__.py')),
    pipTargetDir(`transformers==${TRANSFORMERS_VERSION}`, path.join('transformers', '__init__.py')),
    pipTargetDir(`gguf==${GGUF_PY_VERSION}`, path.join('gguf', 'quants.py')),
  ];
  return dirs.join(path.delimiter);
}

/**
 * One workload through the peer: { torch, transformers, threads, loadSeconds, f32: { seconds, maxDiff, meanDiff }, bf16: ... }.
 * `reference`: our label probabilities of the workload's timed request (variant 1) in true f32.
 */
function runTorchPeer({
  modelPath,
  workload,
  items,
  reference,
  precisions = ['f32', 'bf16'],
  threads = os.availableParallelism(),
}) {
  const job = {
    model: modelPath,
    threads,
    precisions,
    warm: request(workload, 0, items),
    timed: request(workload, 1, items),
    reference,
    gate: GATES,
  };
  const env = {
    ...process.env,
    ...bytecodeEnv(),
    PYTHONPATH: torchPythonPath(),
    PYTHONNOUSERSITE: '1',
    OMP_NUM_THREADS: String(threads),
  };
  const r = spawnSync('python3', [path.join(__dirname, 'torch-peer.py')], {
    input: JSON.stringify(job),
    encoding: 'utf8',
    env,
    maxBuffer: 1 << 26,
  });
  if (r.error) throw new Error(`the PyTorch peer needs python3: ${r.error.message}`);
  if (r.status !== 0)
    throw new Error(
      `the PyTorch peer failed on ${workload.name} (exit ${r.status}):\n${r.stderr.trim().split('\n').slice(-12).join('\n')}`,
    );
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  const result = {
    torch: out.torch,
    transformers: out.transformers,
    threads: out.threads,
    loadSeconds: out.load_seconds,
  };
  for (const [p, v] of Object.entries(out.precisions))
    result[p] = {
      seconds: v.seconds,
      maxDiff: v.max_diff,
      meanDiff: v.mean_diff,
      maxRelativeDiff: v.max_relative_diff,
    };
  return result;
}

module.exports = { runTorchPeer, torchPythonPath, GATES, TORCH_VERSION, TRANSFORMERS_VERSION };
