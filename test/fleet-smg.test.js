'use strict';
// Three `pjrt-score serve` replicas behind the SGLang Model Gateway (smg from
// PyPI), all on 127.0.0.1 (docs/service.md, "Running a fleet"):
//   - /v1/rerank through smg gives the order and scores of one replica asked
//     directly (smg writes scores as f32);
//   - cache_aware keeps each query on one replica: the fleet's prefix cache
//     computes one query's K/V once, where round_robin does on every replica;
//   - a load-aware policy (least_load, reading /v1/loads) sends fewer requests
//     to a replica kept busy by direct requests;
//   - one replica SIGTERMed mid-load: readiness fails first (smg is told 503
//     by /health while the replica still serves), no client request fails;
//   - one replica SIGKILLed mid-load: the failed requests are counted;
//   - /v1/score is not routed by smg (404); every replica scores it alike.
// Verdicts are counts and routing, never latencies; every loop is bounded.
// The replicas run the default plan choice (`auto`): a query's first request
// runs packed, its second keeps the query's K/V in the prefix cache, later
// ones hit (docs/design.md, the cache rule).
const test = require('tape');
const http = require('node:http');
const { request, startService } = require('./helpers/service');
const { startSmg, getJson } = require('./helpers/smg');

const WARMUP = '96x16x4';
const DRAIN_DELAY_MS = 5000;
const REPLICA_ARGS = ['--warmup', WARMUP, '--drain-delay-ms', String(DRAIN_DELAY_MS), '--timeout-ms', '120000'];
// Sticky routing as the policy gives it: no warm-up slices diverting misses or hits to thin workers.
const CACHE_AWARE_ARGS = ['--worker-warmup-secs', '0', '--worker-warmup-divert-every', '0'];
const SMG_ARGS = ['--shutdown-grace-period-secs', '5', '--retry-max-retries', '5'];
// The SIGTERM and SIGKILL loads: requests, at once, and the answer count at which the signal goes.
const LOAD = 24;
const CONCURRENCY = 4;
const SIGNAL_AT = 6;

const replicas = [];
/** A replica's request-id prefix -> its index (ids are `<prefix>-<serial>`). */
const prefixOf = new Map();
let gateway = null;
/** Figures for the note, printed at the end. */
const note = {};
// A failed assertion must not leave processes behind: each child is ended by its own id.
process.on('exit', () => {
  for (const replica of replicas) if (!replica.exit) replica.child.kill('SIGKILL');
  if (gateway) gateway.child.kill('SIGKILL');
});

const DOCUMENTS = [
  'Paris is the capital and largest city of France.',
  'Bananas are rich in potassium.',
  'The Eiffel Tower stands in Paris.',
  'Mount Everest is the highest mountain.',
];

/** The query of number `i` in a set named `set`: distinct queries, distinct prefixes. */
const query = (set, i) =>
  `${['Capital', 'Fruit', 'Towers', 'Mountains', 'Rivers', 'Oceans'][i % 6]}, ${set.toLowerCase()} question ${i}: which document is about it?`;
// A query long enough (about 300 tokens, as SGLang's PR shape) that keeping its K/V pays under `auto`:
// the cache rule leaves the K/V of a query seen before when its prefix plan costs at most 25% over packed.
const CONTEXT = Array.from(
  { length: 24 },
  (_, k) => `Fact ${k}: the catalogue lists cities, fruits, towers and mountains.`,
).join(' ');
const longQuery = (set, i) => `${query(set, i)} ${CONTEXT}`;

/** POSTs JSON to a 127.0.0.1 URL; never rejects: a broken connection is { status: 0, error } (counted as failed). */
function post(url, body, agent = false) {
  const { port, pathname } = new URL(url);
  const headers = { 'content-type': 'application/json' };
  return request({
    port: Number(port),
    agent,
    method: 'POST',
    path: pathname,
    headers,
    body: JSON.stringify(body),
    timeoutMs: 180_000,
  }).catch((error) => ({ status: 0, error: error.message }));
}

const base = (replica) => `http://127.0.0.1:${replica.port}`;

