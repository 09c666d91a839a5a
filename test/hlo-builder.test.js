'use strict';
// The StableHLO builder without a device: emitted text, shape inference, and
// the exact errors for shapes that do not fit.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ModuleBuilder, TensorType, HloBuildError, buildProgram, programs, nn } = require('../dist/hlo');

const f32 = TensorType.f32;
const s32 = TensorType.s32;

/** A fresh function builder and a way to read the module text. */
function fn() {
  const m = new ModuleBuilder('t');
  const f = m.func('main');
  return { m, f };
}

test('TensorType prints MLIR types and rejects bad dims', (t) => {
  t.equal(String(f32([8, 4, 64])), 'tensor<8x4x64xf32>');
  t.equal(String(s32([])), 'tensor<i32>');
  t.equal(String(TensorType.pred([3])), 'tensor<3xi1>');
  t.equal(String(new TensorType('bf16', [2])), 'tensor<2xbf16>');
  t.equal(String(new TensorType('u8', [0, 2])), 'tensor<0x2xui8>');
  t.throws(() => f32([2, -1]), /tensor dims must be non-negative integers, got \[2, -1\]/);
  t.throws(() => f32([1.5]), /non-negative integers/);
  t.throws(
    () => f32([2 ** 32, 2 ** 32, 0]),
    /tensor dims must have a product \(zeros left out\) of at most 2\^53 - 1, got \[4294967296, 4294967296, 0\]/,
  );
  t.throws(() => new TensorType('f8', [1]), /unknown element type "f8"/);
  t.end();
});

test('ops are emitted in the generic form with inferred result types', (t) => {
  const { m, f } = fn();
  const x = f.param(f32([4]), 'x');
  const y = f.param(f32([4]), 'y');
  const z = f.add(x, y);
  t.equal(z.ref, '%0');
  t.deepEqual(z.dims, [4]);
  f.return([z]);
  const text = m.toText();
  t.ok(text.includes('func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>) {'), 'signature');
  t.ok(text.includes('%0 = "stablehlo.add"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>'), 'add line');
  t.ok(text.includes('"func.return"(%0) : (tensor<4xf32>) -> ()'), 'return line');
  t.ok(text.startsWith('module @t {'), 'module header');
  t.end();
});

test('constants: exact f32 text, non-finite hex, integer ranges, dense arrays', (t) => {
  const { m, f } = fn();
  const a = f.scalar(0.1);
  const b = f.scalar(-Infinity);
  const c = f.scalar(-7, 's32');
  const d = f.constant([1, 2, 3, 4, 5, 6], s32([2, 3]));
  const e = f.scalar(true, 'pred');
  f.return([a, b, c, d, e]);
  const text = m.toText();
  t.ok(text.includes(`dense<${Math.fround(0.1).toExponential(8)}> : tensor<f32>`), '0.1 rounded to f32, 9 digits');
  t.ok(text.includes('dense<0xFF800000> : tensor<f32>'), '-inf as f32 bits');
  t.ok(text.includes('dense<-7> : tensor<i32>'));
  t.ok(text.includes('dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>'));
  t.ok(text.includes('dense<true> : tensor<i1>'));
  t.throws(() => f.scalar(2 ** 31, 's32'), /2147483648 is out of range for s32/);
  t.throws(() => f.scalar(1.5, 's32'), /must be an integer, got 1.5/);
  t.throws(() => f.constant([1, 2], f32([3])), /constant: 2 values given for tensor<3xf32>, which holds 3/);
  t.end();
});

test('binary ops need equal types; numbers become splats', (t) => {
  const { m, f } = fn();
  const x = f.param(f32([2, 3]), 'x');
  const y = f.param(f32([3, 2]), 'y');
  const i = f.param(s32([2, 3]), 'i');
  t.throws(() => f.add(x, y), /add: operand types differ: tensor<2x3xf32> vs tensor<3x2xf32>/);
  t.throws(() => f.multiply(x, i), /multiply: operand types differ/);
  t.throws(() => f.exponential(i), /exponential: needs a floating-point operand, got tensor<2x3xi32>/);
  const z = f.multiply(x, 0.5);
  t.deepEqual(z.dims, [2, 3]);
  const p = f.lt(i, 3);
  t.equal(p.elementType, 'pred');
  t.throws(() => f.select(x, x, x), /select: condition must be pred/);
  f.return([z, p]);
  t.ok(m.toText().includes('dense<5.00000000e-1> : tensor<2x3xf32>'), 'splat of the other operand type');
  t.ok(
    m.toText().includes('#stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>'),
    'signed compare',
  );
  t.end();
});

