#!/usr/bin/env node
'use strict';
// npm run bench:auth — does a wrong API key take longer the more of the right
// key it shares? The check hashes both sides (sha256) and compares the
// digests with timingSafeEqual (lib/server/network/api-keys.ts), so it should not.
// Measured two ways, candidates interleaved round by round so drift on a
// shared machine hits them alike:
//   1. ApiKeys.check() alone: median ns per call over rounds of --calls calls;
//   2. over HTTP to startServer with the key on (the real Scorer, never
//      reached by a 401): median µs per request over rounds of --requests.
// Candidates: wrong keys sharing 0, 8, 16, 24 and 31 of the right key's 32
// characters, wrong keys of other lengths (8, 64, 1024), and the right key.
// Prints a table per way and writes bench-results/auth-timing.json.
//
//   node scripts/bench/auth-timing.js [--rounds 25] [--calls 20000] [--requests 200]
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { describeMachine, machine } = require('../lib/machine');
const { median } = require('../lib/median');
const { ApiKeys } = require('../../dist/server/network/api-keys');
const { startServer } = require('../../dist/server/hosts/standalone-server');
const { silentLogger } = require('../../dist/server/telemetry/log');

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '25' },
    calls: { type: 'string', default: '20000' },
    requests: { type: 'string', default: '200' },
  },
});
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const REQUESTS = Number(values.requests);

const KEY = 'pk-7d41c0e9a2b85f3610de4c97ab2e5';
if (KEY.length !== 32) throw new Error('the key must be 32 characters');
const flip = (c) => (c === 'x' ? 'y' : 'x');
const sharing = (n) => KEY.slice(0, n) + flip(KEY[n]) + 'z'.repeat(KEY.length - n - 1);
const CANDIDATES = [
  ...[0, 8, 16, 24, 31].map((n) => [`wrong, ${n}/32 chars shared`, sharing(n)]),
  ...[8, 64, 1024].map((n) => [`wrong, length ${n}`, KEY.slice(0, Math.min(n, 32)).padEnd(n, 'q')]),
  ['right key', KEY],
];

function checkTimes() {
  const keys = new ApiKeys({ keys: [KEY] });
  const samples = CANDIDATES.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    CANDIDATES.forEach(([, key], i) => {
      const header = `Bearer ${key}`;
      const t0 = process.hrtime.bigint();
      for (let j = 0; j < CALLS; j++) keys.check(header);
      samples[i].push(Number(process.hrtime.bigint() - t0) / CALLS);
    });
  }
  return samples.map(median);
}

function get(port, agent, key) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: '/v1/models', agent, headers: { authorization: `Bearer ${key}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function httpTimes() {
  const server = await startServer({
    port: 0,
    host: '127.0.0.1',
    warmup: [],
    apiKey: [KEY],
    logger: silentLogger(),
    warmupProgress: false,
  });
  await server.ready;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const samples = CANDIDATES.map(() => []);
  try {
    for (const [, key] of CANDIDATES) await get(server.port, agent, key); // warm each path once
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, [, key]] of CANDIDATES.entries()) {
        const t0 = process.hrtime.bigint();
        for (let j = 0; j < REQUESTS; j++) {
          const status = await get(server.port, agent, key);
          if ((status === 200) !== (key === KEY)) throw new Error(`unexpected ${status}`);
        }
        samples[i].push(Number(process.hrtime.bigint() - t0) / REQUESTS / 1000);
      }
    }
  } finally {
    agent.destroy();
    await server.close();
  }
  return samples.map(median);
}

(async () => {
  console.log(`# ${describeMachine()}`);
  console.log(
    `# ${ROUNDS} rounds; ${CALLS} check() calls and ${REQUESTS} HTTP requests per candidate per round; medians`,
  );
  const check = checkTimes();
  const overHttp = await httpTimes();
  const rows = CANDIDATES.map(([name], i) => ({
    candidate: name,
    'check() ns': Math.round(check[i]),
    'HTTP µs': Math.round(overHttp[i] * 10) / 10,
  }));
  console.table(rows);
  const wrongSameLength = rows.slice(0, 5).map((r) => r['check() ns']);
  console.log(
    `# check(), wrong keys of the same length: ${Math.min(...wrongSameLength)}-${Math.max(...wrongSameLength)} ns (spread ${Math.max(...wrongSameLength) - Math.min(...wrongSameLength)} ns)`,
  );
  const out = path.join(__dirname, '..', '..', 'bench-results', 'auth-timing.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(
    out,
    `${JSON.stringify({ machine: machine(), rounds: ROUNDS, calls: CALLS, requests: REQUESTS, rows }, null, 2)}\n`,
  );
  console.log(`# wrote ${path.relative(process.cwd(), out)}`);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
