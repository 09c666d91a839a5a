'use strict';
/**
 * Python's huggingface_hub (PyPI, the hub's own client), installed once with
 * pip into the cache (<cache>/python/huggingface_hub-<version>, `pip install
 * --target`) and run with that folder on PYTHONPATH: the independent client
 * that proves the stand-in hub speaks the protocol and writes the cache
 * layout pjrt-score must read. No python3 or no pip is an error, not a skip.
 *
 *   hfHubDownload(env, repo, files) -> the local paths huggingface_hub returns
 */
const { spawn } = require('node:child_process');
const path = require('node:path');
const { bytecodeEnv, pipTargetDir } = require('../../scripts/lib/pip-target');

const HF_HUB_PY_VERSION = '1.1.4';

const SCRIPT = `
import json, sys
from huggingface_hub import hf_hub_download
repo = sys.argv[1]
print(json.dumps([hf_hub_download(repo, f) for f in sys.argv[2:]]))
`;

/**
 * hf_hub_download(repo, file) for each file, with `env` (HF_ENDPOINT,
 * HF_HUB_CACHE, ...). Asynchronous: the stand-in hub runs in this process.
 */
function hfHubDownload(env, repo, files) {
  const dir = pipTargetDir(`huggingface_hub==${HF_HUB_PY_VERSION}`, path.join('huggingface_hub', 'file_download.py'));
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-c', SCRIPT, repo, ...files], {
      env: {
        ...process.env,
        ...bytecodeEnv(),
        PYTHONPATH: dir,
        PYTHONNOUSERSITE: '1',
        HF_HUB_DISABLE_TELEMETRY: '1',
        HF_HUB_DISABLE_XET: '1',
        ...env,
      },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0)
        return reject(
          new Error(`huggingface_hub failed (exit ${code}): ${err.trim().split('\n').slice(-8).join('\n')}`),
        );
      resolve(JSON.parse(out.trim().split('\n').pop()));
    });
  });
}

module.exports = { HF_HUB_PY_VERSION, hfHubDownload };
