'use strict';
// The two CPU peers of npm run bench's models section (docs/performance.md, "By model"), on the same
// Hugging Face directory as pjrt-score, one precision per Python process (so each has its own peak
// RSS, and a 4B model in f32 never shares memory with its bf16 copy):
//   PyTorch   scripts/bench/lib/torch-peer.py (from_pretrained in the precision's dtype)
//   OpenVINO  scripts/bench/lib/openvino-peer.py (its graph exported once into <dir>/openvino-<version>-<hash>,
//             compiled with INFERENCE_PRECISION_HINT f32 or bf16)
// Each checks its label probabilities against ours ('highest') with torch-peer.js's GATES before
// any time counts. openvino comes from PyPI, pinned, installed once into the cache like torch.
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { bytecodeEnv, pipTargetDir } = require('../../lib/pip-target');
const { GATES, torchPythonPath } = require('./torch-peer');

const OPENVINO_VERSION = '2026.4.1';

/** PYTHONPATH for the OpenVINO peer: openvino, and torch + transformers + safetensors for its export. */
function openvinoPythonPath() {
  return [pipTargetDir(`openvino==${OPENVINO_VERSION}`, path.join('openvino', '__init__.py')), torchPythonPath()].join(
    path.delimiter,
  );
}

function runPython(script, job, pythonPath, threads, label) {
  const env = {
    ...process.env,
    ...bytecodeEnv(),
    PYTHONPATH: pythonPath,
    PYTHONNOUSERSITE: '1',
    OMP_NUM_THREADS: String(threads),
  };
  const r = spawnSync('python3', [path.join(__dirname, script)], {
    input: JSON.stringify(job),
    encoding: 'utf8',
    env,
    maxBuffer: 1 << 26,
  });
  if (r.error) throw new Error(`${label} needs python3: ${r.error.message}`);
  if (r.status !== 0)
    throw new Error(`${label} failed (exit ${r.status}):\n${r.stderr.trim().split('\n').slice(-12).join('\n')}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

/**
 * The PyTorch peer in one precision: { version, threads, precision, loadSeconds, seconds, allSeconds,
 * peakRssBytes, maxDiff, meanDiff, maxRelativeDiff }. `reference`: our 'highest' probabilities of timed[0].
 */
function runTorchModelPeer({ dir, precision, warm, timed, reference, threads = os.availableParallelism() }) {
  const job = { model: dir, threads, precisions: [precision], warm, timed, reference, gate: GATES };
  const out = runPython('torch-peer.py', job, torchPythonPath(), threads, `the PyTorch peer (${precision})`);
  const p = out.precisions[precision];
  return {
    version: `torch ${out.torch}, transformers ${out.transformers}`,
    threads: out.threads,
    precision,
    loadSeconds: p.load_seconds,
    seconds: p.seconds,
    allSeconds: p.all_seconds,
    peakRssBytes: out.peak_rss_bytes,
    maxDiff: p.max_diff,
    meanDiff: p.mean_diff,
    maxRelativeDiff: p.max_relative_diff,
  };
}

/**
 * The OpenVINO graph of `dir`, exported once (kept beside the checkpoint, in a folder named by the
 * openvino version and a hash of openvino-peer.py, so a changed graph is exported anew):
 * { ir, exportSeconds | null (already there) }.
 */
function openvinoIr(dir) {
  const script = fs.readFileSync(path.join(__dirname, 'openvino-peer.py'));
  const ir = path.join(
    dir,
    `openvino-${OPENVINO_VERSION}-${crypto.createHash('sha256').update(script).digest('hex').slice(0, 12)}`,
  );
  if (fs.existsSync(path.join(ir, 'scorer.xml'))) return { ir, exportSeconds: null };
  const out = runPython(
    'openvino-peer.py',
    { mode: 'export', model: dir, ir },
    openvinoPythonPath(),
    os.availableParallelism(),
    'the OpenVINO export',
  );
  return { ir, exportSeconds: out.seconds };
}

/** The OpenVINO peer in one inference precision: the same fields as runTorchModelPeer's (precision: what the plugin reports). */
function runOpenvinoPeer({ dir, precision, warm, timed, reference, threads = os.availableParallelism() }) {
  const { ir } = openvinoIr(dir);
  const job = { mode: 'run', model: dir, ir, threads, precision, warm, timed, reference, gate: GATES[precision] };
  const out = runPython('openvino-peer.py', job, openvinoPythonPath(), threads, `the OpenVINO peer (${precision})`);
  return {
    version: `openvino ${out.openvino}`,
    threads: out.threads,
    precision: out.precision,
    loadSeconds: out.load_seconds,
    seconds: out.seconds,
    allSeconds: out.all_seconds,
    peakRssBytes: out.peak_rss_bytes,
    maxDiff: out.max_diff,
    meanDiff: out.mean_diff,
    maxRelativeDiff: out.max_relative_diff,
  };
}

module.exports = { runTorchModelPeer, runOpenvinoPeer, openvinoIr, openvinoPythonPath, OPENVINO_VERSION };
