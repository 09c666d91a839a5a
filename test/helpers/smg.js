'use strict';
/**
 * The SGLang Model Gateway (PyPI `smg`: a Rust router in a wheel), installed
 * once with pip into the cache (<cache>/python/smg-<version>, pip-target.js)
 * and run as `python3 -m smg launch` on 127.0.0.1 only.
 *
 *   startSmg({ workers, policy, args }) -> { url, port, metricsUrl, workers(), stop() }
 *   SMG_VERSION
 */
const { spawn } = require('node:child_process');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { bytecodeEnv, pipTargetDir } = require('../../scripts/lib/pip-target');

const SMG_VERSION = '1.13.0';

function smgDir() {
  return pipTargetDir(`smg==${SMG_VERSION}`, path.join('smg', 'cli.py'));
}

/** A free TCP port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function getJson(url, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        } catch (error) {
          reject(error);
        }
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts smg in front of `workers` (base URLs) with `policy`; resolves once
 * it lists every worker as healthy. Health checks and load polls every
 * second, so the test sees a draining or busy replica within a few polls.
 */
async function startSmg({ workers, policy, args = [], readyTimeoutMs = 120_000 }) {
  const dir = smgDir();
  const port = await freePort();
  const metricsPort = await freePort();
  const child = spawn(
    'python3',
    [
      '-m',
      'smg',
      'launch',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--prometheus-host',
      '127.0.0.1',
      '--prometheus-port',
      String(metricsPort),
      '--worker-urls',
      ...workers,
      '--policy',
      policy,
      '--health-check-interval-secs',
      '1',
      '--health-failure-threshold',
      '1',
      '--health-success-threshold',
      '1',
      '--load-monitor-interval',
      '1',
      '--log-level',
      'warn',
      ...args,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...bytecodeEnv(), PYTHONPATH: dir, PYTHONNOUSERSITE: '1', NO_COLOR: '1' },
    },
  );
  const output = [];
  const keep = (chunk) => {
    output.push(chunk.toString('utf8'));
    if (output.length > 400) output.shift();
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exit = null;
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve((exit = { code, signal }))));
  const url = `http://127.0.0.1:${port}`;
  const listWorkers = async () => (await getJson(`${url}/workers`)).json.workers;
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (exit) throw new Error(`smg exited (${JSON.stringify(exit)}): ${output.join('').slice(-3000)}`);
    try {
      const listed = await listWorkers();
      if (listed.length === workers.length && listed.every((w) => w.is_healthy)) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(
        `smg did not list ${workers.length} healthy workers within ${readyTimeoutMs} ms: ${output.join('').slice(-3000)}`,
      );
    await sleep(250);
  }
  return {
    url,
    port,
    /** smg's own Prometheus metrics (retries, selections). */
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    child,
    output,
    workers: listWorkers,
    async stop() {
      if (exit) return exit;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

module.exports = { SMG_VERSION, startSmg, smgDir, freePort, getJson };
