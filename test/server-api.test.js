'use strict';
// The Score API over HTTP: the behaviours SGLang's own scoring tests check,
// against the real server (child process, default model, CPU plugin).
// References are independent of the code under test: identities the
// semantics imply (one item alone = the same item among others; softmax =
// normalized exp scores; item_first = the swapped sequence; text = its
// token ids), not the server's own output replayed.
const test = require('tape');
const { loadModelInfo } = require('../dist/model');
const { startService } = require('./helpers/service');

const TOL = 1e-4; // docs/design.md "Scoring semantics": multi-item vs one at a time, f32
const YES = 9805; // " yes"
const NO = 787; // " no"
const QUERY = 'Is the following a fruit? Answer yes or no. Item:';
const FRUITS = [' apple', ' car', ' banana', ' hammer', ' cherry', ' cloud'];

const tokenizer = loadModelInfo().tokenizer;
let service;

function closeTo(t, actual, expected, tol, message) {
  const ok =
    Array.isArray(actual) &&
    actual.length === expected.length &&
    actual.every(
      (row, i) => row.length === expected[i].length && row.every((v, j) => Math.abs(v - expected[i][j]) <= tol),
    );
  let worst = 0;
  if (ok) actual.forEach((row, i) => row.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - expected[i][j])))));
  t.ok(ok, `${message} (max abs diff ${ok ? worst.toExponential(2) : 'n/a'})`);
  if (!ok) t.comment(`actual ${JSON.stringify(actual)}\nexpected ${JSON.stringify(expected)}`);
}

