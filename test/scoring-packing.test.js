'use strict';
// Segment metadata, positions, read indices and masks of the dense, factored
// and serial layouts, against plain-loop references written here from the
// words of docs/design.md ("The programs"), not from the code under test.
const test = require('tape');
const { packDense, packFactored, packSerial, denseMask, renderMask } = require('./helpers/layouts');

// Deterministic pseudo-random cases (an LCG), so failures reproduce.
function rng(seed) {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

function randomCase(seed) {
  const r = rng(seed);
  const query = Array.from({ length: 1 + r(6) }, () => 10 + r(90));
  const items = Array.from({ length: r(6) }, () => Array.from({ length: r(5) }, () => 100 + r(900)));
  return { query, items };
}

const CASES = [
  { query: [1, 2, 3], items: [[4, 5], [6], [7, 8, 9]] },
  { query: [1], items: [] },
  { query: [1, 2], items: [[], [3], []] }, // empty items read at the query's last token
  ...Array.from({ length: 40 }, (_, i) => randomCase(i + 1)),
];

// The dense layout written the obvious way: push tokens one by one.
function referenceDense(query, items) {
  const tokens = [];
  const positions = [];
  const segments = [];
  const reads = [];
  query.forEach((token, t) => {
    tokens.push(token);
    positions.push(t);
    segments.push(0);
  });
  items.forEach((item, i) => {
    item.forEach((token, j) => {
      tokens.push(token);
      positions.push(query.length + j);
      segments.push(i + 1);
    });
    reads.push(item.length === 0 ? query.length - 1 : tokens.length - 1);
  });
  return { tokens, positions, segments, reads };
}

// Visibility from the semantics: token (item i, offset j) is computed as the
// standalone sequence query ++ item_i[0..j], so it sees exactly the query and
// item i's tokens up to j. Built as sets of dense indices.
function referenceVisibility(query, items, total) {
  const visible = [];
  const queryIdx = query.map((_, t) => t);
  query.forEach((_, t) => visible.push(new Set(queryIdx.slice(0, t + 1))));
  let start = query.length;
  for (const item of items) {
    const own = item.map((_, j) => start + j);
    item.forEach((_, j) => visible.push(new Set([...queryIdx, ...own.slice(0, j + 1)])));
    start += item.length;
  }
  // Padding (at the end) sees the query keys by the rule; nothing reads its output, but its softmax stays finite.
  while (visible.length < total) visible.push(new Set(queryIdx));
  return visible;
}

const arr = (typed) => Array.from(typed);

test('dense layout matches the plain-loop construction', (t) => {
  for (const { query, items } of CASES) {
    const ref = referenceDense(query, items);
    const d = packDense(query, items);
    const label = `P=${query.length} lengths=[${items.map((x) => x.length)}]`;
    t.deepEqual(arr(d.tokens), ref.tokens, `${label} tokens`);
    t.deepEqual(arr(d.positions), ref.positions, `${label} positions`);
    t.deepEqual(arr(d.segmentIds), ref.segments, `${label} segment ids`);
    t.deepEqual(arr(d.readIndices), ref.reads, `${label} read indices`);
    t.equal(d.tokenCount, ref.tokens.length, `${label} token count`);
    t.equal(d.tokenBucket, ref.tokens.length, `${label} no padding by default`);
    t.deepEqual(
      arr(d.itemLengths),
      items.map((x) => x.length),
      `${label} item lengths`,
    );
  }
  t.end();
});

test('dense padding: pad token, position 0, segment -1, read index 0', (t) => {
  const query = [1, 2];
  const items = [[3], [], [4, 5]];
  const d = packDense(query, items, { tokenBucket: 8, countBucket: 5, padTokenId: 77 });
  t.deepEqual(arr(d.tokens), [1, 2, 3, 4, 5, 77, 77, 77]);
  t.deepEqual(arr(d.positions), [0, 1, 2, 2, 3, 0, 0, 0]);
  t.deepEqual(arr(d.segmentIds), [0, 0, 1, 3, 3, -1, -1, -1]);
  t.deepEqual(arr(d.readIndices), [2, 1, 4, 0, 0], 'item 2 is empty: read at the query end; padding reads row 0');
  t.equal(d.tokenBucket, 8);
  t.equal(d.countBucket, 5);
  t.throws(() => packDense(query, items, { tokenBucket: 4 }), RangeError, 'a token bucket below the real length');
  t.throws(() => packDense(query, items, { countBucket: 2 }), RangeError, 'a count bucket below the item count');
  t.throws(() => packDense([], [[1]]), RangeError, 'an empty query cannot be packed');
  t.end();
});

test('denseMask equals the visibility derived from standalone sequences', (t) => {
  for (const { query, items } of CASES) {
    const total = query.length + items.reduce((a, x) => a + x.length, 0) + 3; // + 3 padding tokens
    const d = packDense(query, items, { tokenBucket: total });
    const mask = denseMask(d.segmentIds);
    const visible = referenceVisibility(query, items, total);
    let mismatches = 0;
    for (let q = 0; q < total; q++) {
      for (let k = 0; k < total; k++) if (mask[q * total + k] !== (visible[q].has(k) ? 1 : 0)) mismatches++;
    }
    t.equal(mismatches, 0, `P=${query.length} lengths=[${items.map((x) => x.length)}] mask`);
  }
  t.end();
});

test('denseMask follows the design rule on arbitrary segment ids', (t) => {
  // The rule as docs/design.md "The programs" states it, on ids that no packer would produce (interleaved, padding inside).
  const segments = [0, 1, 0, 2, 1, -1, 2, 0, -1, 3];
  const T = segments.length;
  const mask = denseMask(segments);
  for (let q = 0; q < T; q++) {
    for (let k = 0; k < T; k++) {
      const inSequenceOrder = k <= q;
      const notPadding = segments[k] !== -1;
      const queryOrOwnItem = segments[k] === 0 || segments[k] === segments[q];
      const expected = inSequenceOrder && notPadding && queryOrOwnItem ? 1 : 0;
      if (mask[q * T + k] !== expected) t.fail(`q=${q} k=${k}: got ${mask[q * T + k]}, expected ${expected}`);
    }
  }
  t.equal(mask.length, T * T, 'row-major [T*T]');
  t.ok(mask instanceof Uint8Array, 'a Uint8Array');
  t.end();
});

test('renderMask draws the mask', (t) => {
  const d = packDense([1, 2], [[3, 4], [5]], { tokenBucket: 6 });
  const expected = [
    '  QQ112_',
    'Q #.....',
    'Q ##....',
    '1 ###...',
    '1 ####..',
    '2 ##..#.',
    '_ ##....', // padding sees the query: finite softmax, never read
  ].join('\n');
  t.equal(renderMask(d.segmentIds), expected);
  t.end();
});

test('factored layout matches the plain-loop construction', (t) => {
  for (const { query, items } of CASES) {
    const P = query.length;
    const N = items.length;
    const L = Math.max(1, ...items.map((x) => x.length));
    const f = packFactored(query, items);
    const label = `P=${P} lengths=[${items.map((x) => x.length)}]`;
    t.equal(f.queryBucket, P, `${label} query bucket`);
    t.equal(f.itemCountBucket, N, `${label} item count bucket`);
    t.equal(f.itemLengthBucket, L, `${label} item length bucket`);
    t.deepEqual(arr(f.queryTokens), query, `${label} query tokens`);
    t.deepEqual(
      arr(f.queryPositions),
      query.map((_, i) => i),
      `${label} query positions`,
    );
    const tokens = [];
    const positions = [];
    const segments = [];
    const reads = [];
    items.forEach((item, i) => {
      for (let j = 0; j < L; j++) {
        tokens.push(j < item.length ? item[j] : 0);
        positions.push(j < item.length ? P + j : 0);
        segments.push(j < item.length ? i + 1 : -1);
      }
      reads.push(item.length === 0 ? P - 1 : P + i * L + item.length - 1);
    });
    t.deepEqual(arr(f.itemTokens), tokens, `${label} grid tokens`);
    t.deepEqual(arr(f.itemPositions), positions, `${label} grid positions`);
    t.deepEqual(arr(f.itemSegmentIds), segments, `${label} grid segment ids`);
    t.deepEqual(
      arr(f.itemLengths),
      items.map((x) => x.length),
      `${label} item lengths`,
    );
    t.deepEqual(arr(f.readIndices), reads, `${label} read indices`);
  }
  t.end();
});

test('factored and dense layouts describe the same computation', (t) => {
  for (const { query, items } of CASES) {
    const label = `P=${query.length} lengths=[${items.map((x) => x.length)}]`;
    const d = packDense(query, items);
    const f = packFactored(query, items, {
      queryBucket: query.length + 2,
      itemCountBucket: items.length + 1,
      itemLengthBucket: 6,
    });
    const Pb = f.queryBucket;
    const Lb = f.itemLengthBucket;
    // Map every factored row (flattened [query ; grid]) to its dense row, or -1 for padding.
    const toDense = new Array(Pb + f.itemCountBucket * Lb).fill(-1);
    for (let tq = 0; tq < query.length; tq++) toDense[tq] = tq;
    let start = query.length;
    items.forEach((item, i) => {
      for (let j = 0; j < item.length; j++) toDense[Pb + i * Lb + j] = start + j;
      start += item.length;
    });
    let bad = 0;
    toDense.forEach((dr, fr) => {
      const inQuery = fr < Pb;
      const token = inQuery ? f.queryTokens[fr] : f.itemTokens[fr - Pb];
      const position = inQuery ? f.queryPositions[fr] : f.itemPositions[fr - Pb];
      const segment = inQuery ? f.querySegmentIds[fr] : f.itemSegmentIds[fr - Pb];
      if (dr === -1) {
        if (segment !== -1) bad++;
      } else if (token !== d.tokens[dr] || position !== d.positions[dr] || segment !== d.segmentIds[dr]) bad++;
    });
    t.equal(bad, 0, `${label} same tokens, positions and segments row by row`);
    const readsAgree = items.every((_, i) => toDense[f.readIndices[i]] === d.readIndices[i]);
    t.ok(readsAgree, `${label} same read tokens`);
    // Factored attention: grid cell (i, j) sees the real query keys and its own row's keys 0..j. The dense mask must agree.
    const T = d.tokenCount;
    const mask = denseMask(d.segmentIds);
    let maskBad = 0;
    items.forEach((item, i) => {
      for (let j = 0; j < item.length; j++) {
        const q = toDense[Pb + i * Lb + j];
        const expected = new Set();
        for (let k = 0; k < query.length; k++) expected.add(k);
        for (let jj = 0; jj <= j; jj++) expected.add(toDense[Pb + i * Lb + jj]);
        for (let k = 0; k < T; k++) if ((mask[q * T + k] === 1) !== expected.has(k)) maskBad++;
      }
    });
    t.equal(maskBad, 0, `${label} factored visibility equals the dense mask`);
  }
  t.end();
});

test('factored padding and bucket errors', (t) => {
  const f = packFactored([1, 2, 3], [[4, 5], []], {
    queryBucket: 4,
    itemCountBucket: 3,
    itemLengthBucket: 3,
    padTokenId: 9,
  });
  t.deepEqual(arr(f.queryTokens), [1, 2, 3, 9]);
  t.deepEqual(arr(f.queryPositions), [0, 1, 2, 0]);
  t.deepEqual(arr(f.querySegmentIds), [0, 0, 0, -1]);
  t.deepEqual(arr(f.itemTokens), [4, 5, 9, 9, 9, 9, 9, 9, 9]);
  t.deepEqual(arr(f.itemPositions), [3, 4, 0, 0, 0, 0, 0, 0, 0]);
  t.deepEqual(arr(f.itemSegmentIds), [1, 1, -1, -1, -1, -1, -1, -1, -1]);
  t.deepEqual(arr(f.itemLengths), [2, 0, 0]);
  t.deepEqual(
    arr(f.readIndices),
    [4 + 1, 2, 0],
    'item 0 at its last token, the empty item at the query end, padding at 0',
  );
  t.throws(() => packFactored([1, 2, 3], [[4, 5]], { queryBucket: 2 }), RangeError);
  t.throws(() => packFactored([1, 2, 3], [[4, 5]], { itemLengthBucket: 1 }), RangeError);
  t.throws(() => packFactored([1, 2, 3], [[4], [5]], { itemCountBucket: 1 }), RangeError);
  t.equal(packFactored([1], []).itemLengthBucket, 1, 'no items: a grid of width 1, not 0');
  t.end();
});

test('serial layout: one query ++ item row per item', (t) => {
  for (const { query, items } of CASES) {
    for (const itemFirst of [false, true]) {
      const label = `P=${query.length} lengths=[${items.map((x) => x.length)}] itemFirst=${itemFirst}`;
      const rows = items.map((item) => (itemFirst ? [...item, ...query] : [...query, ...item]));
      const S = Math.max(1, ...rows.map((r) => r.length)) + 1;
      const B = items.length + 2;
      const s = packSerial(query, items, { itemFirst, batchBucket: B, lengthBucket: S, padTokenId: 5 });
      const tokens = [];
      const positions = [];
      const reads = [];
      for (let b = 0; b < B; b++) {
        const row = rows[b] || [];
        for (let p = 0; p < S; p++) {
          tokens.push(p < row.length ? row[p] : 5);
          positions.push(p < row.length ? p : 0);
        }
        reads.push(row.length ? b * S + row.length - 1 : 0);
      }
      t.deepEqual(arr(s.tokens), tokens, `${label} tokens`);
      t.deepEqual(arr(s.positions), positions, `${label} positions`);
      t.deepEqual(arr(s.readIndices), reads, `${label} read indices`);
      t.deepEqual(arr(s.lengths), [...rows.map((r) => r.length), 0, 0], `${label} lengths`);
      t.equal(s.batchSize, items.length, `${label} batch size`);
    }
  }
  t.throws(() => packSerial([], [[]]), RangeError, 'an empty row cannot be read');
  t.throws(() => packSerial([1], [[2, 3]], { lengthBucket: 2 }), RangeError);
  t.end();
});

test('packed read tokens are the serial read tokens', (t) => {
  // Item i read in the packed sequence sees the same token, at the same position, as the last token of serial row i.
  for (const { query, items } of CASES) {
    const d = packDense(query, items);
    const s = packSerial(query, items);
    const ok = items.every(
      (_, i) =>
        d.tokens[d.readIndices[i]] === s.tokens[s.readIndices[i]] &&
        d.positions[d.readIndices[i]] === s.positions[s.readIndices[i]],
    );
    t.ok(ok, `P=${query.length} lengths=[${items.map((x) => x.length)}]`);
  }
  t.end();
});
