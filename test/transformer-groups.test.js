'use strict';
// The fused decoder with a group axis (cross-request batching): G queries,
// each with its own items and labels, in one program. Every group equals a
// naive float64 forward pass of its own query ++ item alone (so no token saw
// another group's), a padded group (query length 0, no items) changes
// nothing, and G = 1 is the one-request program itself (the same text).
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('..');
const { loadModel } = require('../dist/model');
const { uploadWeights } = require('../dist/device-weights');
const { decoderFused } = require('../dist/hlo');
const { makeTinyModel, writeTinyGguf } = require('./helpers/tiny-model');
const { referenceLogprobs } = require('./helpers/reference-forward');
const { CROSS_PROGRAM_BOUND } = require('./helpers/bounds');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-groups-'));
let client;
test('setup', async (t) => {
  client = await Client.create();
  t.pass('client');
});

// Three requests of different shapes and labels; the fourth group is padding.
const REQUESTS = [
  { query: [5, 9, 11, 3, 40, 17, 22], items: [[7, 8], [], [60, 61, 62, 1, 2, 3]], labels: [0, 5, 63] },
  { query: [12, 13], items: [[4], [33, 34, 35], [9, 9, 9, 9], [50]], labels: [31, 2, 7] },
  { query: [1, 2, 3, 4, 5, 6, 7, 8], items: [[44, 45, 46, 47, 48, 49, 50, 51]], labels: [63, 62, 61] },
];
const DIMS = { G: 4, P: 8, N: 4, L: 8, B: 3 };

/** Inputs of the grouped program, request r in group r; groups past the requests are padding (all zeros). */
function groupedInputs({ G, P, N, L, B }) {
  const queries = new Int32Array(G * P);
  const queryLengths = new Int32Array(G);
  const items = new Int32Array(G * N * L);
  const itemLengths = new Int32Array(G * N);
  const labels = new Int32Array(G * B);
  REQUESTS.forEach((r, g) => {
    queries.set(r.query, g * P);
    queryLengths[g] = r.query.length;
    r.items.forEach((item, n) => {
      items.set(item, (g * N + n) * L);
      itemLengths[g * N + n] = item.length;
    });
    labels.set(r.labels, g * B);
  });
  return [
    [queries, [G, P]],
    [queryLengths, [G]],
    [items, [G, N, L]],
    [itemLengths, [G, N]],
    [labels, [G, B]],
  ];
}

async function run(program, inputs, dw) {
  const exe = await client.compile(program.text);
  const args = [];
  for (const [data, dims] of inputs) args.push(await client.upload(data, dims));
  const outputs = await exe.execute([...args, ...dw.buffers]);
  const host = [];
  for (const o of outputs) host.push(await o.toHost());
  [...args, ...outputs].forEach((b) => b.dispose());
  exe.dispose();
  return host;
}

for (const arch of ['llama', 'qwen3']) {
  test(`${arch}: G=4 groups (one padding) equal each request's float64 reference alone`, async (t) => {
    const tiny = makeTinyModel(arch, 11);
    const file = path.join(work, `${arch}.gguf`);
    writeTinyGguf(tiny, file, { matrixType: 'F32', embeddingType: 'F32' });
    const model = loadModel(file);
    const dw = await uploadWeights(client, model.config, model.weights);
    const { G, P, N, L, B } = DIMS;
    const program = decoderFused(model.config, { groups: G, prefix: P, items: N, itemLength: L, labels: B });
    const [prefixRows, itemRows] = await run(program, groupedInputs(DIMS), dw);
    t.equal(prefixRows.length, G * B, 'prefix_logprobs is [G, B]');
    t.equal(itemRows.length, G * N * B, 'item_logprobs is [G*N, B]');
    let worst = 0;
    let compared = 0;
    REQUESTS.forEach((r, g) => {
      r.items.forEach((item, n) => {
        const seq = [...r.query, ...item];
        const ref = referenceLogprobs(tiny.weights, tiny.config, seq, { outputs: [seq.length - 1] })[0];
        r.labels.forEach((label, j) => {
          // An empty item is read at its query's last token: the group's prefix row.
          const got = item.length ? itemRows[(g * N + n) * B + j] : prefixRows[g * B + j];
          worst = Math.max(worst, Math.abs(got - ref[label]));
          compared++;
        });
      });
    });
    t.equal(compared, 3 * 3 + 4 * 3 + 1 * 3, 'every label of every item of every request compared');
    t.ok(worst <= 1e-4, `grouped: max |logprob diff| against the float64 reference ${worst.toExponential(2)} <= 1e-4`);
    const padding = [...prefixRows.subarray(3 * B), ...itemRows.subarray(3 * N * B)];
    t.ok(padding.every(Number.isFinite), 'the padding group computes finite values (never NaN)');

    // One request alone through the G=1 program agrees with its group within f32 rounding (another program).
    const alone = decoderFused(model.config, { prefix: P, items: N, itemLength: L, labels: B });
    const r = REQUESTS[1];
    const q = new Int32Array(P);
    q.set(r.query);
    const it = new Int32Array(N * L);
    r.items.forEach((item, n) => it.set(item, n * L));
    const lens = Int32Array.from({ length: N }, (_, n) => (r.items[n] ? r.items[n].length : 0));
    const [, aloneRows] = await run(
      alone,
      [
        [q, [P]],
        [Int32Array.of(r.query.length), []],
        [it, [N, L]],
        [lens, [N]],
        [Int32Array.from(r.labels), [B]],
      ],
      dw,
    );
    let diff = 0;
    for (let i = 0; i < r.items.length * B; i++) diff = Math.max(diff, Math.abs(aloneRows[i] - itemRows[N * B + i]));
    t.ok(
      diff <= CROSS_PROGRAM_BOUND,
      `group 1 vs the same request alone (G=1): ${diff.toExponential(2)} <= ${CROSS_PROGRAM_BOUND}`,
    );
    dw.dispose();
  });
}

test('G=1 is the one-request program itself: groups: 1 and no groups give the same text', (t) => {
  const config = makeTinyModel('llama', 3).config;
  const shape = { prefix: 16, items: 8, itemLength: 12, labels: 2 };
  t.equal(decoderFused(config, { ...shape, groups: 1 }).text, decoderFused(config, shape).text, 'same program text');
  t.notEqual(
    decoderFused(config, { ...shape, groups: 2 }).text,
    decoderFused(config, shape).text,
    'G=2 is another program',
  );
  t.throws(
    () => decoderFused(config, { ...shape, groups: 0 }),
    /groups must be a positive integer, got 0/,
    'groups 0 is refused',
  );
  t.end();
});

test('teardown', (t) => {
  client.dispose();
  fs.rmSync(work, { recursive: true, force: true });
  t.end();
});