test('dot_general infers [batch, lhs free, rhs free] and names mismatched dims', (t) => {
  const { f } = fn();
  const q = f.param(f32([10, 4, 64]), 'q');
  const k = f.param(f32([12, 4, 64]), 'k');
  const s = f.dotGeneral(q, k, { lhsBatch: [1], rhsBatch: [1], lhsContract: [2], rhsContract: [2] });
  t.deepEqual(s.dims, [4, 10, 12]);
  const k32 = f.param(f32([12, 4, 32]), 'k32');
  t.throws(
    () => f.dotGeneral(q, k32, { lhsBatch: [1], rhsBatch: [1], lhsContract: [2], rhsContract: [2] }),
    (e) => e instanceof HloBuildError && e.message === 'dot_general: contracting dims differ: lhs[2]=64, rhs[2]=32',
  );
  const k3 = f.param(f32([12, 3, 64]), 'k3');
  t.throws(
    () => f.dotGeneral(q, k3, { lhsBatch: [1], rhsBatch: [1], lhsContract: [2], rhsContract: [2] }),
    /batch dims differ: lhs\[1\]=4, rhs\[1\]=3/,
  );
  t.throws(
    () => f.dotGeneral(q, k, { lhsContract: [3], rhsContract: [2] }),
    /dot_general: lhs contracting dim 3 is out of range for rank 3/,
  );
  t.throws(
    () => f.dotGeneral(q, k, { lhsBatch: [2], rhsBatch: [2], lhsContract: [2], rhsContract: [2] }),
    /lhs dim 2 is both a batch and a contracting dim/,
  );
  t.deepEqual(f.matmul(f.param(f32([3, 5]), 'a'), f.param(f32([5, 7]), 'b')).dims, [3, 7]);
  t.end();
});

test('shape ops infer dims and reject bad axes', (t) => {
  const { f } = fn();
  const x = f.param(f32([2, 3, 4]), 'x');
  t.deepEqual(f.reshape(x, [6, -1]).dims, [6, 4]);
  t.throws(() => f.reshape(x, [5, 5]), /reshape: \[2, 3, 4\] \(24 elements\) cannot become \[5, 5\] \(25 elements\)/);
  t.deepEqual(f.transpose(x, [2, 0, 1]).dims, [4, 2, 3]);
  t.throws(() => f.transpose(x, [0, 0, 1]), /permutation \[0, 0, 1\] repeat an axis/);
  t.deepEqual(f.broadcastInDim(f.param(f32([3]), 'r'), [2, 3, 5], [1]).dims, [2, 3, 5]);
  t.throws(() => f.broadcastInDim(x, [2, 3, 5], [0, 1, 2]), /operand dim 2 has size 4, result dim 2 has size 5/);
  t.deepEqual(f.concatenate([x, x], 1).dims, [2, 6, 4]);
  t.throws(
    () => f.concatenate([x, f.param(f32([2, 3, 5]), 'w')], 1),
    /operand 1 tensor<2x3x5xf32> does not match operand 0/,
  );
  t.deepEqual(f.slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2]).dims, [2, 2, 2]);
  t.throws(() => f.slice(x, [0, 2, 0], [2, 4, 4]), /slice: dim 1: need 0 <= start \(2\) <= limit \(4\) <= size \(3\)/);
  const i = f.param(s32([]), 'i');
  t.deepEqual(f.dynamicSlice(x, [i, 0, 0], [1, 3, 4]).dims, [1, 3, 4]);
  t.deepEqual(f.dynamicIndex(x, i).dims, [3, 4]);
  t.throws(() => f.dynamicSlice(x, [i, 0], [1, 3, 4]), /dynamic_slice: 2 start indices given for rank 3/);
  t.deepEqual(f.pad(x, 0, [1, 0, 0], [0, 2, 0], [0, 0, 1]).dims, [3, 5, 7]);
  const idx = f.param(s32([5]), 'idx');
  t.deepEqual(f.take(x, idx, 0).dims, [5, 3, 4]);
  t.deepEqual(f.take(x, idx, 1).dims, [2, 5, 4]);
  t.deepEqual(f.take(x, idx, 2).dims, [2, 3, 5]);
  t.deepEqual(f.iota(s32([3, 4]), 1).dims, [3, 4]);
  t.throws(() => f.iota(s32([3, 4]), 2), /iota dimension 2 is out of range for rank 2/);
  t.end();
});

