'use strict';
// A serialized executable, deserialized in a new client, gives the same result.
const test = require('tape');
const { Client } = require('..');
const { prng } = require('./helpers/prng');

const PROGRAM = `func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.tanh %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}`;

async function runOn(client, exe, a, b) {
  const ba = await client.upload(a, [8, 16]);
  const bb = await client.upload(b, [16, 4]);
  const [o] = await exe.execute([ba, bb]);
  return Array.from(await o.toHost());
}

test('serialize in one client, deserialize in another: same result', async (t) => {
  const r = prng(11);
  const a = r.floats(128);
  const b = r.floats(64);
  const first = await Client.create();
  const exe = await first.compile(PROGRAM);
  const expected = await runOn(first, exe, a, b);
  const bytes = await exe.serialize();
  t.ok(bytes instanceof Uint8Array && bytes.length > 100, `serialized to ${bytes.length} bytes`);
  first.dispose();

  const second = await Client.create();
  const loaded = await second.deserialize(bytes);
  t.deepEqual(loaded.signature, exe.signature, 'the signature travels with the bytes');
  t.equal(loaded.numOutputs, 1);
  const got = await runOn(second, loaded, a, b);
  t.deepEqual(got, expected, 'bit-identical results');
  // And it is checked like a compiled one.
  const wrong = await second.upload(new Float32Array(64), [4, 16]);
  try {
    await loaded.execute([wrong, wrong]);
    t.fail('should reject');
  } catch (err) {
    t.match(err.message, /argument 0: expected f32\[8, 16\], got f32\[4, 16\]/, err.message);
  }
  try {
    await second.deserialize(new Uint8Array([1, 2, 3]));
    t.fail('should reject');
  } catch (err) {
    t.match(err.message, /not a serialized pjrt-score executable/, err.message);
  }
  second.dispose();
});
