'use strict';
// Bucket ladders and lookups (docs/design.md "Static shapes, buckets, the JIT cache").
const test = require('tape');
const {
  bucketLadder,
  bucketFor,
  parseBucketList,
  BucketOverflowError,
  DEFAULT_TOKEN_BUCKETS,
} = require('../dist/scoring');
const { PjrtScoreError } = require('..');

test('powers of two from a minimum', (t) => {
  t.deepEqual(bucketLadder({ min: 8, max: 128 }), [8, 16, 32, 64, 128]);
  t.deepEqual(bucketLadder({ min: 1, max: 8 }), [1, 2, 4, 8]);
  t.deepEqual(
    bucketLadder({ min: 16, max: 100 }),
    [16, 32, 64, 100],
    'max is always the last rung, even off the ladder',
  );
  t.deepEqual(bucketLadder({ min: 5, max: 5 }), [5]);
  t.end();
});

test('finer steps between powers of two', (t) => {
  t.deepEqual(bucketLadder({ min: 16, max: 256, steps: [1.5] }), [16, 24, 32, 48, 64, 96, 128, 192, 256]);
  t.deepEqual(bucketLadder({ min: 16, max: 64, steps: [1.25, 1.5, 1.75] }), [16, 20, 24, 28, 32, 40, 48, 56, 64]);
  t.deepEqual(
    bucketLadder({ min: 16, max: 64, steps: [1.75, 1.25] }),
    [16, 20, 28, 32, 40, 56, 64],
    'step order does not matter',
  );
  t.deepEqual(
    bucketLadder({ min: 1, max: 16, steps: [1.5] }),
    [1, 2, 3, 4, 6, 8, 12, 16],
    'rounded up, duplicates dropped',
  );
  t.deepEqual(
    bucketLadder({ min: 10, max: 80, steps: [1.5], align: 8 }),
    [10, 16, 20, 32, 40, 64, 80],
    'in-between rungs rounded up to the alignment',
  );
  t.end();
});

// The ladders a Scorer really plans with (from the model and the platform): test/scorer-setup.test.js.
test('the default token ladder', (t) => {
  const tokens = bucketLadder(DEFAULT_TOKEN_BUCKETS);
  t.deepEqual(tokens.slice(0, 8), [16, 24, 32, 48, 64, 96, 128, 192]);
  t.equal(tokens[tokens.length - 1], 8192);
  t.ok(
    tokens.every((size) => size % 8 === 0),
    'token buckets are multiples of 8',
  );
  // Whatever the ladder, padding waste stays below 1.5x above the first rung.
  for (let n = 17; n <= 8192; n++) {
    const b = bucketFor(n, tokens);
    if (b / n >= 1.5) {
      t.fail(`n=${n} -> ${b}`);
      break;
    }
  }
  t.pass('padding waste < 1.5x for every length');
  t.end();
});

test('ladders are ascending and unique', (t) => {
  for (const options of [
    DEFAULT_TOKEN_BUCKETS,
    { min: 1, max: 4096, steps: [1.25, 1.5, 1.75] },
    { min: 3, max: 1000, steps: [1.1, 1.3, 1.7], align: 4 },
  ]) {
    const ladder = bucketLadder(options);
    t.ok(
      ladder.every((size, i) => i === 0 || size > ladder[i - 1]),
      `strictly ascending: ${ladder.join(',')}`,
    );
    t.equal(ladder[0], options.min);
    t.equal(ladder[ladder.length - 1], options.max);
  }
  t.end();
});

test('bad ladder options', (t) => {
  t.throws(() => bucketLadder({ min: 0, max: 8 }), RangeError);
  t.throws(() => bucketLadder({ min: 16, max: 8 }), RangeError);
  t.throws(() => bucketLadder({ min: 1.5, max: 8 }), RangeError);
  t.throws(() => bucketLadder({ min: 1, max: 8, steps: [2] }), RangeError);
  t.throws(() => bucketLadder({ min: 1, max: 8, steps: [1] }), RangeError);
  t.throws(() => bucketLadder({ min: 1, max: 8, align: 0 }), RangeError);
  t.end();
});

test('bucketFor: smallest bucket that fits, clear error above the largest', (t) => {
  const ladder = [8, 16, 32];
  const expected = (n) => {
    for (const b of ladder) if (b >= n) return b;
    return null;
  };
  for (let n = 0; n <= 32; n++) t.equal(bucketFor(n, ladder), expected(n), `n=${n}`);
  try {
    bucketFor(33, ladder, 'item count');
    t.fail('should throw');
  } catch (error) {
    t.ok(
      error instanceof BucketOverflowError && error instanceof PjrtScoreError,
      'a BucketOverflowError (a PjrtScoreError)',
    );
    t.equal(error.code, 'BUCKET_OVERFLOW');
    t.equal(error.message, 'item count 33 is above the largest bucket 32');
    t.equal(error.value, 33);
    t.equal(error.largest, 32);
  }
  t.throws(() => bucketFor(-1, ladder), RangeError);
  t.throws(() => bucketFor(2.5, ladder), RangeError);
  t.throws(() => bucketFor(1, []), RangeError);
  t.end();
});

test('parseBucketList', (t) => {
  t.deepEqual(parseBucketList('64, 16,32,16'), [16, 32, 64]);
  t.throws(() => parseBucketList('16,x'), RangeError);
  t.throws(() => parseBucketList('0'), RangeError);
  t.throws(() => parseBucketList(' , '), RangeError);
  t.end();
});