test('reduce drops the reduced dims; regions are isolated from outer values', (t) => {
  const { m, f } = fn();
  const x = f.param(f32([2, 3, 4]), 'x');
  t.deepEqual(f.reduceSum(x, [1]).dims, [2, 4]);
  t.deepEqual(f.reduceMax(x, [0, 2]).dims, [3]);
  const outer = f.scalar(1);
  t.throws(
    () => f.reduce([x], [f.scalar(0)], [0], (b, [acc], [v]) => [b.add(b.add(acc, v), outer)]),
    /add: operand %\d+: tensor<f32> is defined outside this region/,
  );
  t.throws(
    () => f.reduce([x], [f.scalar(0)], [0], (b, [acc]) => [acc, acc]),
    /reduce: the region body returned 2 values, expected 1/,
  );
  const [w] = f.whileLoop(
    [f.scalar(0, 's32')],
    (b, [i]) => b.lt(i, 4),
    (b, [i]) => [b.add(i, 1)],
  );
  t.equal(String(w.type), 'tensor<i32>');
  t.throws(
    () =>
      f.whileLoop(
        [f.scalar(0, 's32')],
        (b, [i]) => b.add(i, 1),
        (b, [i]) => [i],
      ),
    /while condition: region result 0 has type tensor<i32>, expected tensor<i1>/,
  );
  const [acc] = f.forLoop({ count: 3, carried: [f.scalar(0)], invariants: [x] }, (b, i, [a], [xs]) => [
    b.add(a, b.reduceSum(b.dynamicIndex(xs, i), [0, 1])),
  ]);
  t.equal(String(acc.type), 'tensor<f32>');
  t.throws(
    () => f.forLoop({ count: 3, carried: [acc] }, (b, i, [a]) => [b.add(a, outer)]),
    /defined outside this region/,
  );
  f.return([w, acc]);
  const text = m.toText();
  t.ok(/%\d+:\d+ = "stablehlo.while"/.test(text), 'multi-result while');
  t.ok(text.includes('"stablehlo.return"'), 'region return');
  t.ok(/\{dimensions = array<i64: 0, 2>\}/.test(text), 'reduce dimensions attribute');
  t.end();
});

test('function structure errors', (t) => {
  const m = new ModuleBuilder('t');
  const f = m.func();
  const x = f.param(f32([2]), 'x');
  t.throws(() => f.param(f32([2]), 'x'), /parameter name "x" is used twice/);
  t.throws(() => f.param(f32([2]), '1x'), /must match/);
  t.throws(() => m.toText(), /function @main has no return/);
  f.return([x]);
  t.throws(() => f.return([x]), /already returned/);
  t.throws(() => m.func('main'), /function @main is defined twice/);
  const other = new ModuleBuilder('o').func();
  const y = other.param(f32([2]), 'y');
  const g = new ModuleBuilder('g').func();
  t.throws(() => g.exponential(y), /belongs to function/);
  t.throws(
    () =>
      f.whileLoop(
        [f.scalar(0, 's32')],
        (b, [i]) => {
          b.param(f32([1]));
          return b.lt(i, 1);
        },
        (b, [i]) => [i],
      ),
    /parameters belong to the function/,
  );
  t.end();
});

test('nn helpers keep shapes', (t) => {
  const { f } = fn();
  const x = f.param(f32([3, 5]), 'x');
  const w = f.param(f32([5]), 'w');
  t.deepEqual(nn.softmax(f, x).dims, [3, 5]);
  t.deepEqual(nn.logSoftmax(f, x, 0).dims, [3, 5]);
  t.deepEqual(nn.logsumexp(f, x, 1).dims, [3]);
  t.deepEqual(nn.rmsNorm(f, x, w, 1e-5).dims, [3, 5]);
  t.throws(
    () => nn.rmsNorm(f, x, f.param(f32([3]), 'w3'), 1e-5),
    /rmsNorm: weight must be f32\[5\], got tensor<3xf32>/,
  );
  t.end();
});

test('buildProgram describes inputs and outputs, hashes the text, dumps on request', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hlo-dump-'));
  process.env.PJRT_SCORE_DUMP_HLO = dir;
  try {
    const p = buildProgram('scale_it', (f) => {
      const x = f.param(f32([2, 3]), 'x');
      const n = f.param(s32([]), 'n');
      return { y: f.multiply(x, 2), m: f.add(n, 1) };
    });
    t.deepEqual(p.inputs, [
      { name: 'x', dtype: 'f32', dims: [2, 3] },
      { name: 'n', dtype: 's32', dims: [] },
    ]);
    t.deepEqual(p.outputs, [
      { name: 'y', dtype: 'f32', dims: [2, 3] },
      { name: 'm', dtype: 's32', dims: [] },
    ]);
    t.match(p.hash, /^[0-9a-f]{64}$/);
    const files = fs.readdirSync(dir);
    t.deepEqual(files, [`scale_it-${p.hash.slice(0, 16)}.mlir`]);
    t.equal(fs.readFileSync(path.join(dir, files[0]), 'utf8'), p.text);
  } finally {
    delete process.env.PJRT_SCORE_DUMP_HLO;
    fs.rmSync(dir, { recursive: true, force: true });
  }
  t.end();
});

