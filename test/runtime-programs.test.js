'use strict';
// Programs computed on the device match plain JS references.
const test = require('tape');
const { Client } = require('..');
const { prng } = require('./helpers/prng');

let client;
test('setup: create a client on the CPU plugin', async (t) => {
  client = await Client.create();
  t.equal(client.platformName, 'cpu', 'platform is cpu');
  t.ok(client.platformVersion.length > 0, `platform version ${client.platformVersion}`);
  t.equal(client.apiVersion.major, 0, `PJRT C API ${client.apiVersion.major}.${client.apiVersion.minor}`);
  t.equal(client.devices.length, 1, 'one device (cpu_device_count = 1)');
  // The CPU plugin gives no memory limit (its device memory is the host's): the client falls back to the host's.
  const limit = client.devices[0].memoryLimit;
  t.ok(
    limit === null || (Number.isSafeInteger(limit) && limit > 0),
    `the device's memory limit is null or a byte count (${limit})`,
  );
  const os = require('node:os');
  t.ok(
    client.deviceMemoryBytes > 0 && client.deviceMemoryBytes <= (limit ?? os.totalmem()),
    `device memory ${client.deviceMemoryBytes} bytes, within ${limit ?? os.totalmem()}`,
  );
});

async function run(mlir, inputs) {
  const exe = await client.compile(mlir);
  const buffers = [];
  for (const [data, dims, dtype] of inputs) buffers.push(await client.upload(data, dims, dtype));
  const outs = await exe.execute(buffers);
  const host = [];
  for (const o of outs) host.push({ data: await o.toHost(), dims: o.dims, dtype: o.dtype });
  for (const b of [...buffers, ...outs]) b.dispose();
  exe.dispose();
  return host;
}

function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

test('elementwise add', async (t) => {
  const r = prng(1);
  const a = r.floats(12);
  const b = r.floats(12);
  const [out] = await run(
    `func.func @main(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>) -> tensor<3x4xf32> {
      %0 = stablehlo.add %a, %b : tensor<3x4xf32>
      return %0 : tensor<3x4xf32>
    }`,
    [
      [a, [3, 4]],
      [b, [3, 4]],
    ],
  );
  const expected = a.map((x, i) => Math.fround(x + b[i]));
  t.deepEqual(out.dims, [3, 4]);
  t.equal(out.dtype, 'f32');
  t.equal(maxAbsDiff(out.data, expected), 0, 'exactly a + b');
});

test('matmul via dot_general', async (t) => {
  const r = prng(2);
  const [M, K, N] = [5, 7, 3];
  const a = r.floats(M * K);
  const b = r.floats(K * N);
  const [out] = await run(
    `func.func @main(%a: tensor<${M}x${K}xf32>, %b: tensor<${K}x${N}xf32>) -> tensor<${M}x${N}xf32> {
      %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<${M}x${K}xf32>, tensor<${K}x${N}xf32>) -> tensor<${M}x${N}xf32>
      return %0 : tensor<${M}x${N}xf32>
    }`,
    [
      [a, [M, K]],
      [b, [K, N]],
    ],
  );
  const expected = new Float64Array(M * N);
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) for (let k = 0; k < K; k++) expected[i * N + j] += a[i * K + k] * b[k * N + j];
  t.ok(maxAbsDiff(out.data, expected) < 1e-5, `max abs diff ${maxAbsDiff(out.data, expected)}`);
});

test('reduction (sum over rows, max over all)', async (t) => {
  const r = prng(3);
  const x = r.floats(4 * 6);
  const [sum, max] = await run(
    `func.func @main(%x: tensor<4x6xf32>) -> (tensor<4xf32>, tensor<f32>) {
      %zero = stablehlo.constant dense<0.0> : tensor<f32>
      %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
      %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<f32>
      return %s, %m : tensor<4xf32>, tensor<f32>
    }`,
    [[x, [4, 6]]],
  );
  const rows = [0, 1, 2, 3].map((i) => x.slice(i * 6, i * 6 + 6).reduce((a, b) => a + b, 0));
  t.ok(maxAbsDiff(sum.data, rows) < 1e-5, 'row sums');
  t.equal(max.data[0], Math.max(...x), 'max');
  t.deepEqual(max.dims, [], 'scalar output has no dims');
});

test('integer program (s32 and s64)', async (t) => {
  const a = Int32Array.from([1, -2, 3, 2147483000, -7]);
  const b = Int32Array.from([10, 20, -30, 600, 7]);
  const c = BigInt64Array.from([1n, -(2n ** 40n), 3n, 2n ** 50n, 5n]);
  const [prod, wide] = await run(
    `func.func @main(%a: tensor<5xi32>, %b: tensor<5xi32>, %c: tensor<5xi64>) -> (tensor<5xi32>, tensor<5xi64>) {
      %0 = stablehlo.multiply %a, %b : tensor<5xi32>
      %1 = stablehlo.convert %a : (tensor<5xi32>) -> tensor<5xi64>
      %2 = stablehlo.add %1, %c : tensor<5xi64>
      return %0, %2 : tensor<5xi32>, tensor<5xi64>
    }`,
    [
      [a, [5]],
      [b, [5]],
      [c, [5]],
    ],
  );
  t.equal(prod.dtype, 's32');
  t.deepEqual(
    Array.from(prod.data),
    Array.from(a, (x, i) => Math.imul(x, b[i])),
    'i32 multiply wraps like Math.imul',
  );
  t.equal(wide.dtype, 's64');
  t.deepEqual(
    Array.from(wide.data),
    Array.from(c, (x, i) => x + BigInt(a[i])),
    's64 add',
  );
});

