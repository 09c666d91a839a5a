'use strict';
// `npm run bench:service -- --soak`: the service under mixed traffic for as
// long as asked, at a fixed rate (open loop: a request starts every 1/rate s
// whether or not the others are answered). The mix: small and large
// /v1/score and /v1/rerank requests (the large ones' texts go to the
// tokenizer worker), and hostile ones (a 7.5 MB item, malformed JSON, a body
// over --max-body-bytes, an upload that stalls until the deadline, a client
// that hangs up mid-body). Beside them /livez, /readyz and /metrics are
// polled (each on its own every --probe-every ms), and the server's RSS is
// sampled. Reports latency p50/p99 by kind, answers by status, the probes'
// worst wait, and RSS over time (its growth after --warm). Writes
// bench-results/<--out> (JSON) and prints a summary.
//
//   node scripts/bench/service.js --soak [--duration S (600)] [--rate R (0.5)] [--warm S (120)]
//     [--sample S (30)] [--probe-every MS (500)] [--timeout-ms MS (30000)] [--url URL] [--out soak.json]
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { startServe } = require('../../lib/serve-child');
const { describeMachine, loadAverage, machine } = require('../../lib/machine');

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
const SENTENCE =
  'The river town grew around a stone bridge, and its market sold fruit, tools and cloth to travellers. ';
/** The hostile item: 1.5M tokens of text. */
const HUGE = JSON.stringify({
  query: 'Is this a fruit?',
  items: ['word '.repeat(1_500_000)],
  label_token_ids: [YES, NO],
});

/** Each kind of request: its share of the traffic, and how it is sent. */
const MIX = [
  {
    kind: 'score-small',
    weight: 42,
    body: (i) => ({
      query: `Question ${i % 50}: is this a fruit?`,
      items: [0, 1, 2, 3].map((k) => ` ${NOUNS[(i + k) % NOUNS.length]}`),
      label_token_ids: [YES, NO],
    }),
  },
  {
    kind: 'rerank-small',
    weight: 27,
    route: '/v1/rerank',
    body: (i) => ({
      query: `Which is a fruit (${i % 50})?`,
      documents: [0, 1, 2].map((k) => `A ${NOUNS[(i + k) % NOUNS.length]}.`),
    }),
  },
  // Items and documents of ~950 tokens, over INLINE_TOKENIZE_CHARS: tokenized on the worker.
  {
    kind: 'score-large',
    weight: 4,
    body: (i) => ({
      query: `Is this text about a market (${i % 20})?`,
      items: [SENTENCE.repeat(45), ` ${NOUNS[i % NOUNS.length]}`],
      label_token_ids: [YES, NO],
    }),
  },
  {
    kind: 'rerank-large',
    weight: 2,
    route: '/v1/rerank',
    body: (i) => ({
      query: `Where is the bridge (${i % 20})?`,
      documents: [0, 1].map((k) => `${k}: ${SENTENCE.repeat(45)}`),
    }),
  },
  { kind: 'hostile-huge', weight: 3, raw: () => HUGE },
  { kind: 'hostile-json', weight: 8, raw: (i) => `{"query": "q", "items": [${i}` },
  { kind: 'hostile-413', weight: 5, headers: { 'content-length': String(64 << 20) }, raw: () => '{}' },
  { kind: 'hostile-stall', weight: 3, stall: true },
  { kind: 'hostile-hangup', weight: 6, hangup: true },
];

function options(argv) {
  const { values } = parseArgs({
    args: argv.filter((a) => a !== '--soak'),
    options: {
      duration: { type: 'string', default: '600' },
      rate: { type: 'string', default: '0.5' },
      warm: { type: 'string', default: '120' },
      sample: { type: 'string', default: '30' },
      'probe-every': { type: 'string', default: '500' },
      'timeout-ms': { type: 'string', default: '30000' },
      url: { type: 'string' },
      out: { type: 'string', default: 'soak.json' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(
      'Usage: node scripts/bench/service.js --soak [--duration S] [--rate R] [--warm S] [--sample S] [--probe-every MS] [--timeout-ms MS] [--url URL] [--out FILE]',
    );
    process.exit(0);
  }
  return {
    durationMs: Number(values.duration) * 1000,
    rate: Number(values.rate),
    warmMs: Number(values.warm) * 1000,
    sampleMs: Number(values.sample) * 1000,
    probeEveryMs: Number(values['probe-every']),
    timeoutMs: Number(values['timeout-ms']),
    url: values.url,
    out: values.out,
  };
}

/** One request; resolves { status (0: a connection error), ms }. */
function send(url, route, { method = 'POST', payload, headers = {} } = {}) {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(
      `${url}${route}`,
      {
        method,
        agent: false,
        headers:
          payload === undefined
            ? headers
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            ms: performance.now() - started,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started, body: '' }));
    req.end(payload);
  });
}

