'use strict';
// Starts `bin/pjrt-score.js serve` as a child process on a free local port
// and talks HTTP to it on 127.0.0.1 only. One server per test file.
const http = require('node:http');
const { BIN, startServe } = require('../../scripts/lib/serve-child');

/**
 * Spawns the server with `args` (after `serve --port 0 --host 127.0.0.1`)
 * (scripts/lib/serve-child.js) and resolves once it is ready. Every stdout
 * line is parsed as JSON and kept in `logs` (the last 5,000), so tests can
 * assert on log events.
 */
async function startService(args = [], { env = {}, readyTimeoutMs = 300_000 } = {}) {
  const serve = startServe(['serve', '--port', '0', '--host', '127.0.0.1', ...args], {
    env,
    timeoutMs: readyTimeoutMs,
  });
  const { child, logs, stderr, exited, waitForLog } = serve;
  const port = await serve.listening();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const service = {
    child,
    port,
    pid: child.pid,
    logs,
    stderr,
    exited,
    get exit() {
      return serve.exit;
    },
    waitForLog,
    request: (options) => request({ port, agent, ...options }),
    /** POST /v1/score with a JSON body (an object, or a string/Buffer sent as-is). */
    score: (body, { headers = {}, ...options } = {}) =>
      request({
        port,
        agent,
        method: 'POST',
        path: '/v1/score',
        ...options,
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
      }),
    /** Sends SIGTERM and waits for the exit. */
    async stop() {
      agent.destroy();
      if (serve.exit) return serve.exit;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
    agent,
  };
  await waitForLog((e) => e.event === 'ready');
  return service;
}

/** One HTTP request; resolves { status, headers, text, json } (json is null when the body is not JSON). */
function request({ port, agent, method = 'GET', path: urlPath = '/', headers = {}, body, timeoutMs = 120_000 }) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? null : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        agent,
        // A header given as undefined is left out (to send a request without Content-Type).
        headers: Object.fromEntries(
          Object.entries({ ...(payload ? { 'content-length': payload.length } : {}), ...headers }).filter(
            ([, v]) => v !== undefined,
          ),
        ),
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json;
          try {
            json = JSON.parse(text);
          } catch {
            json = null;
          }
          resolve({ status: res.statusCode, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`request timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    if (payload) req.end(payload);
    else req.end();
  });
}

/**
 * POSTs `body` (an object, sent as JSON, or a string sent as it is) to `url`
 * on a fresh connection; resolves { status, body } with the response parsed as JSON.
 */
function postJson(url, body) {
  return new Promise((resolve, reject) => {
    const data = typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
        agent: false,
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** VmRSS of a process in bytes (Linux). */
function rssBytes(pid) {
  const status = require('node:fs').readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (!match) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

module.exports = { BIN, startService, request, postJson, rssBytes };
