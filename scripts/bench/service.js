#!/usr/bin/env node
'use strict';
// npm run bench:service — the scoring service under load: starts
// `pjrt-score serve` on a free local port, drives POST /v1/score with a
// closed-loop load generator (node:http, keep-alive; N workers each send
// their next request when the last one is answered) at several
// concurrencies, and prints throughput (req/s, items/s), p50/p99 latency and
// errors. Two workloads: every request with its own query ("distinct"), and
// all requests sharing one query ("shared", where the server may merge
// waiting requests into one Scorer call), and "small-10" (a 300-token query
// of its own per request, 10 items x 10 tokens: the bench's small workload),
// "pr" (SGLang's PR workload: a 300-token query of its own per request, 10
// items x 20 tokens), "pr-repeat" (the PR shape with one query for every
// request, its items fresh: the prefix cache's case), and "overhead" (a short query, `items: []`: nothing
// runs on the device, so it measures the HTTP layer, validation, queue,
// logging and metrics alone).
// Writes bench-results/service.json (--out names another file there).
// `--soak` is the soak instead (scripts/bench/lib/soak.js: mixed traffic,
// hostile bodies included, at a fixed rate for --duration; latency, status
// counts, the probes' worst wait and RSS over time).
// `--load open` is the open-loop mode instead (scripts/bench/lib/open-loop.js:
// autocannon at fixed rates, the PR workload as text, the highest rate held).
//
// Options: --duration S (per step, default 10), --concurrency 1,4,16,
// --items N (per request, default 8; small-10 always has 10),
// --workload distinct,shared,small-10,overhead, --url http://host:port (use a running
// server instead of starting one), --servers current,baseline,fastify (which
// servers to start and compare, steps interleaved so the machine's load
// falls on all alike: `current` is this checkout's `pjrt-score serve`,
// `cross` the same with `--batching cross-request` (distinct queries share
// device passes), `nocache` the same with `--prefix-cache-bytes 0` (no query
// K/V kept across requests; against `current` on pr-repeat it shows what the
// prefix cache gives),
// `fastify` this checkout's routes mounted in examples/fastify.js, and
// `baseline` `pjrt-score serve` from --baseline-ref REF, a git commit that
// is extracted and compiled into the temp directory), --rounds N (each step
// N times per server, alternating which goes first; default 1), --warm S
// (the unmeasured first step per server and workload, default 3; each
// server also compiles the workload's shapes at startup), --per-worker N
// (each worker sends N requests per step instead of running for --duration:
// on a slow or loaded machine a request takes seconds, and whole cycles
// compare better than a cut-off step), --timeout-ms MS (the servers' own
// request deadline; default theirs, 30 s).
//
// Each row also counts the server's prefix-cache hits and misses in the step
// (/metrics).
//
// The PR shape at 1, 4 and 16 callers, batching on vs off, and one repeated
// query with the prefix cache on vs off (docs/performance.md, "The service
// on the PR shape"):
//   node scripts/bench/service.js --servers current,cross,nocache --workload pr,pr-repeat --concurrency 1,4,16 \
//     --per-worker 2 --timeout-ms 600000 --out service-pr.json
//
// Cross-request batching, batching on vs off (docs/performance.md):
//   node scripts/bench/service.js --servers current,cross --workload pr --concurrency 8,16 --per-worker 3 --rounds 2 \
//     --timeout-ms 600000 --out service-batching.json
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { BIN, startServe } = require('../lib/serve-child');
const { parseArgs } = require('node:util');
const { describeMachine, loadAverage, machine } = require('../lib/machine');
const { WORKLOADS, request: workloadRequest } = require('./lib/workloads');

const YES = 9805;
const NO = 787;
const NOUNS = [
  'apple',
  'car',
  'banana',
  'hammer',
  'cherry',
  'cloud',
  'pear',
  'violin',
  'mango',
  'bridge',
  'plum',
  'sock',
];

