#!/usr/bin/env node
'use strict';
// npm run attack: a hostile-client run against `pjrt-score serve` on the real
// default model, on 127.0.0.1 only, bounded in count and time. Phases:
//   0. warm-up, then the "before" reading: the 20 valid request shapes the
//      run sends, then valid requests of other shapes until the JIT cache
//      holds as many programs as its cap (--jit-cache-entries, given to the
//      server), a round of mutations, the same 20 valid requests again. Each
//      program holds memory (docs/service.md, "Memory"), so with the cache
//      full before, the programs that rare valid mutated bodies of new shapes
//      bring in replace others, and growth means memory kept, not a cache
//      filling up. The server starts with an empty executable cache (its
//      cache directory is a temporary one whose models and plugins link to
//      the real cache), so the warm-up compiles programs as the attack will,
//      and what the compiler costs once (its code paged in) is in "before";
//   1. mutations: grammar-aware mutated /v1/score bodies and headers through
//      a keep-alive client, plus raw-socket request mutations (broken request
//      lines, header syntax, chunking, lengths) and oversized headers;
//      every answer must be below 500 and the process must live;
//   2. siege: idle connections that never send a byte and slow clients that
//      trickle headers or bodies byte by byte, while valid requests go one
//      at a time; blocks with and without the siege alternate: every valid
//      request must succeed, the siege p99 within 2x the quiet p99;
//   3. RSS of the server after the attack within 100 MB (10^8 bytes) of
//      before, each read after the same 20 valid requests; the memory the
//      server reports (V8 heap, external, JIT and prefix caches) is printed
//      with each reading, so growth can be placed.
// Prints the figures and the machine; exit status 1 when a check fails.
//
// Options: --mutations N (default 100000), --warm-mutations N (default 5000),
// --raw-share F (share of the mutations sent as raw bytes, default 0.1),
// --idle N (1000), --slow N (slow clients, default 100), --valid N (valid
// requests with and without the siege, each; default 300), --concurrency N
// (mutation senders, default 8), --seed N, --max-seconds S (whole run,
// default 1800), --jit-cache-entries N (the server's cap, default 8),
// --shared-executable-cache (use the real executable cache: faster, but what
// earlier runs compiled is loaded instead of compiled).
// A short run: --mutations 20000 --warm-mutations 2000 --valid 50 --idle 200 --slow 20
const http = require('node:http');
const net = require('node:net');
const fs = require('node:fs');
const os = require('node:os');
const { parseArgs } = require('node:util');
const { describeMachine } = require('../../lib/machine');
const { startService } = require('../../../test/helpers/service');
const path = require('node:path');
const { xorshift32 } = require('../../../fuzz/engine');
const { mutate } = require('../../../fuzz/mutate');
const { cacheDir } = require('../../../dist/util/cache-dir');

const { values: opts } = parseArgs({
  options: {
    mutations: { type: 'string', default: '100000' },
    'warm-mutations': { type: 'string', default: '5000' },
    'jit-cache-entries': { type: 'string', default: '8' },
    'shared-executable-cache': { type: 'boolean', default: false },
    'raw-share': { type: 'string', default: '0.1' },
    idle: { type: 'string', default: '1000' },
    slow: { type: 'string', default: '100' },
    valid: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '8' },
    seed: { type: 'string', default: '15' },
    'max-seconds': { type: 'string', default: '1800' },
  },
});
const MUTATIONS = Number(opts.mutations);
const WARM_MUTATIONS = Number(opts['warm-mutations']);
const JIT_CACHE_ENTRIES = Number(opts['jit-cache-entries']);
const RAW_SHARE = Number(opts['raw-share']);
const IDLE = Number(opts.idle);
const SLOW = Number(opts.slow);
const VALID = Number(opts.valid);
const CONCURRENCY = Number(opts.concurrency);
/** The server's V8 external memory once the model-load buffers are collected (its working size is a few MiB). */
const EXTERNAL_SETTLED_BYTES = 32 * 2 ** 20;
const deadline = Date.now() + Number(opts['max-seconds']) * 1000;

const random = xorshift32(Number(opts.seed));
const int = (n) => Math.floor(random() * n);
const pick = (list) => list[int(list.length)];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- valid requests ----------------------------------------------------------

