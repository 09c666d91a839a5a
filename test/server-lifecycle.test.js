'use strict';
// The service under pressure and at the end of its life: a full queue
// answers 429 with Retry-After, a passed deadline 504 (and the work is
// dropped), 2,000 sequential requests do not grow RSS by 100 MB, and SIGTERM
// lets in-flight requests finish and exits 0.
const test = require('tape');
const { startService, rssBytes } = require('./helpers/service');

const QUEUE_SIZE = 1;
// Long enough for one running and one queued small request on a slow, busy 2-core machine;
// far shorter than the deadline test's 400-item request.
const TIMEOUT_MS = 8000;
const LEAK_REQUESTS = Number(process.env.PJRT_SCORE_LEAK_REQUESTS || 2000);
const YES = 9805;
const NO = 787;

let service;

/** A request of the warm shape (query <= 16 tokens, 4 items of <= 8 tokens): a few hundred ms. */
const medium = (i) => ({
  query: `Request ${i}: is the following a kind of fruit?`,
  items: [' apple pie', ' a red car', ' banana bread', ' old hammer'],
  label_token_ids: [YES, NO],
});

function metricValue(text, re) {
  const line = text.split('\n').find((l) => re.test(l));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

test('start the server', async (t) => {
  service = await startService(['--warmup', '16x8x4,8x8x1', '--queue-size', String(QUEUE_SIZE), '--timeout-ms', String(TIMEOUT_MS)]);
  t.ok(service.port > 0, `listening on ${service.port}`);
  const first = await service.score(medium(0));
  t.equal(first.status, 200, 'a warm request is answered');
});

test('queue full -> 429 with Retry-After', async (t) => {
  // Distinct queries, so nothing merges: one runs, QUEUE_SIZE wait, the rest are refused at once.
  const started = Date.now();
  const results = await Promise.all(Array.from({ length: 6 }, (_, i) => service.score(medium(i + 1)).then((res) => ({ res, ms: Date.now() - started }))));
  const statuses = results.map((r) => r.res.status);
  t.comment(`statuses ${JSON.stringify(statuses)}, times ${JSON.stringify(results.map((r) => r.ms))} ms`);
  const refused = results.filter((r) => r.res.status === 429);
  t.ok(refused.length >= 6 - 1 - QUEUE_SIZE, `at least ${6 - 1 - QUEUE_SIZE} of 6 refused (${refused.length})`);
  t.ok(statuses.filter((s) => s === 200).length >= 1, 'the running request completes');
  t.ok(statuses.every((s) => s === 200 || s === 429), 'only 200 and 429');
  for (const { res } of refused) {
    t.match(res.headers['retry-after'] || '', /^[1-9]\d*$/, `Retry-After: ${res.headers['retry-after']}`);
    t.equal(res.json.object, 'error', 'error body');
    t.equal(res.json.code, 429, 'code 429');
    t.equal(res.json.type, 'RateLimitError', 'type');
  }
  const fastest = Math.min(...refused.map((r) => r.ms));
  t.ok(fastest < Math.max(...results.filter((r) => r.res.status === 200).map((r) => r.ms)), 'refused before the running one finished');
  const after = await service.score(medium(99));
  t.equal(after.status, 200, 'served again once the queue drained');
});

test('deadline exceeded -> 504, and the work is dropped', async (t) => {
  const before = (await service.request({ path: '/metrics' })).text;
  const logsBefore = service.logs.length;
  // ~20k tokens: several passes, far beyond the deadline; the passes not yet run are dropped.
  const items = Array.from({ length: 400 }, (_, i) => ` item number ${i} is a long description of something that may or may not be a fruit, ${i}`);
  const started = Date.now();
  const res = await service.score({ query: 'Is this a fruit?', items, label_token_ids: [YES, NO] });
  const ms = Date.now() - started;
  t.equal(res.status, 504, `504 (${res.status}: ${res.text.slice(0, 200)})`);
  t.equal(res.json && res.json.object, 'error', 'error body');
  t.equal(res.json && res.json.code, 504, 'code 504');
  t.ok(ms >= TIMEOUT_MS - 50 && ms < TIMEOUT_MS + 2000, `answered at the deadline (${ms} ms)`);
  // The next request waits at most for the pass that was running, then runs.
  const next = await service.score({ query: 'Is this a fruit?', items: [' apple'], label_token_ids: [YES, NO] }, { timeoutMs: 120_000 });
  t.ok(next.status === 200 || next.status === 504, `the service goes on (${next.status})`);
  let ok = next.status === 200;
  for (let i = 0; i < 20 && !ok; i++) ok = (await service.score(medium(200 + i))).status === 200;
  t.ok(ok, 'a small request is answered 200 afterwards');
  const after = (await service.request({ path: '/metrics' })).text;
  const scored = (text) => metricValue(text, /^pjrt_score_scorer_items_total /);
  t.ok(scored(after) - scored(before) < 400, `the 400 items were not scored for nobody (scorer items +${scored(after) - scored(before)})`);
  t.ok(metricValue(after, /^pjrt_score_requests_total\{status="504",algorithm="none"\}/) >= 1, '504 counted in metrics');
  const line = service.logs.slice(logsBefore).find((e) => e.event === 'request' && e.status === 504);
  t.ok(line && line.items === 400, 'the 504 is logged with its item count');
});

test(`${LEAK_REQUESTS} sequential valid requests grow RSS by less than 100 MB`, async (t) => {
  // Every request runs the model (one item: the smallest program, ~50-90 ms on 2 cores).
  const body = { query: 'Is this a fruit?', items: [' apple'], label_token_ids: [YES, NO], apply_softmax: true };
  for (let i = 0; i < 50; i++) await service.score(body); // settle caches and allocator pools first
  const rss0 = rssBytes(service.pid);
  const started = Date.now();
  let failures = 0;
  let reference = null;
  let drift = 0;
  let deviceRuns = 0;
  // Sampled along the way: a large one-off drop (the host copy of the weights collected after
  // the upload) must not hide steady growth, so growth is also measured from the lowest sample.
  const samples = [rss0];
  for (let i = 0; i < LEAK_REQUESTS; i++) {
    if (i > 0 && i % 100 === 0) samples.push(rssBytes(service.pid));
    const items = i % 2 === 0 ? [' apple'] : [i % 4 === 1 ? ' car' : ' pear'];
    const res = await service.score({ ...body, items });
    if (res.status !== 200 || res.json.scores.length !== items.length) failures++;
    else if (items.length > 0) {
      deviceRuns++;
      if (i === 0) reference = res.json.scores;
      else if (i % 2 === 0) drift = Math.max(drift, Math.abs(res.json.scores[0][0] - reference[0][0]));
    }
  }
  const seconds = (Date.now() - started) / 1000;
  const rss1 = rssBytes(service.pid);
  const mb = (bytes) => (bytes / 2 ** 20).toFixed(0);
  const growth = (rss1 - rss0) / 2 ** 20;
  const fromLowest = (rss1 - Math.min(...samples)) / 2 ** 20;
  t.comment(
    `RSS ${mb(rss0)} MB -> ${mb(rss1)} MB (${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MB; lowest sample ${mb(Math.min(...samples))} MB) ` +
      `over ${LEAK_REQUESTS} requests (${deviceRuns} on the device) in ${seconds.toFixed(1)} s`,
  );
  t.comment(`samples every 100 requests (MB): ${samples.map(mb).join(' ')}`);
  t.equal(failures, 0, 'all answered 200 with one row per item');
  t.ok(drift <= 1e-6, `the same request keeps its scores (drift ${drift.toExponential(2)})`);
  t.ok(growth < 100, `RSS grew ${growth.toFixed(1)} MB < 100 MB from the start`);
  t.ok(fromLowest < 100, `RSS grew ${fromLowest.toFixed(1)} MB < 100 MB from the lowest sample`);
});

test('SIGTERM during requests: they complete, new work is refused, the process exits 0', async (t) => {
  const inFlight = [service.score(medium(300)), service.score(medium(301))];
  await new Promise((resolve) => setTimeout(resolve, 50));
  service.child.kill('SIGTERM');
  await service.waitForLog((e) => e.event === 'draining', 10_000);
  let refusal;
  try {
    refusal = await service.request({ path: '/health', agent: false });
  } catch (error) {
    refusal = { error: error.code || error.message };
  }
  t.ok(refusal.status === 503 || refusal.error, `a new request is refused while draining (${refusal.status || refusal.error})`);
  const results = await Promise.all(inFlight);
  t.deepEqual(results.map((r) => r.status), [200, 200], 'the running and the queued request complete with 200');
  t.ok(results.every((r) => r.json.scores.length === 4), 'with their scores');
  const exit = await service.exited;
  t.deepEqual(exit, { code: 0, signal: null }, 'exit code 0');
  const events = service.logs.map((e) => e.event);
  t.ok(events.includes('draining'), 'logged draining');
  t.ok(events.indexOf('closed') > events.lastIndexOf('request'), 'closed after the last request');
  await service.stop();
});