function options() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      concurrency: { type: 'string', default: '1,4,16' },
      items: { type: 'string', default: '8' },
      workload: { type: 'string', default: 'distinct,shared' },
      url: { type: 'string' },
      servers: { type: 'string', default: 'current' },
      'baseline-ref': { type: 'string' },
      rounds: { type: 'string', default: '1' },
      warm: { type: 'string', default: '3' },
      'per-worker': { type: 'string' },
      'timeout-ms': { type: 'string' },
      out: { type: 'string', default: 'service.json' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(
      'Usage: node scripts/bench/service.js [--duration S] [--concurrency 1,4,16] [--items N] [--workload distinct,shared,small-10,pr,pr-repeat,overhead] [--url URL]\n' +
        '                                     [--servers current,cross,nocache,baseline,fastify] [--baseline-ref REF] [--rounds N] [--warm S]\n' +
        '                                     [--per-worker N] [--timeout-ms MS] [--out FILE (in bench-results/, default service.json)]\n' +
        '       node scripts/bench/service.js --load open [--rates 2,4] [--sweep 6,8] [--duration S] [--warm S] [--tolerance 0.03] [--p99-ms 100]\n' +
        '                                     [--serve-args "..."] [--url URL --model PATH] [--out FILE] (scripts/bench/lib/open-loop.js)\n' +
        '       node scripts/bench/service.js --soak [--duration S] [--rate R] [--warm S] [--sample S] [--probe-every MS] [--timeout-ms MS] [--url URL] [--out FILE]',
    );
    process.exit(0);
  }
  const servers = values.servers.split(',');
  if (servers.includes('baseline') && !values['baseline-ref'])
    throw new Error('--servers baseline needs --baseline-ref REF');
  return {
    duration: Number(values.duration) * 1000,
    concurrency: values.concurrency.split(',').map(Number),
    items: Number(values.items),
    workloads: values.workload.split(','),
    url: values.url,
    servers,
    baselineRef: values['baseline-ref'],
    rounds: Number(values.rounds),
    warm: Number(values.warm) * 1000,
    perWorker: values['per-worker'] === undefined ? null : Number(values['per-worker']),
    timeoutMs: values['timeout-ms'],
    out: values.out,
  };
}