const YES = 9805;
const NO = 787;
const NOUNS = ['apple', 'car', 'banana', 'hammer', 'cherry', 'cloud', 'pear', 'violin'];
function validBody(i) {
  return {
    query: `Is the following a fruit? Answer yes or no. (${i % 10})`,
    items: NOUNS.slice(i % 4, (i % 4) + 4),
    label_token_ids: [YES, NO],
    apply_softmax: true,
  };
}

// ---- grammar-aware bodies ------------------------------------------------------

const STRINGS = [
  '',
  'a',
  'apple',
  ' ',
  '\u0000',
  '\ud800',
  '\udfff',
  '\u202e',
  '😀',
  'é',
  'x'.repeat(5000),
  '\\',
  '"',
  '<|im_start|>',
  '\n\t',
];
const NUMBERS = [0, 1, -1, 9805, 49151, 49152, 1e9, -0, 0.5, 2 ** 31, 2 ** 53, 1e308, -1e308, 1e-320];
function scalar() {
  switch (int(6)) {
    case 0:
      return pick(STRINGS);
    case 1:
      return pick(NUMBERS);
    case 2:
      return pick([true, false, null]);
    case 3:
      return {};
    case 4:
      return [];
    default:
      return Array.from({ length: int(4) }, () => pick(NOUNS));
  }
}
function tokenList() {
  const n = random() < 0.05 ? int(3000) : int(6);
  return Array.from({ length: n }, () => (random() < 0.9 ? int(49152) : scalar()));
}
function textOrTokens() {
  const r = random();
  if (r < 0.55) return random() < 0.8 ? `${pick(NOUNS)} ${pick(STRINGS).slice(0, 40)}` : pick(STRINGS);
  if (r < 0.85) return tokenList();
  return scalar();
}
function items() {
  const r = random();
  if (r < 0.8) return Array.from({ length: int(6) }, textOrTokens);
  if (r < 0.9) {
    // Many items: almost always with one bad element, so few of them run the model.
    const list = Array.from({ length: 900 + int(300) }, () => pick(NOUNS));
    if (random() < 0.95) list[int(list.length)] = scalar();
    return list;
  }
  return scalar();
}
function deepNesting() {
  const depth = pick([100, 1000, 10000, 100000]);
  return `{"query":${'['.repeat(depth)}1${']'.repeat(random() < 0.5 ? depth : 0)},"items":["a"],"label_token_ids":[1]}`;
}
// Bodies that would run the model are kept rare (VALID_SHARE), so the run
// measures the parser and validator rather than queueing behind scoring: the
// rest carry at least one bad field before any byte-level mutation.
const VALID_SHARE = 0.002;
const BAD_FIELDS = {
  query: () => pick([null, 5, {}, [], [-1], [1.5], [49152], ['a'], '', [[1]]]),
  items: () => pick([null, 'a', {}, [[]], [null], [['x']], [[-3]], Array(1100).fill('a'), [''.padEnd(3, '\ud800')]]),
  label_token_ids: () => pick([null, [], [-1], [49152], [0.5], ['1'], 7, [[1]]]),
  apply_softmax: () => pick(['true', 1, null, {}]),
  item_first: () => pick(['false', 0, []]),
};
function grammarBody() {
  if (random() < 0.02) return deepNesting();
  const body = {};
  if (random() < VALID_SHARE) {
    Object.assign(body, validBody(int(1000)));
  } else {
    if (random() < 0.9) body.query = textOrTokens();
    if (random() < 0.9) body.items = items();
    if (random() < 0.9)
      body.label_token_ids =
        random() < 0.8 ? Array.from({ length: int(4) }, () => (random() < 0.9 ? int(49152) : scalar())) : scalar();
    if (random() < 0.3) body.apply_softmax = pick([true, false, 'true', 1, null]);
    if (random() < 0.3) body.item_first = pick([true, false, 'false', 0, null]);
    if (random() < 0.1) body.model = pick(STRINGS);
    if (random() < 0.1) body[pick(['__proto__', 'constructor', 'extra', 'toString', ''])] = scalar();
    const field = pick(Object.keys(BAD_FIELDS));
    body[field] = BAD_FIELDS[field]();
  }
  let text = random() < 0.05 ? JSON.stringify(scalar()) : JSON.stringify(body);
  if (random() < 0.3)
    text = mutate(Buffer.from(text), { random, dictionary: DICTIONARY, maxLength: 1 << 20 }).toString('latin1');
  return Buffer.from(text, 'latin1');
}
const DICTIONARY = [
  '"query"',
  '"items"',
  '"label_token_ids"',
  '"apply_softmax"',
  '"item_first"',
  'true',
  'null',
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  '"\\ud800"',
  '1e999',
].map((w) => Buffer.from(w));

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/json, text/html',
  'application/json; charset=latin1',
  'multipart/form-data; boundary=x',
  undefined,
  'application/json' + ';x'.repeat(500),
];
const PATHS = [
  '/v1/score',
  '/v1/score',
  '/v1/score',
  '/v1/score/',
  '/v1/score?x=1',
  '/v1/rerank',
  '/health',
  '/metrics',
  '/',
  '/%2e%2e/etc/passwd',
  '/v1/score#x',
  `/${'a'.repeat(4000)}`,
];
const METHODS = ['POST', 'POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH'];