/** Headers and part of a body, then nothing (stall: until the server answers) or a hang-up. */
function partial(url, hangup) {
  const started = performance.now();
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    let raw = '';
    socket.on('data', (c) => (raw += c.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const m = /^HTTP\/1\.1 (\d+)/.exec(raw);
      resolve({ status: hangup ? 'hangup' : m ? Number(m[1]) : 0, ms: performance.now() - started });
    });
    socket.write(
      'POST /v1/score HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"query": "q"',
      () => {
        if (hangup) socket.destroy();
      },
    );
  });
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const round = (x, d = 1) => (x === null ? null : Math.round(x * 10 ** d) / 10 ** d);

/** RSS of a pid from /proc, or from the server's /metrics when it is not ours. */
async function rssBytes(url, pid) {
  if (pid !== null) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) return Number(m[1]) * 1024;
    } catch {
      // fall through to /metrics
    }
  }
  const r = await send(url, '/metrics', { method: 'GET' });
  const m = /^process_resident_memory_bytes (\d+)/m.exec(r.body);
  return m ? Number(m[1]) : null;
}

async function main(argv) {
  const opts = options(argv);
  let server = null;
  let url = opts.url;
  if (!url) {
    server = startServe(['serve', '--port', '0', '--timeout-ms', String(opts.timeoutMs)], { stderr: 'pipe' });
    url = await server.ready();
  }
  const pid = server ? server.pid : null;
  console.log(
    `soak: ${url}, ${opts.rate} req/s for ${opts.durationMs / 1000} s (warm-up ${opts.warmMs / 1000} s); ${describeMachine()}; load ${loadAverage()}`,
  );
  const total = MIX.reduce((a, m) => a + m.weight, 0);
  const pick = (i) => {
    // A fixed, interleaved schedule: kind k at the multiples of total/weight (no randomness run to run).
    let x = (i * 7919) % total;
    for (const m of MIX) {
      if (x < m.weight) return m;
      x -= m.weight;
    }
    return MIX[0];
  };
  const results = new Map(MIX.map((m) => [m.kind, []]));
  const probes = { '/livez': [], '/readyz': [], '/metrics': [] };
  const rss = [];
  const loads = [];
  const inflight = new Set();
  const t0 = performance.now();
  const elapsed = () => performance.now() - t0;
  const track = (promise) => {
    inflight.add(promise);
    promise.finally(() => inflight.delete(promise));
  };
  let serial = 0;
  const fire = () => {
    const i = serial++;
    const m = pick(i);
    const at = elapsed();
    let p;
    if (m.stall || m.hangup) p = partial(url, m.hangup === true);
    else {
      const payload = m.raw ? m.raw(i) : JSON.stringify(m.body(i));
      p = send(url, m.route ?? '/v1/score', { payload, headers: m.headers });
    }
    track(p.then((r) => results.get(m.kind).push({ at, status: r.status, ms: r.ms })));
  };
  const probeLoops = Object.keys(probes).map((route) =>
    (async () => {
      while (elapsed() < opts.durationMs) {
        const at = elapsed();
        const r = await send(url, route, { method: 'GET' });
        probes[route].push({ at, status: r.status, ms: r.ms });
        await new Promise((resolve) => setTimeout(resolve, opts.probeEveryMs));
      }
    })(),
  );
  const sampler = (async () => {
    while (elapsed() < opts.durationMs) {
      rss.push({ s: round(elapsed() / 1000, 0), bytes: await rssBytes(url, pid) });
      loads.push({ s: round(elapsed() / 1000, 0), load: loadAverage(',') });
      await new Promise((resolve) => setTimeout(resolve, opts.sampleMs));
    }
  })();
  // Fixed rate: the i-th request at i / rate seconds, however the others fare.
  await new Promise((resolve) => {
    const tick = () => {
      while (serial < (elapsed() / 1000) * opts.rate && elapsed() < opts.durationMs) fire();
      if (elapsed() >= opts.durationMs) resolve();
      else setTimeout(tick, Math.max(1, 1000 / opts.rate / 4));
    };
    tick();
  });
  await Promise.all([...probeLoops, sampler]);
  await Promise.all([...inflight]);
  rss.push({ s: round(elapsed() / 1000, 0), bytes: await rssBytes(url, pid) });

  const byKind = {};
  const byStatus = {};
  for (const [kind, list] of results) {
    const ms = list.map((r) => r.ms).sort((a, b) => a - b);
    const statuses = {};
    for (const r of list) {
      statuses[r.status] = (statuses[r.status] || 0) + 1;
      byStatus[r.status] = (byStatus[r.status] || 0) + 1;
    }
    byKind[kind] = {
      requests: list.length,
      p50Ms: round(percentile(ms, 50)),
      p99Ms: round(percentile(ms, 99)),
      maxMs: round(ms[ms.length - 1] ?? null),
      statuses,
    };
  }
  const probeSummary = {};
  for (const [route, list] of Object.entries(probes)) {
    const ms = list.map((r) => r.ms).sort((a, b) => a - b);
    const statuses = {};
    for (const r of list) statuses[r.status] = (statuses[r.status] || 0) + 1;
    probeSummary[route] = {
      polls: list.length,
      p50Ms: round(percentile(ms, 50)),
      p99Ms: round(percentile(ms, 99)),
      worstMs: round(ms[ms.length - 1] ?? null),
      statuses,
    };
  }
  const afterWarm = rss.filter((r) => r.s * 1000 >= opts.warmMs && r.bytes !== null);
  const mib = (b) => round(b / 2 ** 20, 1);
  const rssSummary = afterWarm.length
    ? {
        atWarmMiB: mib(afterWarm[0].bytes),
        endMiB: mib(afterWarm[afterWarm.length - 1].bytes),
        minMiB: mib(Math.min(...afterWarm.map((r) => r.bytes))),
        maxMiB: mib(Math.max(...afterWarm.map((r) => r.bytes))),
      }
    : null;
  const fiveXX = Object.entries(byStatus)
    .filter(([s]) => Number(s) >= 500)
    .reduce((a, [, n]) => a + n, 0);
  const report = {
    bench: 'service --soak',
    date: new Date().toISOString(),
    machine: machine(),
    loadAverage: loadAverage(),
    loadOverTime: loads,
    options: {
      durationS: opts.durationMs / 1000,
      rate: opts.rate,
      warmS: opts.warmMs / 1000,
      timeoutMs: opts.timeoutMs,
      probeEveryMs: opts.probeEveryMs,
    },
    mix: MIX.map((m) => ({ kind: m.kind, weight: m.weight })),
    requests: serial,
    byStatus,
    fiveXX,
    byKind,
    probes: probeSummary,
    rss: { afterWarm: rssSummary, samples: rss.map((r) => ({ s: r.s, MiB: r.bytes === null ? null : mib(r.bytes) })) },
  };
  const outDir = path.join(__dirname, '..', '..', '..', 'bench-results');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, opts.out), `${JSON.stringify(report, null, 2)}\n`);
  console.log(`requests ${serial}, by status ${JSON.stringify(byStatus)}, 5xx ${fiveXX}`);
  for (const [kind, k] of Object.entries(byKind))
    console.log(
      `  ${kind.padEnd(15)} n=${String(k.requests).padStart(5)}  p50 ${k.p50Ms} ms  p99 ${k.p99Ms} ms  ${JSON.stringify(k.statuses)}`,
    );
  for (const [route, p] of Object.entries(probeSummary))
    console.log(
      `  ${route.padEnd(15)} polls ${p.polls}  p50 ${p.p50Ms} ms  p99 ${p.p99Ms} ms  worst ${p.worstMs} ms  ${JSON.stringify(p.statuses)}`,
    );
  console.log(`  RSS after warm-up: ${JSON.stringify(rssSummary)}`);
  console.log(`wrote bench-results/${opts.out}`);
  if (server) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
}

module.exports = { main, MIX };