/** The replica that answered a through-smg rerank: its request id's prefix. */
function servedBy(reply) {
  const id = reply.json?.results?.[0]?.meta_info?.id;
  if (typeof id !== 'string') return -1;
  return prefixOf.get(id.split('-')[0]) ?? -1;
}

async function prefixCounters(replica) {
  const res = await replica.request({ path: '/metrics' });
  const value = (name) => {
    const line = res.text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? 0 : Number(line.split(' ').pop());
  };
  return { hits: value('pjrt_score_prefix_cache_hits_total'), misses: value('pjrt_score_prefix_cache_misses_total') };
}

async function fleetCounters(indices) {
  const all = await Promise.all(indices.map((i) => prefixCounters(replicas[i])));
  return all.reduce((a, c) => ({ hits: a.hits + c.hits, misses: a.misses + c.misses }), { hits: 0, misses: 0 });
}

/** `count` requests through `send`, `concurrency` at a time, in order; `after(done)` runs as each finishes. */
async function runLoad(count, concurrency, send, after = () => undefined) {
  const replies = new Array(count);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      replies[i] = await send(i);
      done++;
      after(done);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return replies;
}

async function useGateway(policy, args = [], indices = [0, 1, 2]) {
  if (gateway) await gateway.stop();
  gateway = null;
  gateway = await startSmg({ workers: indices.map((i) => base(replicas[i])), policy, args: [...SMG_ARGS, ...args] });
}

/** Sequential reranks through smg: `reps` rounds over `queries` query numbers of `set`; returns the replica per query. */
async function routeRounds(set, queries, reps) {
  const seen = Array.from({ length: queries }, () => new Set());
  let failed = 0;
  for (let r = 0; r < reps; r++) {
    for (let q = 0; q < queries; q++) {
      const reply = await post(`${gateway.url}/v1/rerank`, {
        model: 'x',
        query: longQuery(set, q),
        documents: DOCUMENTS,
      });
      if (reply.status !== 200) failed++;
      seen[q].add(servedBy(reply));
    }
  }
  return { seen, failed };
}

test('three replicas and smg on 127.0.0.1', async (t) => {
  // The first compiles the warmup programs into the disk cache; the other two load them.
  replicas.push(await startService(REPLICA_ARGS));
  replicas.push(...(await Promise.all([startService(REPLICA_ARGS), startService(REPLICA_ARGS)])));
  for (const [i, replica] of replicas.entries()) {
    const live = await replica.request({ path: '/livez' });
    const ready = await replica.request({ path: '/readyz' });
    t.equal(live.status, 200, `replica ${i}: /livez 200`);
    t.equal(ready.status, 200, `replica ${i}: /readyz 200 once warm`);
    prefixOf.set(String(ready.headers['x-request-id']).split('-')[0], i);
  }
  t.equal(prefixOf.size, 3, 'three distinct request-id prefixes');
  await useGateway('round_robin');
  let listed = await gateway.workers();
  t.equal(listed.length, 3, 'smg lists the three replicas');
  t.ok(
    listed.every((w) => w.is_healthy),
    'all healthy',
  );
  // The load monitor polls every second: wait (bounded) for its first report of each.
  const reported = (list) => list.every((w) => Array.isArray(w.engine_load?.loads) && w.engine_load.loads.length === 1);
  for (let i = 0; i < 120 && !reported(listed); i++) {
    await new Promise((r) => setTimeout(r, 250));
    listed = await gateway.workers();
  }
  t.ok(reported(listed), "smg reads each replica's load report (/v1/loads)");
});