function mutatedRequest() {
  const headers = {};
  const type = pick(CONTENT_TYPES);
  if (type !== undefined) headers['content-type'] = type;
  if (random() < 0.1) headers['x-junk'] = 'v'.repeat(int(4000));
  if (random() < 0.05) headers['content-encoding'] = pick(['gzip', 'br', 'identity', 'x']);
  if (random() < 0.05) headers.accept = pick(['*/*', 'text/html', '', 'application/json;q=0']);
  if (random() < 0.02) for (let i = 0; i < 90; i++) headers[`x-h${i}`] = String(i);
  return {
    method: random() < 0.9 ? 'POST' : pick(METHODS),
    path: random() < 0.9 ? '/v1/score' : pick(PATHS),
    headers,
    body: grammarBody(),
  };
}

// ---- raw requests ---------------------------------------------------------------

function rawRequest() {
  const body = Buffer.from(JSON.stringify(validBody(int(100))));
  const r = random();
  if (r < 0.1) {
    // oversized header: Node's limit is 16 KiB, so this must be a 431, not a crash
    return Buffer.from(
      `POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(pick([17000, 65536, 1 << 20]))}\r\nContent-Length: 2\r\n\r\n{}`,
    );
  }
  if (r < 0.2) {
    const chunks = pick([
      '5\r\n{"a":\r\n0\r\n\r\n',
      'zz\r\n{}\r\n0\r\n\r\n',
      'ffffffffffffffff\r\n{}\r\n0\r\n\r\n',
      '-1\r\n{}\r\n',
      '2;ext=1\r\n{}\r\n0\r\n\r\n',
    ]);
    const both = random() < 0.5 ? 'Content-Length: 2\r\n' : '';
    return Buffer.from(
      `POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${both}Transfer-Encoding: chunked\r\n\r\n${chunks}`,
    );
  }
  if (r < 0.3) {
    const length = pick(['-1', '1e3', '99999999999999999999', '0x10', ' 5', '5, 6', '']);
    return Buffer.from(
      `POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{"q":1}`,
    );
  }
  const template = Buffer.concat([
    Buffer.from(
      `POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`,
    ),
    body,
  ]);
  return mutate(template, { random, dictionary: RAW_WORDS, maxLength: 1 << 16 });
}
const RAW_WORDS = [
  '\r\n',
  ' HTTP/1.1',
  'HTTP/1.0',
  'HTTP/2.0',
  'Transfer-Encoding: chunked\r\n',
  'Content-Length: 0\r\n',
  'Expect: 100-continue\r\n',
  'Host: \r\n',
  ':',
  '\0',
  '\n',
  'Connection: keep-alive\r\n',
  'Upgrade: websocket\r\n',
  'GET ',
  'POST ',
  '/v1/score',
  '%00',
  '\x7f',
].map((w) => Buffer.from(w, 'latin1'));

/** Sends bytes on a fresh connection and reads until the server closes or 3 s pass. Resolves the status (or 'closed'/'timeout'). */
function sendRaw(port, bytes) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    let settled = false;
    const done = (what) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(what);
    };
    const timer = setTimeout(() => done(statusOf(got) ?? 'timeout'), 3000);
    socket.on('connect', () => socket.end(bytes));
    socket.on('data', (chunk) => {
      got += chunk.toString('latin1');
      const status = statusOf(got);
      if (status !== null) done(status);
    });
    socket.on('error', () => done(statusOf(got) ?? 'reset'));
    socket.on('close', () => done(statusOf(got) ?? 'closed'));
  });
}
function statusOf(text) {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  return m ? Number(m[1]) : null;
}