/** `git archive REF` into the temp directory, with this checkout's node_modules and native build, compiled. */
function prepareBaseline(ref) {
  const { execFileSync } = require('node:child_process');
  const os = require('node:os');
  const root = path.join(__dirname, '..', '..');
  const sha = execFileSync('git', ['rev-parse', ref], { cwd: root, encoding: 'utf8' }).trim();
  const dir = path.join(os.tmpdir(), `pjrt-score-baseline-${sha.slice(0, 12)}`);
  if (!fs.existsSync(path.join(dir, 'dist', 'index.js'))) {
    fs.mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git archive ${sha} | tar -x -C ${JSON.stringify(dir)}`], {
      cwd: root,
      stdio: 'inherit',
    });
    for (const name of ['node_modules', 'build']) {
      if (!fs.existsSync(path.join(dir, name)) && fs.existsSync(path.join(root, name)))
        fs.symlinkSync(path.join(root, name), path.join(dir, name));
    }
    execFileSync(
      process.execPath,
      [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
      { cwd: dir, stdio: 'inherit' },
    );
  }
  return { dir, sha };
}

/** A rerank-like request: a short question, `items` short candidates (small-10: the bench's token-id workload). */
function makeBody(workload, serial, itemCount) {
  if (workload === 'overhead')
    return JSON.stringify({
      query: `Question ${serial % 1000}: is this a fruit?`,
      items: [],
      label_token_ids: [YES, NO],
    });
  if (workload === 'small-10' || workload === 'pr') {
    const r = workloadRequest(WORKLOADS[workload], serial);
    return JSON.stringify({ query: r.query, items: r.items, label_token_ids: r.labelTokenIds });
  }
  if (workload === 'pr-repeat') {
    // One query for every request (variant 0's), the items of this request's own variant.
    const r = workloadRequest(WORKLOADS.pr, serial);
    return JSON.stringify({
      query: workloadRequest(WORKLOADS.pr, 0).query,
      items: r.items,
      label_token_ids: r.labelTokenIds,
    });
  }
  const query =
    workload === 'shared'
      ? 'Is the following a kind of fruit? Answer yes or no:'
      : `Question ${serial % 1000}: is the following a kind of fruit? Answer yes or no:`;
  const items = Array.from({ length: itemCount }, (_, i) => ` a ${NOUNS[(serial + i) % NOUNS.length]}`);
  return JSON.stringify({ query, items, label_token_ids: [YES, NO], apply_softmax: true });
}

/** Items per request of a workload. */
function itemsOf(workload, itemCount) {
  if (workload === 'overhead') return 0;
  if (workload === 'pr-repeat') return WORKLOADS.pr.items;
  return WORKLOADS[workload] ? WORKLOADS[workload].items : itemCount;
}

/** The --warmup spec of the workloads that have fixed shapes (query x item tokens x items), plus the default shapes. */
function warmupSpec(workloads) {
  const fixed = workloads
    .map((w) => WORKLOADS[w === 'pr-repeat' ? 'pr' : w])
    .filter(Boolean)
    .map((w) => `${w.queryTokens}x${w.itemTokens}x${w.items}`);
  return ['16x8x4', '32x16x20', ...fixed].join(',');
}

/** Starts one server kind; resolves { child, url } once it is ready. */
async function startServer(kind, baselineDir, workloads, timeoutMs) {
  const serve = [
    'serve',
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--warmup',
    warmupSpec(workloads),
    '--queue-size',
    '256',
    ...(timeoutMs ? ['--timeout-ms', timeoutMs] : []),
  ];
  const args =
    kind === 'fastify'
      ? [path.join(__dirname, 'lib', 'fastify-serve.js')]
      : kind === 'cross'
        ? [BIN, ...serve, '--batching', 'cross-request']
        : kind === 'nocache'
          ? [BIN, ...serve, '--prefix-cache-bytes', '0']
          : [kind === 'baseline' ? path.join(baselineDir, 'bin', 'pjrt-score.js') : BIN, ...serve];
  const [script, ...rest] = args;
  const server = startServe(rest, { script, stderr: 'inherit' });
  return { child: server.child, url: await server.ready() };
}

function post(agent, url, body) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const req = http.request(
      `${url}/v1/score`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
      },
    );
    req.on('error', (error) =>
      resolve({ status: 0, error: error.code || error.message, ms: Number(process.hrtime.bigint() - started) / 1e6 }),
    );
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

/** Closed loop: `concurrency` workers, each sending its next request when the last returns, for `duration` ms (or `perWorker` requests each). */
async function step(url, workload, concurrency, duration, itemCount, perWorker = null) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const before = await getText(url, '/metrics');
  let serial = Math.floor(Math.random() * 1000);
  const latencies = [];
  const errors = {};
  const started = Date.now();
  const worker = async () => {
    for (let sent = 0; perWorker === null ? Date.now() - started < duration : sent < perWorker; sent++) {
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
  const served =
    metric(after, 'pjrt_score_backend_call_requests_total') - metric(before, 'pjrt_score_backend_call_requests_total');
  const passes = metric(after, 'pjrt_score_device_passes_total') - metric(before, 'pjrt_score_device_passes_total');
  const hits =
    metric(after, 'pjrt_score_prefix_cache_hits_total') - metric(before, 'pjrt_score_prefix_cache_hits_total');
  const misses =
    metric(after, 'pjrt_score_prefix_cache_misses_total') - metric(before, 'pjrt_score_prefix_cache_misses_total');
  return {
    workload,
    concurrency,
    latencies,
    seconds,
    calls,
    served,
    passes,
    hits,
    misses,
    errorsByStatus: errors,
    items: latencies.length * itemsOf(workload, itemCount),
  };
}

function round(x, digits) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

async function main() {
  const opts = options();
  console.log(`machine: ${describeMachine()}`);
  const baseline = opts.servers.includes('baseline') ? prepareBaseline(opts.baselineRef) : null;
  if (baseline) console.log(`baseline: ${opts.baselineRef} = ${baseline.sha}`);
  const servers = [];
  if (opts.url) servers.push({ kind: 'url', url: opts.url, child: null });
  else
    for (const kind of opts.servers)
      servers.push({ kind, ...(await startServer(kind, baseline && baseline.dir, opts.workloads, opts.timeoutMs)) });
  console.log(
    `servers: ${servers.map((s) => `${s.kind} ${s.url}`).join(', ')}; ${opts.items} items per request (small-10: 10; pr: 10), ${opts.perWorker === null ? `${opts.duration / 1000} s` : `${opts.perWorker} requests per worker`} per step`,
  );
  const rows = [];
  try {
    // One unmeasured pass per server so every bucket the workload touches is compiled.
    for (const server of servers)
      for (const workload of opts.workloads)
        await step(server.url, workload, Math.max(...opts.concurrency), opts.warm, opts.items);
    console.log(`load average before the measured steps: ${loadAverage()}`);
    console.log(
      'server      workload   conc   req/s  items/s   p50 ms   p99 ms  errors  req/call  req/pass  cache hits/misses',
    );
    for (const workload of opts.workloads) {
      for (const concurrency of opts.concurrency) {
        const parts = new Map(servers.map((s) => [s, []]));
        for (let round = 0; round < opts.rounds; round++) {
          const order = round % 2 === 0 ? servers : [...servers].reverse();
          for (const server of order)
            parts
              .get(server)
              .push(await step(server.url, workload, concurrency, opts.duration, opts.items, opts.perWorker));
        }
        for (const server of servers) {
          const r = { server: server.kind, ...merge(parts.get(server)) };
          rows.push(r);
          console.log(
            `${server.kind.padEnd(10)}  ${workload.padEnd(9)}  ${String(concurrency).padStart(4)}  ${r.reqPerSec.toFixed(2).padStart(6)}  ${r.itemsPerSec.toFixed(1).padStart(7)}  ` +
              `${r.p50Ms.toFixed(1).padStart(7)}  ${r.p99Ms.toFixed(1).padStart(7)}  ${String(r.errors).padStart(6)}  ${String(r.requestsPerScorerCall).padStart(8)}  ${String(r.requestsPerDevicePass).padStart(8)}  ${`${r.prefixCacheHits}/${r.prefixCacheMisses}`.padStart(17)}`,
          );
        }
      }
    }
  } finally {
    for (const server of servers) {
      if (!server.child) continue;
      server.child.kill('SIGTERM');
      await new Promise((resolve) => server.child.on('exit', resolve));
    }
  }
  const outDir = path.join(__dirname, '..', '..', 'bench-results');
  fs.mkdirSync(outDir, { recursive: true });
  const out = {
    machine: machine(),
    itemsPerRequest: opts.items,
    ...(baseline ? { baseline: baseline.sha } : {}),
    rounds: opts.rounds,
    perWorker: opts.perWorker,
    steps: rows,
  };
  fs.writeFileSync(path.join(outDir, opts.out), `${JSON.stringify(out, null, 2)}\n`);
  console.log(`wrote bench-results/${opts.out}`);
}

/** One row from a step's rounds: totals over all of them, percentiles over every latency. */
function merge(parts) {
  const latencies = parts.flatMap((p) => p.latencies).sort((a, b) => a - b);
  const seconds = parts.reduce((a, p) => a + p.seconds, 0);
  const calls = parts.reduce((a, p) => a + p.calls, 0);
  const served = parts.reduce((a, p) => a + p.served, 0);
  const passes = parts.reduce((a, p) => a + p.passes, 0);
  const prefixCacheHits = parts.reduce((a, p) => a + p.hits, 0);
  const prefixCacheMisses = parts.reduce((a, p) => a + p.misses, 0);
  const errorsByStatus = {};
  for (const p of parts)
    for (const [k, v] of Object.entries(p.errorsByStatus)) errorsByStatus[k] = (errorsByStatus[k] || 0) + v;
  return {
    workload: parts[0].workload,
    concurrency: parts[0].concurrency,
    requests: latencies.length,
    seconds: round(seconds, 1),
    reqPerSec: round(latencies.length / seconds, 2),
    itemsPerSec: round(parts.reduce((a, p) => a + p.items, 0) / seconds, 1),
    p50Ms: round(percentile(latencies, 50), 1),
    p99Ms: round(percentile(latencies, 99), 1),
    errors: Object.values(errorsByStatus).reduce((a, b) => a + b, 0),
    errorsByStatus,
    requestsPerScorerCall: calls > 0 ? round(served / calls, 2) : null,
    requestsPerDevicePass: passes > 0 ? round(latencies.length / passes, 2) : null,
    prefixCacheHits,
    prefixCacheMisses,
  };
}

/** `--load open` (or `--load=open`): the open-loop mode of scripts/bench/lib/open-loop.js, with its own options. */
function loadMode(argv) {
  const i = argv.indexOf('--load');
  if (i >= 0) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith('--load='));
  return eq ? eq.slice('--load='.length) : 'closed';
}

const argv = process.argv.slice(2);
const load = argv.includes('--soak') ? 'soak' : loadMode(argv);
if (load !== 'open' && load !== 'closed' && load !== 'soak') {
  console.error(`--load is open or closed, got ${load}`);
  process.exit(2);
}
const modes = {
  open: () => require('./lib/open-loop').main(argv),
  soak: () => require('./lib/soak').main(argv),
  closed: main,
};
modes[load]().catch((error) => {
  console.error(error);
  process.exit(1);
});