test('/v1/rerank through smg: the order and scores of one replica asked directly', async (t) => {
  const q = 'Which document is about the capital of France?';
  const direct = await post(`${base(replicas[0])}/v1/rerank`, { query: q, documents: DOCUMENTS, rid: null });
  const cohere = await post(`${base(replicas[0])}/v1/rerank`, { query: q, documents: DOCUMENTS, model: 'x' });
  const routed = await post(`${gateway.url}/v1/rerank`, { query: q, documents: DOCUMENTS, model: 'x' });
  t.equal(direct.status, 200, 'direct, SGLang shape: 200');
  t.equal(cohere.status, 200, 'direct, Cohere shape: 200');
  t.equal(routed.status, 200, `through smg: 200 ${routed.status === 200 ? '' : routed.text.slice(0, 300)}`);
  t.ok(Array.isArray(direct.json), "SGLang's shape is answered with SGLang's bare array");
  t.equal(cohere.json.object, 'rerank', "the Cohere shape keeps Cohere's answer");
  t.equal(routed.json.object, 'rerank', "smg builds its rerank answer from SGLang's array");
  const order = (list, key) => list.map((r) => [r.index, r[key]]);
  t.deepEqual(
    order(routed.json.results, 'score').map(([i]) => i),
    order(cohere.json.results, 'relevance_score').map(([i]) => i),
    'the same order as the replica',
  );
  t.deepEqual(
    routed.json.results.map((r) => Math.fround(r.score)),
    cohere.json.results.map((r) => Math.fround(r.relevance_score)),
    'the same scores (to f32: smg keeps them as f32)',
  );
  t.deepEqual(
    direct.json.map((r) => r.score),
    cohere.json.results.map((r) => r.relevance_score),
    'both shapes score alike',
  );
  t.deepEqual(
    routed.json.results.map((r) => r.document),
    cohere.json.results.map((r) => DOCUMENTS[r.index]),
    'documents returned with their results',
  );
});

test('round_robin against cache_aware: prefix-cache hits', async (t) => {
  // Four queries over three replicas, so round_robin moves each query around; four rounds, so
  // cache_aware's third and fourth request of each query hit.
  const QUERIES = 4;
  const REPS = 4;
  await useGateway('round_robin');
  let before = await fleetCounters([0, 1, 2]);
  const rr = await routeRounds('Round-robin', QUERIES, REPS);
  let after = await fleetCounters([0, 1, 2]);
  const rrHits = after.hits - before.hits;
  const rrMisses = after.misses - before.misses;
  t.equal(rr.failed, 0, 'round_robin: no request failed');
  t.ok(
    rr.seen.every((s) => s.size > 1),
    'round_robin spreads each query over several replicas',
  );

  await useGateway('cache_aware', CACHE_AWARE_ARGS);
  before = await fleetCounters([0, 1, 2]);
  const ca = await routeRounds('Cache-aware', QUERIES, REPS);
  after = await fleetCounters([0, 1, 2]);
  const caHits = after.hits - before.hits;
  const caMisses = after.misses - before.misses;
  t.equal(ca.failed, 0, 'cache_aware: no request failed');
  t.ok(
    ca.seen.every((s) => s.size === 1 && !s.has(-1)),
    `cache_aware keeps each query on one replica (${ca.seen.map((s) => [...s].join('/')).join(', ')})`,
  );
  t.equal(caMisses, QUERIES, "cache_aware: each query's K/V computed once in the fleet (its second request)");
  t.equal(caHits, QUERIES * (REPS - 2), 'cache_aware: every request from the third on is a prefix-cache hit');
  t.ok(
    caHits > rrHits,
    `cache_aware hits where round_robin computes the query again on another replica (${caHits} hits against ${rrHits})`,
  );
  note.roundRobin = { hits: rrHits, misses: rrMisses, rate: rrHits / (rrHits + rrMisses) };
  note.cacheAware = { hits: caHits, misses: caMisses, rate: caHits / (caHits + caMisses) };
  t.comment(
    `prefix-cache hit rate, ${QUERIES} queries x ${REPS}: round_robin ${rrHits}/${rrHits + rrMisses} = ${note.roundRobin.rate.toFixed(3)}; cache_aware ${caHits}/${caHits + caMisses} = ${note.cacheAware.rate.toFixed(3)}`,
  );
});