// ---- HTTP client ------------------------------------------------------------------

function send(port, agent, { method, path, headers, body }, timeoutMs = 60_000) {
  return new Promise((resolve) => {
    const started = performance.now();
    let req;
    try {
      req = http.request(
        {
          host: '127.0.0.1',
          port,
          agent,
          method,
          path,
          headers: { ...headers, 'content-length': body ? body.length : 0 },
        },
        (res) => {
          const parts = [];
          res.on('data', (c) => parts.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode,
              ms: performance.now() - started,
              text: Buffer.concat(parts).toString('utf8'),
            }),
          );
          res.on('error', () => resolve({ status: 'response-error', ms: performance.now() - started }));
        },
      );
    } catch (error) {
      resolve({ status: `client-refused (${error.code})` });
      return;
    }
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', (error) =>
      resolve({ status: `error (${error.code || error.message})`, ms: performance.now() - started }),
    );
    req.end(body);
  });
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function rssMiB(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) / 1024;
}

/** The server's own view of its memory, from /metrics (process metrics and the Scorer's caches). */
async function serverMemory(port, agent) {
  const r = await send(port, agent, { method: 'GET', path: '/metrics', headers: {}, body: null });
  const text = typeof r.text === 'string' ? r.text : '';
  const value = (name) => {
    const m = new RegExp(`^${name} (\\S+)`, 'm').exec(text);
    return m ? Number(m[1]) : NaN;
  };
  return {
    heapUsed: value('nodejs_heap_size_used_bytes'),
    heapTotal: value('nodejs_heap_size_total_bytes'),
    external: value('nodejs_external_memory_bytes'),
    jitEntries: value('pjrt_score_jit_cache_entries'),
    jitCompiles: value('pjrt_score_jit_compiles_total'),
    jitDiskLoads: value('pjrt_score_jit_disk_hits_total'),
    jitEvictions: value('pjrt_score_jit_cache_evictions_total'),
    prefixEntries: value('pjrt_score_prefix_cache_entries'),
    prefixBytes: value('pjrt_score_prefix_cache_bytes'),
  };
}
const mib = (bytes) => (bytes / 2 ** 20).toFixed(1);
function describeMemory(rss, m) {
  return (
    `RSS ${rss.toFixed(1)} MiB; V8 heap ${mib(m.heapUsed)} MiB used of ${mib(m.heapTotal)}, external ${mib(m.external)} MiB; ` +
    `JIT cache ${m.jitEntries} programs of at most ${JIT_CACHE_ENTRIES} (so far ${m.jitCompiles} compiled, ${m.jitDiskLoads} loaded from disk, ${m.jitEvictions} evicted); prefix cache ${m.prefixEntries} entries, ${mib(m.prefixBytes)} MiB`
  );
}

/**
 * A cache directory whose models, plugins and downloaded tools are the real
 * cache's (linked) and whose executables start empty, so the server compiles.
 */
function freshExecutableCache() {
  const real = cacheDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-attack-cache-'));
  for (const entry of fs.readdirSync(real)) {
    if (entry !== 'executables' && entry !== 'fuzz') fs.symlinkSync(path.join(real, entry), path.join(dir, entry));
  }
  return dir;
}

/** `count` valid requests one at a time; their latencies (ms) and failures. */
async function validRequests(port, agent, count, offset) {
  const latencies = [];
  let failures = 0;
  for (let i = 0; i < count; i++) {
    const body = Buffer.from(JSON.stringify(validBody(offset + i)));
    const r = await send(port, agent, {
      method: 'POST',
      path: '/v1/score',
      headers: { 'content-type': 'application/json' },
      body,
    });
    if (r.status === 200) latencies.push(r.ms);
    else failures++;
  }
  return { latencies, failures };
}

/**
 * Opens `idle` connections that send nothing and `slow` clients that trickle a
 * request one byte per 100 ms and never finish it (headers padded past what
 * they can send in the run; bodies shorter than their Content-Length).
 * Returns close(), which ends them and reports how many the server closed first.
 */