/** Every tensor type mentioned in an MLIR text, as element counts. */
function tensorSizes(text) {
  return [...text.matchAll(/tensor<((?:\d+x)*)[a-z0-9]+>/g)].map((m) =>
    m[1]
      .split('x')
      .filter(Boolean)
      .reduce((a, b) => a * Number(b), 1),
  );
}

test('masked attention programs: inputs as specified, no cross-item tensors in the factored layout', (t) => {
  const dense = programs.maskedAttention({ layout: 'dense', tokens: 37, queryHeads: 6, kvHeads: 2, headDim: 8 });
  t.equal(dense.name, 'masked_attention_dense');
  t.deepEqual(
    dense.inputs.map((i) => [i.name, i.dtype, i.dims]),
    [
      ['q', 'f32', [37, 6, 8]],
      ['k', 'f32', [37, 2, 8]],
      ['v', 'f32', [37, 2, 8]],
      ['segmentIds', 's32', [37]],
    ],
  );
  t.deepEqual(dense.outputs, [{ name: 'out', dtype: 'f32', dims: [37, 6, 8] }]);
  t.ok(dense.text.includes('"stablehlo.iota"'), 'mask built on the device from iota');

  const [P, N, L, Hq, Hkv, D] = [11, 13, 7, 6, 2, 8];
  const fac = programs.maskedAttention({
    layout: 'factored',
    queryTokens: P,
    itemCount: N,
    itemTokens: L,
    queryHeads: Hq,
    kvHeads: Hkv,
    headDim: D,
  });
  t.deepEqual(
    fac.inputs.map((i) => [i.name, i.dims]),
    [
      ['queryQ', [P, Hq, D]],
      ['queryK', [P, Hkv, D]],
      ['queryV', [P, Hkv, D]],
      ['queryLength', []],
      ['itemQ', [N, L, Hq, D]],
      ['itemK', [N, L, Hkv, D]],
      ['itemV', [N, L, Hkv, D]],
      ['itemLengths', [N]],
    ],
  );
  t.deepEqual(
    fac.outputs.map((o) => [o.name, o.dims]),
    [
      ['queryOut', [P, Hq, D]],
      ['itemOut', [N, L, Hq, D]],
    ],
  );
  // O(P^2 + N*L*(P+L)) per head: no tensor may be as large as anything across items.
  const bound = Hq * Math.max(P * P, N * L * Math.max(P, L), N * L * D);
  const largest = Math.max(...tensorSizes(fac.text));
  t.ok(largest <= bound, `largest factored tensor ${largest} <= ${bound}`);
  t.ok(largest < Hq * (N * L) * (N * L), 'nothing of size (N*L)^2');
  t.throws(
    () => programs.maskedAttention({ layout: 'dense', tokens: 4, queryHeads: 6, kvHeads: 4, headDim: 8 }),
    /query heads \(6\) must be a multiple of kv heads \(4\)/,
  );
  t.throws(
    () => programs.maskedAttention({ layout: 'sparse', tokens: 4, queryHeads: 1, kvHeads: 1, headDim: 8 }),
    /layout must be 'dense' or 'factored', got "sparse"/,
  );
  t.throws(
    () =>
      programs.maskedAttention({
        layout: 'factored',
        queryTokens: 4,
        itemCount: -1,
        itemTokens: 2,
        queryHeads: 1,
        kvHeads: 1,
        headDim: 8,
      }),
    /itemCount must be a non-negative integer, got -1/,
  );
  t.end();
});

test('LM-head gather program never forms [T, V] logits', (t) => {
  const [T, Dm, K, V, Lb] = [29, 16, 5, 97, 3];
  const p = programs.lmHeadGather({
    tokens: T,
    hiddenSize: Dm,
    gatherCount: K,
    vocabSize: V,
    labelCount: Lb,
    eps: 1e-6,
  });
  t.deepEqual(
    p.inputs.map((i) => [i.name, i.dtype, i.dims]),
    [
      ['hidden', 'f32', [T, Dm]],
      ['gatherIndices', 's32', [K]],
      ['finalNormWeight', 'f32', [Dm]],
      ['lmHead', 'f32', [V, Dm]],
      ['labels', 's32', [Lb]],
    ],
  );
  t.deepEqual(p.outputs, [{ name: 'labelLogprobs', dtype: 'f32', dims: [K, Lb] }]);
  t.ok(p.text.includes(`tensor<${K}x${V}xf32>`), '[K, V] logits exist');
  t.notOk(p.text.includes(`tensor<${T}x${V}xf32>`), 'no [T, V] logits');
  t.throws(
    () => programs.lmHeadGather({ tokens: T, hiddenSize: Dm, gatherCount: K, vocabSize: V, labelCount: Lb }),
    /eps must be a non-negative number, got undefined/,
  );
  t.end();
});