test('least_load sends fewer requests to a replica kept busy', async (t) => {
  // HTTP requests carry no token count at routing: least_load's in-flight estimate is its mean prefill
  // tokens per request, set to about ours (a ~100-token rerank) instead of its 1,024 default.
  await useGateway('least_load', ['--least-load-mean-prefill-tokens', '100']);
  const busy = replicas[2];
  const heavy = {
    query: 'Which of these long passages is about rivers?',
    documents: Array.from(
      { length: 24 },
      (_, i) => `Passage ${i}: ${'the river runs on past the town and the hills, '.repeat(4)}`,
    ),
    rid: null,
  };
  let stop = false;
  let heavySent = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const loop = async () => {
    while (!stop && heavySent < 400) {
      heavySent++;
      await post(`${base(busy)}/v1/rerank`, heavy, agent);
    }
  };
  const loops = Array.from({ length: 4 }, loop);
  // smg has seen the queue once its poll reports waiting work there (bounded wait).
  let seenBusy = false;
  for (let i = 0; i < 240 && !seenBusy; i++) {
    const worker = (await gateway.workers()).find((w) => w.url === base(busy));
    const load = worker?.engine_load?.loads?.[0];
    seenBusy = load !== undefined && load.num_waiting_reqs > 0;
    if (!seenBusy) await new Promise((r) => setTimeout(r, 250));
  }
  t.ok(seenBusy, "smg's load poll sees the busy replica's waiting requests (/v1/loads)");
  const direct = await getJson(`${base(busy)}/v1/loads`);
  t.ok(
    direct.json.loads[0].num_waiting_reqs + direct.json.loads[0].num_running_reqs > 0,
    `/v1/loads carries the queue (${JSON.stringify(direct.json.loads[0])})`,
  );
  const counts = [0, 0, 0];
  let failed = 0;
  for (let i = 0; i < 12; i++) {
    const reply = await post(`${gateway.url}/v1/rerank`, { model: 'x', query: query('Load', i), documents: DOCUMENTS });
    if (reply.status !== 200) failed++;
    const at = servedBy(reply);
    if (at >= 0) counts[at]++;
  }
  stop = true;
  await Promise.all(loops);
  agent.destroy();
  note.leastLoad = counts;
  t.equal(failed, 0, 'no request failed');
  t.ok(
    counts[2] < counts[0] && counts[2] < counts[1],
    `the busy replica got fewer: ${counts.join(' / ')} (replica 2 busy)`,
  );
});

test('/v1/score: smg does not route it; every replica scores it alike', async (t) => {
  const body = {
    query: 'Is this review positive? Review:',
    items: [' I loved it', ' It broke after a day'],
    label_token_ids: [9805, 787],
    apply_softmax: true,
  };
  const routed = await post(`${gateway.url}/v1/score`, body);
  t.equal(routed.status, 404, 'smg answers 404 for /v1/score');
  const direct = await Promise.all(replicas.map((r) => post(`${base(r)}/v1/score`, body)));
  t.ok(
    direct.every((d) => d.status === 200),
    'each replica answers /v1/score',
  );
  t.deepEqual(direct[1].json.scores, direct[0].json.scores, 'replica 1 scores as replica 0');
  t.deepEqual(direct[2].json.scores, direct[0].json.scores, 'replica 2 scores as replica 0');
});

