'use strict';
// npm run bench:service -- --load open: `pjrt-score serve` under an open-loop
// load of the PR workload (a 300-token query of its own per request, 10 items
// of 20 tokens, as text, so tokenization counts; docs/performance.md "The
// service over HTTP") from autocannon at a fixed overall rate: first the
// --rates, then the --sweep rates in order until one is not held. Held: the
// achieved rate within --tolerance (default 3%) of the offered one, 0 errors,
// p99 <= --p99-ms (default 100). Prints a table with the machine and writes
// bench-results/service-open.json (--out: another name there, or a path).
//
//   node scripts/bench/service.js --load open --rates 2,4 [--sweep 6,8] [--duration 5] [--warm 3]
//       [--serve-args "--plugin cuda --model DIR --batching cross-request"] [--url URL --model PATH]
//
// The load: autocannon with `overallRate` R and R connections (autocannon never
// opens more than R), one request in flight per connection, each connection
// sending one request a second for --duration seconds (autocannon's `amount`:
// R x duration requests, every answer waited for). So no request waits for a
// free connection while latency stays under 1 s; past that a connection falls
// behind and the achieved rate drops below the offered one, which "held"
// catches. Autocannon sends each connection's request at the start of its
// second, so the R requests of a second arrive together: a burst each second,
// harsher on p99 than arrivals spread over the second. Latencies are
// autocannon's, from a request's write to its answer (coordinated-omission
// correction off: with one request a second per connection it would record
// synthetic 1 ms steps). Every request's body is made before its step starts.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { BIN, startServe } = require('../../lib/serve-child');
const { parseArgs } = require('node:util');
const { describeMachine, machine } = require('../../lib/machine');
const { WORKLOADS } = require('./workloads');
const { textWorkload } = require('./text-requests');

const WORKLOAD = WORKLOADS.pr;

/** autocannon (a devDependency; on a GPU machine from the carry's bench-deps.tar.gz, on NODE_PATH). */
function loadGenerator() {
  try {
    return require('autocannon');
  } catch (error) {
    throw new Error(
      `--load open needs autocannon: run npm install here, or on a machine without npm carry the archive of scripts/build/pack-modules.js and put it on NODE_PATH (${error.message.split('\n')[0]})`,
      { cause: error },
    );
  }
}

function options(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      load: { type: 'string' },
      rates: { type: 'string', default: '2,4' },
      sweep: { type: 'string', default: '' },
      duration: { type: 'string', default: '5' },
      warm: { type: 'string', default: '3' },
      tolerance: { type: 'string', default: '0.03' },
      'p99-ms': { type: 'string', default: '100' },
      'serve-args': { type: 'string', default: '' },
      url: { type: 'string' },
      model: { type: 'string' },
      out: { type: 'string', default: 'service-open.json' },
    },
    strict: true,
  });
  const list = (s) => s.split(',').filter(Boolean).map(Number);
  const o = {
    rates: list(values.rates),
    sweep: list(values.sweep),
    duration: Number(values.duration),
    warm: Number(values.warm),
    tolerance: Number(values.tolerance),
    p99Ms: Number(values['p99-ms']),
    serveArgs: values['serve-args'].split(/\s+/).filter(Boolean),
    url: values.url,
    model: values.model,
    out: values.out,
  };
  for (const r of [...o.rates, ...o.sweep])
    if (!Number.isInteger(r) || r < 1) throw new Error(`rates are whole requests per second >= 1, got ${r}`);
  if (!(o.duration >= 1) || !Number.isInteger(o.duration))
    throw new Error(`--duration is whole seconds >= 1, got ${values.duration}`);
  if (o.rates.length + o.sweep.length === 0) throw new Error('give --rates or --sweep');
  return o;
}

/** The model the server serves: --model, else its --serve-args' --model, else PJRT_SCORE_MODEL, else the default model. */
function servedModel(opts) {
  const i = opts.serveArgs.indexOf('--model');
  return opts.model || (i >= 0 ? opts.serveArgs[i + 1] : undefined) || process.env.PJRT_SCORE_MODEL || undefined;
}