async function openSiege(port, idle, slow) {
  const sockets = [];
  const timers = [];
  let closedByServer = 0;
  let closing = false;
  const open = () =>
    new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.on('error', () => resolve(s));
      s.on('close', () => {
        if (!closing) closedByServer++;
      });
      sockets.push(s);
    });
  for (let i = 0; i < idle; i++) await open();
  for (let i = 0; i < slow; i++) {
    const s = await open();
    let bytes;
    if (i % 2 === 0) {
      bytes = Buffer.from(
        `POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Pad: ${'p'.repeat(8000)}\r\n\r\n`,
      );
    } else {
      s.write(
        'POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n',
      );
      bytes = Buffer.from(JSON.stringify({ query: 'q'.repeat(99000), items: ['a'], label_token_ids: [1] }));
    }
    let at = 0;
    timers.push(
      setInterval(() => {
        if (at < bytes.length && !s.destroyed) s.write(bytes.subarray(at, ++at));
      }, 100),
    );
  }
  return {
    close() {
      closing = true;
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      return closedByServer;
    },
  };
}

// ---- the run -------------------------------------------------------------------

(async () => {
  const started = Date.now();
  console.log(`attack on pjrt-score serve (default model), 127.0.0.1 only; machine: ${describeMachine()}`);
  const freshCache = opts['shared-executable-cache'] ? null : freshExecutableCache();
  if (freshCache) process.on('exit', () => fs.rmSync(freshCache, { recursive: true, force: true }));
  console.log(
    freshCache
      ? `executables compile fresh: server cache directory ${freshCache} (models and plugins linked to ${cacheDir()})`
      : `executables: the shared cache in ${cacheDir()}`,
  );
  const service = await startService(
    ['--jit-cache-entries', String(JIT_CACHE_ENTRIES)],
    freshCache ? { env: { PJRT_SCORE_CACHE: freshCache } } : {},
  );
  const { port, pid } = service;
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const checks = [];
  const check = (ok, what) => {
    checks.push({ ok, what });
    console.log(`${ok ? 'PASS' : 'FAIL'} ${what}`);
  };

  // Warm up before the "before" RSS: the 20 valid request shapes (validBody
  // repeats every 20), which compiles their programs, then a short mutation
  // round, so the V8 heap and malloc arenas reach their working size and
  // growth after it means memory kept, not a first-use cost.
  for (let i = 0; i < 20; i++)
    await send(port, agent, {
      method: 'POST',
      path: '/v1/score',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify(validBody(i))),
    });
  const rssWarm = rssMiB(pid);
  const memoryWarm = await serverMemory(port, agent);
  // Other shapes (item counts in other buckets) until the JIT cache is at its cap.
  let fill = 0;
  for (const count of [1, 2, 3, 5, 8, 12, 18, 27, 40, 60, 90, 135, 200, 300, 450, 675, 1000]) {
    if ((await serverMemory(port, agent)).jitEntries >= JIT_CACHE_ENTRIES) break;
    const body = { ...validBody(count), items: Array.from({ length: count }, (_, i) => NOUNS[i % NOUNS.length]) };
    const r = await send(port, agent, {
      method: 'POST',
      path: '/v1/score',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify(body)),
    });
    if (r.status !== 200)
      throw new Error(`a warm-up request of ${count} items was answered ${r.status}: ${(r.text || '').slice(0, 300)}`);
    fill++;
  }
  const statuses = new Map();
  const fiveHundreds = [];
  const rssSamples = [];
  let raw = 0;
  let oversized = 0;
  const mutationRound = async (count, sample) => {
    let sent = 0;
    let answered = 0;
    const roundStart = Date.now();
    const sender = async () => {
      while (sent < count && Date.now() < deadline) {
        sent++;
        let status;
        if (random() < RAW_SHARE) {
          raw++;
          const bytes = rawRequest();
          if (bytes.length > 16000 && /X-Big/.test(bytes.subarray(0, 60).toString('latin1'))) oversized++;
          status = await sendRaw(port, bytes);
          if (typeof status === 'number' && status >= 500)
            fiveHundreds.push({ status, raw: bytes.subarray(0, 300).toString('latin1') });
        } else {
          const request = mutatedRequest();
          const r = await send(port, agent, request);
          status = r.status;
          if (typeof status === 'number' && status >= 500)
            fiveHundreds.push({
              status,
              request: { ...request, body: request.body.toString('latin1').slice(0, 300) },
              answer: (r.text || '').slice(0, 300),
            });
        }
        statuses.set(status, (statuses.get(status) || 0) + 1);
        if (sample && ++answered % 10000 === 0) {
          rssSamples.push(Math.round(rssMiB(pid)));
          console.log(
            `  ${answered} mutated requests answered (${((Date.now() - roundStart) / 1000).toFixed(0)} s), server RSS ${rssSamples[rssSamples.length - 1]} MiB`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, sender));
    return { sent, seconds: (Date.now() - roundStart) / 1000 };
  };
  await mutationRound(WARM_MUTATIONS, false);
  // Loading the model leaves ~67 MiB of host ArrayBuffers (the weights as
  // read, already uploaded) that V8 frees at its first large collection; a
  // "before" read while they are still held would count their release as
  // shrinkage. So the warm-up goes on, 1,000 mutations at a time, until the
  // server reports its external memory at its working size.
  let extraWarm = 0;
  for (let round = 0; round < 20 && (await serverMemory(port, agent)).external > EXTERNAL_SETTLED_BYTES; round++) {
    await mutationRound(1000, false);
    extraWarm += 1000;
  }
  // Every reading follows the same 20 valid requests, one at a time, and a
  // pause in which the idle server gives its freed scratch back to the OS.
  const settle = async () => {
    for (let i = 0; i < 20; i++)
      await send(port, agent, {
        method: 'POST',
        path: '/v1/score',
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify(validBody(i))),
      });
    await sleep(1000);
    return rssMiB(pid);
  };
  const rssBefore = await settle();
  const memoryBefore = await serverMemory(port, agent);
  console.log(`server after the 20 valid request shapes: ${describeMemory(rssWarm, memoryWarm)}`);
  console.log(`then ${fill} valid requests of other item counts, to fill the JIT cache`);
  if (memoryBefore.jitEntries < JIT_CACHE_ENTRIES)
    console.log(`  (the JIT cache is not full: growth may include programs added during the attack)`);
  console.log(
    `server after ${WARM_MUTATIONS + extraWarm} warm-up mutations and the 20 valid requests again (the "before"): ${describeMemory(rssBefore, memoryBefore)}`,
  );
  if (memoryBefore.external > EXTERNAL_SETTLED_BYTES)
    console.log(`  (the external memory is still above ${mib(EXTERNAL_SETTLED_BYTES)} MiB: the "before" may be high)`);

  const { sent, seconds: mutationSeconds } = await mutationRound(MUTATIONS, true);
  const histogram = [...statuses.entries()]
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])))
    .map(([st, n]) => `${st}: ${n}`)
    .join(', ');
  console.log(
    `mutations: ${sent} in ${mutationSeconds.toFixed(0)} s after ${WARM_MUTATIONS + extraWarm} warm-up ones (${raw} raw, ${oversized} with oversized headers, in all); answers ${histogram}`,
  );
  console.log(`server RSS every 10,000 mutations (MiB): ${rssSamples.join(', ')}`);
  const count5xx = [...statuses.entries()]
    .filter(([s]) => typeof s === 'number' && s >= 500)
    .reduce((a, [, n]) => a + n, 0);
  for (const f of fiveHundreds.slice(0, 5)) console.log(`  5xx sample: ${JSON.stringify(f).slice(0, 600)}`);
  check(sent === MUTATIONS, `${sent} of ${MUTATIONS} mutated requests sent within the time bound`);
  check(count5xx === 0, `no 5xx answer (${count5xx})`);
  check(service.exit === null, 'the server process is alive after the mutations');
  const rssMutated = await settle();
  console.log(
    `server after the mutations and the 20 valid requests: ${describeMemory(rssMutated, await serverMemory(port, agent))}`,
  );

  // Siege: idle and slow connections while valid requests keep coming. Quiet
  // and siege blocks alternate, so load from outside this run (a shared
  // machine) falls on both figures alike.
  const ROUNDS = 5;
  const quietLatencies = [];
  const siegeLatencies = [];
  let quietFailures = 0;
  let siegeFailures = 0;
  let closedByServer = 0;
  const perBlock = Math.ceil(VALID / ROUNDS);
  for (let round = 0; round < ROUNDS; round++) {
    const q = await validRequests(port, agent, perBlock, round * perBlock);
    quietLatencies.push(...q.latencies);
    quietFailures += q.failures;
    const siege = await openSiege(port, IDLE, SLOW);
    await sleep(500);
    const a = await validRequests(port, agent, perBlock, round * perBlock);
    siegeLatencies.push(...a.latencies);
    siegeFailures += a.failures;
    closedByServer += siege.close();
    await sleep(500);
  }
  const quiet = { p50: percentile(quietLatencies, 50), p99: percentile(quietLatencies, 99) };
  const siege = { p50: percentile(siegeLatencies, 50), p99: percentile(siegeLatencies, 99) };
  console.log(
    `quiet:       ${quietLatencies.length} valid requests ok, ${quietFailures} failed, p50 ${quiet.p50.toFixed(1)} ms, p99 ${quiet.p99.toFixed(1)} ms`,
  );
  console.log(
    `under siege: ${siegeLatencies.length} valid requests ok, ${siegeFailures} failed, p50 ${siege.p50.toFixed(1)} ms, p99 ${siege.p99.toFixed(1)} ms ` +
      `(${IDLE} idle connections + ${SLOW} slow clients at 1 byte per 100 ms, ${ROUNDS} rounds; the server closed ${closedByServer} of them early)`,
  );
  console.log(
    `load average during the run (1/5/15 min): ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')}`,
  );
  check(quietFailures === 0, `every valid request succeeded when quiet (${quietFailures} failed)`);
  check(siegeFailures === 0, `every valid request succeeded under siege (${siegeFailures} failed)`);
  check(
    siege.p99 <= 2 * quiet.p99,
    `p99 under siege ${siege.p99.toFixed(1)} ms within 2x the quiet p99 ${quiet.p99.toFixed(1)} ms (ratio ${(siege.p99 / quiet.p99).toFixed(2)})`,
  );

  await sleep(3000);
  const health = await send(port, agent, { method: 'GET', path: '/health', headers: {}, body: null });
  check(health.status === 200, `/health answers 200 after the attack (${health.status})`);
  const rssAfter = await settle();
  const memoryAfter = await serverMemory(port, agent);
  console.log(
    `server after the siege and the 20 valid requests (the "after"): ${describeMemory(rssAfter, memoryAfter)}`,
  );
  const growthMiB = rssAfter - rssBefore;
  const growthMB = (growthMiB * 2 ** 20) / 1e6;
  console.log(
    `RSS before ${rssBefore.toFixed(1)} MiB, after ${rssAfter.toFixed(1)} MiB: ${growthMiB >= 0 ? '+' : ''}${growthMiB.toFixed(1)} MiB (${growthMB.toFixed(1)} MB); ` +
      `meanwhile V8 heap used ${mib(memoryAfter.heapUsed - memoryBefore.heapUsed)} MiB, heap total ${mib(memoryAfter.heapTotal - memoryBefore.heapTotal)} MiB, ` +
      `JIT cache ${memoryAfter.jitEntries - memoryBefore.jitEntries >= 0 ? '+' : ''}${memoryAfter.jitEntries - memoryBefore.jitEntries} programs ` +
      `(${memoryAfter.jitCompiles - memoryBefore.jitCompiles} compiled, ${memoryAfter.jitDiskLoads - memoryBefore.jitDiskLoads} loaded from disk, ${memoryAfter.jitEvictions - memoryBefore.jitEvictions} evicted)`,
  );
  check(growthMB <= 100, `server RSS after the attack within 100 MB of before (${growthMB.toFixed(1)} MB)`);
  agent.destroy();
  const exit = await service.stop();
  check(exit.signal === null || exit.signal === 'SIGTERM', `the server shut down cleanly (${JSON.stringify(exit)})`);
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
  const failed = checks.filter((c) => !c.ok);
  console.log(failed.length === 0 ? 'attack: all checks passed' : `attack: ${failed.length} check(s) FAILED`);
  process.exit(failed.length === 0 ? 0 : 1);
})().catch((error) => {
  console.error(error);
  process.exit(2);
});