test('SIGTERM one replica mid-load: readiness fails first, no client request fails', async (t) => {
  await useGateway('round_robin');
  const victim = replicas[1];
  let signalled = false;
  const leaving = victim.waitForLog((e) => e.event === 'leaving', 120_000);
  let probes = null;
  const replies = await runLoad(
    LOAD,
    CONCURRENCY,
    (i) => post(`${gateway.url}/v1/rerank`, { model: 'x', query: query('Term', i % 6), documents: DOCUMENTS }),
    (done) => {
      if (done === SIGNAL_AT && !signalled) {
        signalled = true;
        victim.child.kill('SIGTERM');
        probes = leaving.then(async () => ({
          ready: await victim.request({ path: '/readyz', agent: false }),
          live: await victim.request({ path: '/livez', agent: false }),
        }));
      }
    },
  );
  const exit = await victim.exited;
  const failed = replies.filter((r) => r.status !== 200);
  note.sigterm = { requests: replies.length, failed: failed.length };
  t.ok(signalled, `SIGTERM sent after ${SIGNAL_AT} answers`);
  t.deepEqual(exit, { code: 0, signal: null }, 'the replica drained and exited 0');
  const { ready, live } = await probes;
  t.equal(ready.status, 503, 'while leaving, /readyz is 503');
  t.equal(live.status, 200, 'while leaving, /livez is 200');
  const told = victim.logs.filter((e) => e.event === 'request' && e.path === '/health' && e.status === 503).length;
  t.ok(told > 0, `smg's health checks were answered 503 before the listener closed (${told})`);
  const served = victim.logs.filter((e) => e.event === 'request' && e.path === '/v1/rerank' && e.status === 200).length;
  t.ok(served > 0, `the replica served its share of the load (${served})`);
  // Informational (timing decides it): answers given while readiness already failed.
  const from = victim.logs.findIndex((e) => e.event === 'leaving');
  const to = victim.logs.findIndex((e) => e.event === 'draining');
  const whileLeaving = victim.logs
    .slice(from, to < 0 ? undefined : to)
    .filter((e) => e.event === 'request' && e.path === '/v1/rerank' && e.status === 200).length;
  t.comment(`answered while leaving (readiness failed, listener open): ${whileLeaving}`);
  t.equal(
    failed.length,
    0,
    `no client request failed (${replies.length} sent${failed.length ? `; ${failed.map((f) => f.status || f.error).join(', ')}` : ''})`,
  );
  t.comment(`SIGTERM: ${failed.length} of ${replies.length} requests failed`);
});

test('SIGKILL one replica mid-load: failed requests counted', async (t) => {
  await useGateway('round_robin', [], [0, 2]);
  const victim = replicas[2];
  let killed = false;
  const replies = await runLoad(
    LOAD,
    CONCURRENCY,
    (i) => post(`${gateway.url}/v1/rerank`, { model: 'x', query: query('Kill', i % 6), documents: DOCUMENTS }),
    (done) => {
      if (done === SIGNAL_AT && !killed) {
        killed = true;
        victim.child.kill('SIGKILL');
      }
    },
  );
  const exit = await victim.exited;
  t.equal(exit.signal, 'SIGKILL', 'the replica was killed');
  const failed = replies.filter((r) => r.status !== 200);
  note.sigkill = { requests: replies.length, failed: failed.length, statuses: failed.map((f) => f.status || f.error) };
  t.ok(
    replies.slice(-SIGNAL_AT).every((r) => r.status === 200),
    'the last requests all succeed: smg routes to the survivor',
  );
  t.ok(
    failed.length <= CONCURRENCY,
    `at most the requests in flight on the killed replica failed (${failed.length} of ${replies.length})`,
  );
  // Why requests survive: smg resends a request whose connection failed before an answer, and retries 5xx.
  const smgMetrics = await new Promise((resolve) => {
    http
      .get(gateway.metricsUrl, { agent: false }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(text));
      })
      .on('error', () => resolve(''));
  });
  const metric = (re) =>
    smgMetrics
      .split('\n')
      .filter((l) => re.test(l))
      .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
  note.sigkill.resent = metric(/^smg_router_upstream_send_retries_total\{/);
  note.sigkill.retried = metric(/^smg_worker_retries_total\{worker_type="regular",endpoint="rerank"\}/);
  t.comment(
    `SIGKILL: smg resent ${note.sigkill.resent} request(s) after a transport failure, ${note.sigkill.retried} rerank retry(ies)`,
  );
  t.comment(
    `SIGKILL: ${failed.length} of ${replies.length} requests failed${failed.length ? ` (${note.sigkill.statuses.join(', ')})` : ''}`,
  );
});

test('stop the fleet', async (t) => {
  if (gateway) await gateway.stop();
  for (const replica of replicas) if (!replica.exit) await replica.stop();
  t.comment(`fleet note: ${JSON.stringify(note)}`);
  t.pass('stopped');
});