/** The server this process started (killed with it when a time limit stops this process). */
let serverChild = null;

/** `pjrt-score serve` on a free port, with the PR shape compiled before it turns ready. */
async function startServer(opts, maxRate) {
  const queue = String(Math.max(256, 2 * maxRate));
  const args = [
    BIN,
    'serve',
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--warmup',
    `${WORKLOAD.queryTokens}x${WORKLOAD.itemTokens}x${WORKLOAD.items}`,
    '--queue-size',
    queue,
    ...opts.serveArgs,
  ];
  console.log(`server: node ${args.map((a) => path.relative(process.cwd(), a) || a).join(' ')}`);
  const [script, ...rest] = args;
  const server = startServe(rest, { script, stderr: 'inherit' });
  serverChild = server.child;
  return { child: server.child, url: await server.ready() };
}

function getText(url) {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      })
      .on('error', reject);
  });
}

/** The server's own counts from /metrics: /v1/score answers by status, items and tokens scored. */
async function serverCounts(url) {
  const text = await getText(`${url}/metrics`);
  const counts = { ok: 0, failed: 0, items: 0, tokens: 0 };
  for (const line of text.split('\n')) {
    const m = /^pjrt_score_http_requests_total\{(.*)\} (\S+)$/.exec(line);
    if (m && /route="\/v1\/score"/.test(m[1])) counts[/status="200"/.test(m[1]) ? 'ok' : 'failed'] += Number(m[2]);
    if (line.startsWith('pjrt_score_items_scored_total ')) counts.items = Number(line.split(' ').pop());
    if (line.startsWith('pjrt_score_tokens_scored_total ')) counts.tokens = Number(line.split(' ').pop());
  }
  return counts;
}