/** Checks the ScoringResponse envelope and returns its scores. */
function scoresOf(t, res, items, labels, what) {
  t.equal(res.status, 200, `${what}: status 200${res.status !== 200 ? ` (${res.text})` : ''}`);
  const body = res.json || {};
  t.equal(body.object, 'scoring', `${what}: object is "scoring"`);
  t.ok(Array.isArray(body.scores), `${what}: scores is an array`);
  t.equal((body.scores || []).length, items, `${what}: ${items} rows`);
  t.ok(
    (body.scores || []).every((row) => Array.isArray(row) && row.length === labels),
    `${what}: ${labels} labels per row`,
  );
  t.ok(
    (body.scores || []).every((row) =>
      row.every((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 1 + 1e-6),
    ),
    `${what}: every score is a probability`,
  );
  return body.scores || [];
}

async function score(body) {
  return service.score(body);
}

test('start the server', async (t) => {
  service = await startService(['--warmup', '16x8x4', '--multi-item-scoring-delimiter', '0']);
  t.ok(service.port > 0, `listening on 127.0.0.1:${service.port}`);
  const delimiter = service.logs.filter((e) => e.event === 'multi_item_scoring_delimiter_ignored');
  t.equal(delimiter.length, 1, '--multi-item-scoring-delimiter is accepted and logged once');
});

test('basic: 3 items x 2 labels, with and without softmax', async (t) => {
  const items = FRUITS.slice(0, 3);
  const raw = await score({ query: QUERY, items, label_token_ids: [YES, NO] });
  const rawScores = scoresOf(t, raw, 3, 2, 'apply_softmax false');
  t.equal(raw.json.model, 'SmolLM2-135M-Instruct', 'model name');
  const u = raw.json.usage;
  const expectedTokens =
    tokenizer.encode(QUERY).length + items.reduce((n, item) => n + tokenizer.encode(item).length, 0);
  t.deepEqual(
    u,
    { prompt_tokens: expectedTokens, completion_tokens: 0, total_tokens: expectedTokens },
    'usage counts the query once plus every item',
  );

  const soft = await score({ query: QUERY, items, label_token_ids: [YES, NO], apply_softmax: true });
  const softScores = scoresOf(t, soft, 3, 2, 'apply_softmax true');
  t.ok(
    softScores.every((row) => Math.abs(row[0] + row[1] - 1) < 1e-6),
    'softmax rows sum to 1',
  );
  // softmax(logprobs[labels]) = exp(logprobs[labels]) / sum: an identity between the two modes.
  const normalized = rawScores.map((row) => row.map((v) => v / row.reduce((a, b) => a + b, 0)));
  closeTo(t, softScores, normalized, 1e-5, 'softmax scores = exp scores normalized per row');
  t.ok(softScores[0][0] > softScores[1][0], 'apple is more of a fruit than car');
});

test('1, 2, 4, 6 and 20 items: each item scores as it does alone', async (t) => {
  const alone = [];
  for (const item of FRUITS) {
    const res = await score({ query: QUERY, items: [item], label_token_ids: [YES, NO] });
    alone.push(scoresOf(t, res, 1, 2, `alone ${JSON.stringify(item)}`)[0]);
  }
  for (const n of [1, 2, 4, 6, 20]) {
    const items = Array.from({ length: n }, (_, i) => FRUITS[i % FRUITS.length]);
    const res = await score({ query: QUERY, items, label_token_ids: [YES, NO] });
    const scores = scoresOf(t, res, n, 2, `${n} items`);
    closeTo(
      t,
      scores,
      items.map((_, i) => alone[i % FRUITS.length]),
      TOL,
      `${n} items = each scored alone`,
    );
  }
});

test('items: [] -> 200 with scores: []', async (t) => {
  const res = await score({ query: QUERY, items: [], label_token_ids: [YES, NO] });
  t.equal(res.status, 200, 'status 200');
  t.deepEqual(res.json.scores, [], 'scores: []');
  t.equal(res.json.object, 'scoring', 'object');
});

test('a single string as items is one item', async (t) => {
  const single = scoresOf(
    t,
    await score({ query: QUERY, items: ' apple', label_token_ids: [YES, NO] }),
    1,
    2,
    'items: " apple"',
  );
  const list = scoresOf(
    t,
    await score({ query: QUERY, items: [' apple'], label_token_ids: [YES, NO] }),
    1,
    2,
    'items: [" apple"]',
  );
  closeTo(t, single, list, 0, 'same as a one-item list');
});

test('[""] is accepted: an empty item is read at the query\'s last token', async (t) => {
  const empty = scoresOf(
    t,
    await score({ query: QUERY, items: [''], label_token_ids: [YES, NO] }),
    1,
    2,
    'items: [""]',
  );
  // Same sequence, same read position: the query minus its last token, with that token as the item.
  const q = tokenizer.encode(QUERY);
  const split = scoresOf(
    t,
    await score({ query: q.slice(0, -1), items: [q.slice(-1)], label_token_ids: [YES, NO] }),
    1,
    2,
    'last query token as the item',
  );
  closeTo(t, empty, split, TOL, 'empty item = the query read at its last token');
});

test('unicode query and items', async (t) => {
  const query = 'Ist das ein Obst? 日本語で答えて 🍎:';
  const items = [' Äpfel', ' 寿司 🍣', ' naïve café', ' 👍🏽', ' Ελληνικά'];
  const scores = scoresOf(t, await score({ query, items, label_token_ids: [YES, NO] }), items.length, 2, 'unicode');
  // Text is tokenized piece by piece: the token-id form of the same request scores the same.
  const ids = scoresOf(
    t,
    await score({
      query: tokenizer.encode(query),
      items: items.map((i) => tokenizer.encode(i)),
      label_token_ids: [YES, NO],
    }),
    items.length,
    2,
    'unicode as token ids',
  );
  closeTo(t, scores, ids, TOL, 'unicode text = its token ids');
});

test('token-id query and items', async (t) => {
  const query = tokenizer.encode(QUERY);
  const items = FRUITS.slice(0, 4).map((f) => tokenizer.encode(f));
  const res = await score({ query, items, label_token_ids: [YES, NO], apply_softmax: true });
  const fromIds = scoresOf(t, res, 4, 2, 'token ids');
  t.equal(
    res.json.usage.prompt_tokens,
    query.length + items.reduce((n, i) => n + i.length, 0),
    'usage counts the token ids',
  );
  const fromText = scoresOf(
    t,
    await score({ query: QUERY, items: FRUITS.slice(0, 4), label_token_ids: [YES, NO], apply_softmax: true }),
    4,
    2,
    'text',
  );
  closeTo(t, fromIds, fromText, TOL, 'token ids = text');
});

test('item_first true and false', async (t) => {
  const query = ' is a fruit. Yes or no?';
  const items = ['Apple', 'Car'];
  const first = scoresOf(
    t,
    await score({ query, items, label_token_ids: [YES, NO], item_first: true }),
    2,
    2,
    'item_first true',
  );
  const last = scoresOf(
    t,
    await score({ query, items, label_token_ids: [YES, NO], item_first: false }),
    2,
    2,
    'item_first false',
  );
  t.notDeepEqual(first, last, 'the order changes the scores');
  // item ++ query read at the query's last token is the query-first request with the roles swapped.
  const swapped = [];
  for (const item of items) {
    swapped.push(
      scoresOf(t, await score({ query: item, items: [query], label_token_ids: [YES, NO] }), 1, 2, `swapped ${item}`)[0],
    );
  }
  closeTo(t, first, swapped, TOL, 'item_first = item as query, query as item');
  t.ok(
    service.logs.some((e) => e.event === 'item_first_serial'),
    'item_first is logged as running on the serial path',
  );
  t.equal(service.logs.filter((e) => e.event === 'item_first_serial').length, 1, 'logged once');
});

test('the same request twice gives identical scores', async (t) => {
  const body = { query: QUERY, items: FRUITS.slice(0, 3), label_token_ids: [YES, NO], apply_softmax: true };
  const a = await score(body);
  const b = await score(body);
  t.equal(a.status, 200, 'first 200');
  t.deepEqual(b.json.scores, a.json.scores, 'identical scores');
  t.deepEqual(b.json.usage, a.json.usage, 'identical usage');
});

test('1, 2, 4 and 8 labels: a label scores the same whatever else is asked', async (t) => {
  const labels = [YES, NO, 5248, 2114, 28, 330, 1242, 9805];
  const full = scoresOf(
    t,
    await score({ query: QUERY, items: FRUITS.slice(0, 2), label_token_ids: labels }),
    2,
    8,
    '8 labels',
  );
  for (const n of [1, 2, 4]) {
    const res = await score({ query: QUERY, items: FRUITS.slice(0, 2), label_token_ids: labels.slice(0, n) });
    const scores = scoresOf(t, res, 2, n, `${n} labels`);
    closeTo(
      t,
      scores,
      full.map((row) => row.slice(0, n)),
      TOL,
      `${n} labels = the first ${n} columns of 8`,
    );
  }
  t.ok(Math.abs(full[0][0] - full[0][7]) < 1e-7, 'a repeated label gets the same score');
  const soft = scoresOf(
    t,
    await score({ query: QUERY, items: FRUITS.slice(0, 2), label_token_ids: labels.slice(0, 4), apply_softmax: true }),
    2,
    4,
    '4 labels softmax',
  );
  t.ok(
    soft.every((row) => Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-6),
    '4-label softmax rows sum to 1',
  );
});

test('concurrent requests with the same query may share a call; each gets its own scores', async (t) => {
  const lists = [[' apple'], [' car', ' banana'], [' hammer'], [' cherry', ' cloud']];
  const alone = [];
  for (const items of lists)
    alone.push(
      scoresOf(t, await score({ query: QUERY, items, label_token_ids: [YES, NO] }), items.length, 2, `alone ${items}`),
    );
  const metric = async (name) => {
    const text = (await service.request({ path: '/metrics' })).text;
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return Number(line.split(' ').pop());
  };
  const calls0 = await metric('pjrt_score_backend_calls_total');
  const together = await Promise.all(lists.map((items) => score({ query: QUERY, items, label_token_ids: [YES, NO] })));
  const calls = (await metric('pjrt_score_backend_calls_total')) - calls0;
  together.forEach((res, i) =>
    closeTo(
      t,
      scoresOf(t, res, lists[i].length, 2, `concurrent ${lists[i]}`),
      alone[i],
      TOL,
      `concurrent ${lists[i]} = alone`,
    ),
  );
  t.ok(calls < lists.length, `${lists.length} concurrent requests took ${calls} Scorer calls`);
  const batched = service.logs.filter((e) => e.event === 'request' && e.batch > 1);
  t.ok(batched.length > 0, 'the request log says which requests shared a call');
});

test('the optional model field is accepted', async (t) => {
  const res = await score({ model: 'SmolLM2-135M-Instruct', query: QUERY, items: [' apple'], label_token_ids: [YES] });
  scoresOf(t, res, 1, 1, 'with model');
});

test('GET /health', async (t) => {
  const res = await service.request({ path: '/health' });
  t.equal(res.status, 200, '200 when ready');
  t.equal(res.json.status, 'ok', 'status ok');
  t.equal(res.json.ready, true, 'ready');
  t.equal(res.json.model, 'SmolLM2-135M-Instruct', 'model');
  t.ok(res.headers['content-type'].startsWith('application/json'), 'JSON');
});

test('GET /v1/models', async (t) => {
  const res = await service.request({ path: '/v1/models' });
  t.equal(res.status, 200, '200');
  t.equal(res.json.object, 'list', 'object list');
  t.equal(res.json.data.length, 1, 'one model');
  t.equal(res.json.data[0].id, 'SmolLM2-135M-Instruct', 'model id');
  t.equal(res.json.data[0].object, 'model', 'object model');
  // Family, quantization and context (docs/models.md): the default model is a Q4_1 SmolLM2 (a Llama-family GGUF).
  const entry = res.json.data[0];
  t.equal(entry.family, 'llama', 'family llama');
  t.equal(entry.context_length, entry.max_model_len, 'context_length');
  t.match(entry.quantization, /^Q4_1 \(\d+\)/, `quantization ${entry.quantization}: Q4_1 first`);
  const { GgufFile } = require('../dist/model');
  const { DEFAULT_MODEL } = require('../dist/model/default-model');
  const file = GgufFile.open(DEFAULT_MODEL.destination);
  const counted = [...entry.quantization.matchAll(/\((\d+)\)/g)].reduce((a, m) => a + Number(m[1]), 0);
  t.equal(counted, file.tensors.size, `the counts add up to the file's ${file.tensors.size} tensors`);
  file.close();
});

test('GET /metrics in the Prometheus text format', async (t) => {
  const res = await service.request({ path: '/metrics' });
  t.equal(res.status, 200, '200');
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/, 'Prometheus content type');
  const lines = res.text.trim().split('\n');
  const sample =
    /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*",?)*\})? (-?[0-9.e+-]+|[+-]Inf|NaN)$/;
  // prom-client separates metrics with blank lines, which the format ignores.
  const bad = lines.filter((l) => l !== '' && !l.startsWith('# HELP ') && !l.startsWith('# TYPE ') && !sample.test(l));
  t.deepEqual(bad, [], 'every line is a comment or a sample');
  const value = (re) => {
    const line = lines.find((l) => re.test(l));
    return line === undefined ? undefined : Number(line.split(' ').pop());
  };
  t.ok(
    value(/^pjrt_score_requests_total\{status="200",algorithm="(packed|prefix|serial)"\}/) > 0,
    'requests by status and algorithm',
  );
  t.ok(
    lines.some((l) =>
      /^pjrt_score_request_duration_seconds_bucket\{(?=[^}]*status="200")(?=[^}]*algorithm="serial")(?=[^}]*le="\+Inf")[^}]*\} \d+/.test(
        l,
      ),
    ),
    'latency histogram (serial for item_first)',
  );
  t.ok(
    lines.some((l) => l === '# TYPE pjrt_score_request_duration_seconds histogram'),
    'histogram type',
  );
  t.ok(value(/^pjrt_score_items_scored_total /) >= 60, 'items scored');
  t.ok(value(/^pjrt_score_tokens_scored_total /) > 0, 'tokens scored');
  t.equal(value(/^pjrt_score_queue_depth /), 0, 'queue depth');
  t.ok(value(/^pjrt_score_jit_cache_hits_total /) > 0, 'JIT cache hits');
  t.ok(value(/^pjrt_score_jit_cache_misses_total /) > 0, 'JIT cache misses');
  t.ok(value(/^pjrt_score_jit_compile_seconds_total /) >= 0, 'compile seconds');
  t.ok(value(/^process_resident_memory_bytes /) > 100e6, 'process memory');
  // The queue under SGLang's and vLLM's names, beside ours (the server is idle: 0 = pjrt_score_queue_depth).
  for (const name of [
    'sglang:num_queue_reqs',
    'sglang:num_running_reqs',
    'vllm:num_requests_waiting',
    'vllm:num_requests_running',
    'vllm:kv_cache_usage_perc',
  ]) {
    t.equal(value(new RegExp(`^${name}\\{model_name="SmolLM2-135M-Instruct"\\} `)), 0, `${name}{model_name} (idle: 0)`);
  }
});

