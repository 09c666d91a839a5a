#!/usr/bin/env node
'use strict';
// npm run bench:service — the scoring service under load: starts
// `pjrt-score serve` on a free local port, drives POST /v1/score with a
// closed-loop load generator (node:http, keep-alive; N workers each send
// their next request when the last one is answered) at several
// concurrencies, and prints throughput (req/s, items/s), p50/p99 latency and
// errors. Two workloads: every request with its own query ("distinct"), and
// all requests sharing one query ("shared", where the server may merge
// waiting requests into one Scorer call). Writes bench-results/service.json.
//
// Options: --duration S (per step, default 10), --concurrency 1,4,16,
// --items N (per request, default 8), --workload distinct,shared,
// --url http://host:port (use a running server instead of starting one).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const readline = require('node:readline');
const { parseArgs } = require('node:util');
const { describeMachine, machine } = require('./machine');

const BIN = path.join(__dirname, '..', 'bin', 'pjrt-score.js');
const YES = 9805;
const NO = 787;
const NOUNS = ['apple', 'car', 'banana', 'hammer', 'cherry', 'cloud', 'pear', 'violin', 'mango', 'bridge', 'plum', 'sock'];

function options() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      concurrency: { type: 'string', default: '1,4,16' },
      items: { type: 'string', default: '8' },
      workload: { type: 'string', default: 'distinct,shared' },
      url: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    console.log('Usage: node scripts/bench-service.js [--duration S] [--concurrency 1,4,16] [--items N] [--workload distinct,shared] [--url URL]');
    process.exit(0);
  }
  return {
    duration: Number(values.duration) * 1000,
    concurrency: values.concurrency.split(',').map(Number),
    items: Number(values.items),
    workloads: values.workload.split(','),
    url: values.url,
  };
}

/** A rerank-like request: a short question, `items` short candidates. */
function makeBody(workload, serial, itemCount) {
  const query = workload === 'shared' ? 'Is the following a kind of fruit? Answer yes or no:' : `Question ${serial % 1000}: is the following a kind of fruit? Answer yes or no:`;
  const items = Array.from({ length: itemCount }, (_, i) => ` a ${NOUNS[(serial + i) % NOUNS.length]}`);
  return JSON.stringify({ query, items, label_token_ids: [YES, NO], apply_softmax: true });
}

async function startServer() {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--warmup', 'default', '--queue-size', '256'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let port = null;
  const lines = readline.createInterface({ input: child.stdout });
  await new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`server exited with ${code} before it was ready`)));
    lines.on('line', (line) => {
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        return;
      }
      if (entry.event === 'listening') port = entry.port;
      if (entry.event === 'ready') resolve();
    });
  });
  child.removeAllListeners('exit');
  return { child, url: `http://127.0.0.1:${port}` };
}

function post(agent, url, body) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const req = http.request(
      `${url}/v1/score`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
      },
    );
    req.on('error', (error) => resolve({ status: 0, error: error.code || error.message, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
    req.end(body);
  });
}

async function getText(url, urlPath) {
  return new Promise((resolve, reject) => {
    http
      .get(`${url}${urlPath}`, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      })
      .on('error', reject);
  });
}

function metric(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ').pop()) : 0;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Closed loop: `concurrency` workers, each sending its next request when the last returns, for `duration` ms. */
async function step(url, workload, concurrency, duration, itemCount) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const before = await getText(url, '/metrics');
  let serial = Math.floor(Math.random() * 1000);
  const latencies = [];
  const errors = {};
  const started = Date.now();
  const worker = async () => {
    while (Date.now() - started < duration) {
      const result = await post(agent, url, makeBody(workload, serial++, itemCount));
      if (result.status === 200) latencies.push(result.ms);
      else errors[result.status || result.error] = (errors[result.status || result.error] || 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (Date.now() - started) / 1000;
  agent.destroy();
  const after = await getText(url, '/metrics');
  const calls = metric(after, 'pjrt_score_backend_calls_total') - metric(before, 'pjrt_score_backend_calls_total');
  const served = metric(after, 'pjrt_score_backend_call_requests_total') - metric(before, 'pjrt_score_backend_call_requests_total');
  latencies.sort((a, b) => a - b);
  return {
    workload,
    concurrency,
    requests: latencies.length,
    seconds: round(seconds, 1),
    reqPerSec: round(latencies.length / seconds, 2),
    itemsPerSec: round((latencies.length * itemCount) / seconds, 1),
    p50Ms: round(percentile(latencies, 50), 1),
    p99Ms: round(percentile(latencies, 99), 1),
    errors: Object.values(errors).reduce((a, b) => a + b, 0),
    errorsByStatus: errors,
    requestsPerScorerCall: calls > 0 ? round(served / calls, 2) : null,
  };
}

function round(x, digits) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

async function main() {
  const opts = options();
  console.log(`machine: ${describeMachine()}`);
  const server = opts.url ? { url: opts.url, child: null } : await startServer();
  console.log(`server: ${server.url}; ${opts.items} items per request, ${opts.duration / 1000} s per step`);
  const rows = [];
  try {
    // One unmeasured pass so every bucket the workload touches is compiled.
    for (const workload of opts.workloads) await step(server.url, workload, Math.max(...opts.concurrency), 3000, opts.items);
    console.log('workload  conc   req/s  items/s   p50 ms   p99 ms  errors  req/call');
    for (const workload of opts.workloads) {
      for (const concurrency of opts.concurrency) {
        const r = await step(server.url, workload, concurrency, opts.duration, opts.items);
        rows.push(r);
        console.log(
          `${workload.padEnd(8)}  ${String(concurrency).padStart(4)}  ${r.reqPerSec.toFixed(2).padStart(6)}  ${r.itemsPerSec.toFixed(1).padStart(7)}  ` +
            `${r.p50Ms.toFixed(1).padStart(7)}  ${r.p99Ms.toFixed(1).padStart(7)}  ${String(r.errors).padStart(6)}  ${String(r.requestsPerScorerCall).padStart(8)}`,
        );
      }
    }
  } finally {
    if (server.child) {
      server.child.kill('SIGTERM');
      await new Promise((resolve) => server.child.on('exit', resolve));
    }
  }
  const outDir = path.join(__dirname, '..', 'bench-results');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'service.json'), `${JSON.stringify({ machine: machine(), itemsPerRequest: opts.items, steps: rows }, null, 2)}\n`);
  console.log('wrote bench-results/service.json');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