// Independent float <-> half conversions for the reference.
function f32ToBf16Bits(x) {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0];
  return (u + 0x7fff + ((u >>> 16) & 1)) >>> 16; // round to nearest even
}
function bf16BitsToF32(h) {
  return new Float32Array(new Uint32Array([h << 16]).buffer)[0];
}
function f16BitsToF32(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

test('bf16 round trip and arithmetic', async (t) => {
  const values = [0, 1, -1, 0.5, 3.140625, -1024, 1e-3, 65504];
  const bits = Uint16Array.from(values.map(f32ToBf16Bits));
  const [same, asF32] = await run(
    `func.func @main(%x: tensor<8xbf16>) -> (tensor<8xbf16>, tensor<8xf32>) {
      %0 = stablehlo.convert %x : (tensor<8xbf16>) -> tensor<8xf32>
      return %x, %0 : tensor<8xbf16>, tensor<8xf32>
    }`,
    [[bits, [8], 'bf16']],
  );
  t.equal(same.dtype, 'bf16');
  t.deepEqual(Array.from(same.data), Array.from(bits), 'bf16 bits come back unchanged');
  t.deepEqual(Array.from(asF32.data), Array.from(bits, bf16BitsToF32), 'bf16 -> f32 on device equals the JS decoding');
});

test('f16 round trip and conversion', async (t) => {
  const bits = Uint16Array.from([0x0000, 0x3c00, 0xbc00, 0x3800, 0x7bff, 0x0001, 0x4248, 0xc500]);
  const [same, asF32] = await run(
    `func.func @main(%x: tensor<8xf16>) -> (tensor<8xf16>, tensor<8xf32>) {
      %0 = stablehlo.convert %x : (tensor<8xf16>) -> tensor<8xf32>
      return %x, %0 : tensor<8xf16>, tensor<8xf32>
    }`,
    [[bits, [8], 'f16']],
  );
  t.equal(same.dtype, 'f16');
  t.deepEqual(Array.from(same.data), Array.from(bits), 'f16 bits come back unchanged');
  t.deepEqual(Array.from(asF32.data), Array.from(bits, f16BitsToF32), 'f16 -> f32 on device equals the JS decoding');
});

test('u8 and pred inputs, several outputs', async (t) => {
  const x = Uint8Array.from([0, 1, 2, 250, 255]);
  const p = Uint8Array.from([1, 0, 1, 0, 1]);
  const outs = await run(
    `func.func @main(%x: tensor<5xui8>, %p: tensor<5xi1>) -> (tensor<5xui8>, tensor<5xi1>, tensor<5xf32>) {
      %one = stablehlo.constant dense<1> : tensor<5xui8>
      %0 = stablehlo.add %x, %one : tensor<5xui8>
      %1 = stablehlo.not %p : tensor<5xi1>
      %2 = stablehlo.convert %x : (tensor<5xui8>) -> tensor<5xf32>
      return %0, %1, %2 : tensor<5xui8>, tensor<5xi1>, tensor<5xf32>
    }`,
    [
      [x, [5], 'u8'],
      [p, [5], 'pred'],
    ],
  );
  t.equal(outs.length, 3, 'three outputs');
  t.deepEqual(
    Array.from(outs[0].data),
    Array.from(x, (v) => (v + 1) & 0xff),
    'u8 add wraps',
  );
  t.equal(outs[1].dtype, 'pred');
  t.deepEqual(
    Array.from(outs[1].data),
    Array.from(p, (v) => 1 - v),
    'pred not',
  );
  t.deepEqual(Array.from(outs[2].data), Array.from(x), 'u8 -> f32');
});

test('executable metadata: output count, types, dims', async (t) => {
  const exe = await client.compile(`func.func @main(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<i32>) {
      %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
      %1 = stablehlo.constant dense<7> : tensor<i32>
      return %0, %1 : tensor<3x2xf32>, tensor<i32>
    }`);
  t.equal(exe.numOutputs, 2);
  t.deepEqual(exe.outputTypes, ['f32', 's32']);
  t.deepEqual(exe.outputDims, [[3, 2], []]);
  t.deepEqual(exe.signature.inputs, [{ dtype: 'f32', dims: [2, 3] }], 'signature read from the text');
  exe.dispose();
});

test('teardown', (t) => {
  client.dispose();
  t.ok(client.disposed, 'client disposed');
  t.end();
});