/** The server's counts once its answers to `sent` more requests than `before` are counted (at most 5 s). */
async function settledCounts(url, before, sent) {
  for (let i = 0; ; i++) {
    const c = await serverCounts(url);
    if (c.ok + c.failed - before.ok - before.failed >= sent || i >= 50) return c;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One step: `rate` requests a second for `duration` s, bodies from `serial` on; the row of the table. */
async function step(url, texts, rate, duration, serial) {
  const amount = rate * duration;
  const bodies = Array.from({ length: amount }, (_, i) => texts.body(serial + i));
  const tokens = Array.from({ length: amount }, (_, i) => texts.tokensOf(serial + i)).reduce((a, b) => a + b, 0);
  let next = 0;
  const before = await serverCounts(url);
  const result = await loadGenerator()({
    url,
    connections: rate,
    pipelining: 1,
    overallRate: rate,
    amount,
    timeout: 30,
    ignoreCoordinatedOmission: true,
    requests: [
      {
        method: 'POST',
        path: '/v1/score',
        headers: { 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: bodies[next++ % amount] }),
      },
    ],
  });
  const after = await settledCounts(url, before, result.requests.sent);
  const ok = result['2xx'];
  const seconds = result.duration;
  return {
    offered: rate,
    seconds,
    sent: result.requests.sent,
    answered: result.requests.total,
    ok,
    achieved: ok / seconds,
    itemsPerSec: (ok * WORKLOAD.items) / seconds,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    errors: result.errors + result.timeouts + result.non2xx + (result.requests.sent - result.requests.total),
    statusCodes: result.statusCodeStats,
    server: {
      ok: after.ok - before.ok,
      failed: after.failed - before.failed,
      items: after.items - before.items,
      tokens: after.tokens - before.tokens,
    },
    clientTokens: tokens,
  };
}

function held(row, opts) {
  return row.errors === 0 && row.achieved >= row.offered * (1 - opts.tolerance) && row.p99Ms <= opts.p99Ms;
}

function gpuName() {
  const r = spawnSync('nvidia-smi', ['--query-gpu=name', '--format=csv,noheader'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim().split('\n')[0] : null;
}

function printRow(kind, r) {
  const f = (x, d) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
  console.log(
    `${kind.padEnd(6)} ${String(r.offered).padStart(6)} ${f(r.achieved, 2).padStart(8)} ${String(r.ok).padStart(6)} ${String(r.server.ok).padStart(6)} ` +
      `${f(r.itemsPerSec, 1).padStart(9)} ${f(r.p50Ms, 1).padStart(8)} ${f(r.p99Ms, 1).padStart(8)} ${String(r.errors).padStart(6)}  ${r.held ? 'yes' : 'no'}`,
  );
}

async function main(argv) {
  const opts = options(argv);
  const { loadModelInfo } = require('../../../dist/model');
  const info = loadModelInfo(servedModel(opts));
  const texts = textWorkload(info.tokenizer, WORKLOAD);
  const counts = texts.tokenCounts(64);
  const gpu = opts.serveArgs.includes('cuda') ? gpuName() : null;
  console.log(`machine: ${describeMachine()}${gpu ? `; GPU ${gpu}` : ''}`);
  console.log(
    `load: autocannon ${(loadGenerator(), require('autocannon/package.json').version)}, open loop at a fixed overall rate, connections = rate; ` +
      `PR workload as text for ${info.name}'s tokenizer: query ${counts.query.join('-')} tokens, ${WORKLOAD.items} items of ${counts.item.join('-')} tokens; ${opts.duration} s a step`,
  );
  const maxRate = Math.max(...opts.rates, ...opts.sweep);
  const outDir = path.join(__dirname, '..', '..', '..', 'bench-results');
  const file = path.resolve(outDir, opts.out);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const rows = [];
  const write = () => {
    const best = rows.filter((r) => r.held).sort((a, b) => b.offered - a.offered)[0];
    const out = {
      machine: { ...machine(), gpu, loadAverage: require('node:os').loadavg() },
      model: info.name,
      serveArgs: opts.serveArgs,
      tokens: counts,
      duration: opts.duration,
      tolerance: opts.tolerance,
      p99Ms: opts.p99Ms,
      highestHeld: best ? best.offered : null,
      steps: rows,
    };
    fs.writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
    return best;
  };
  // Stopped from outside (a time limit's SIGTERM): the server goes too, and the steps done so far stay written.
  const stop = () => {
    if (serverChild) serverChild.kill('SIGKILL');
    console.log(`stopped from outside after ${rows.length} steps`);
    process.exit(143);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const server = opts.url ? { url: opts.url, child: null } : await startServer(opts, maxRate);
  let serial = 0;
  try {
    if (opts.warm > 0) {
      const r = Math.min(...opts.rates, ...opts.sweep);
      await step(server.url, texts, r, opts.warm, 1e6);
    }
    const load = require('node:os')
      .loadavg()
      .map((x) => x.toFixed(2));
    console.log(
      `load average before the measured steps: ${load.join(' ')} (other processes on this machine share its cores)`,
    );
    console.log(`held: achieved >= ${(1 - opts.tolerance) * 100}% of offered, 0 errors, p99 <= ${opts.p99Ms} ms`);
    console.log('step   offered  req/s   2xx  server   items/s   p50 ms   p99 ms errors  held');
    const run = async (kind, rate) => {
      const r = await step(server.url, texts, rate, opts.duration, serial);
      serial += r.sent;
      r.kind = kind;
      r.held = held(r, opts);
      rows.push(r);
      write();
      printRow(kind, r);
      return r;
    };
    for (const rate of opts.rates) await run('rate', rate);
    for (const rate of opts.sweep) if (!(await run('sweep', rate)).held) break;
  } finally {
    process.removeListener('SIGTERM', stop);
    process.removeListener('SIGINT', stop);
    if (server.child) {
      server.child.kill('SIGTERM');
      await new Promise((resolve) => server.child.on('exit', resolve));
    }
  }
  const best = write();
  console.log(
    best
      ? `highest rate held: ${best.offered} req/s, ${best.itemsPerSec.toFixed(1)} items/s, p99 ${best.p99Ms} ms`
      : 'highest rate held: none of the rates',
  );
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}

module.exports = { main, held };