test('probes and what a gateway reads: /livez, /readyz, /server_info, /model_info, /version, /v1/loads, /get_load', async (t) => {
  const get = async (path) => (await service.request({ path })).json;
  t.deepEqual(await get('/livez'), { status: 'alive', phase: 'ready' }, '/livez');
  t.equal((await get('/readyz')).ready, true, '/readyz is /health');
  const pkg = require('../package.json');
  t.deepEqual(await get('/version'), { version: pkg.version }, '/version');
  const info = await get('/server_info');
  t.equal(info.model_path, 'SmolLM2-135M-Instruct', '/server_info model_path');
  t.equal(info.context_length, 8192, "context_length (the model's)");
  t.deepEqual(await get('/get_server_info'), { ...info }, '/get_server_info is the same');
  const model = await get('/model_info');
  t.equal(model.is_generation, false, '/model_info: not a generator');
  t.equal(model.model_type, 'llama', 'its architecture');
  const loads = await get('/v1/loads?include=core,disagg,queues,memory');
  t.equal(loads.dp_rank_count, 1, '/v1/loads: one rank');
  t.deepEqual(
    [loads.loads[0].num_waiting_reqs, loads.loads[0].num_running_reqs, loads.loads[0].num_waiting_uncached_tokens],
    [0, 0, 0],
    'idle: nothing waiting or running',
  );
  t.deepEqual(await get('/get_load'), [{ dp_rank: 0, num_reqs: 0, num_waiting_reqs: 0, num_tokens: 0 }], '/get_load');
});

test('one JSON log line per request', async (t) => {
  const res = await service.score(
    { query: QUERY, items: [' apple'], label_token_ids: [YES] },
    { headers: { 'x-request-id': 'api-test-42' } },
  );
  t.equal(res.headers['x-request-id'], 'api-test-42', 'the request id is echoed');
  const line = await service.waitForLog((e) => e.event === 'request' && e.id === 'api-test-42', 5000);
  t.equal(line.status, 200, 'status');
  t.equal(line.items, 1, 'items');
  t.ok(line.tokens > 0, 'tokens');
  t.ok(['packed', 'prefix', 'serial'].includes(line.algorithm), 'algorithm');
  t.ok(typeof line.latency_ms === 'number', 'latency');
});

test('stop the server', async (t) => {
  const exit = await service.stop();
  t.deepEqual(exit, { code: 0, signal: null }, 'SIGTERM -> exit 0');
});
