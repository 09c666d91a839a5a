'use strict';
// Nothing leaks: 10,000 upload/execute/toHost/dispose cycles; finalizers
// clean up what callers forget to dispose.
const test = require('tape');
const { Client } = require('..');

function rssMB() {
  return process.memoryUsage().rss / (1 << 20);
}

test('10,000 upload/execute/toHost/dispose cycles grow RSS by less than 50 MB', async (t) => {
  const client = await Client.create();
  const exe = await client.compile(`func.func @main(%a: tensor<256xf32>) -> tensor<256xf32> {
    %0 = stablehlo.add %a, %a : tensor<256xf32>
    return %0 : tensor<256xf32>
  }`);
  const data = new Float32Array(256).fill(1.5);
  const cycle = async () => {
    const b = await client.upload(data, [256]);
    const [o] = await exe.execute([b]);
    const h = await o.toHost();
    b.dispose();
    o.dispose();
    return h[255];
  };
  for (let i = 0; i < 500; i++) await cycle(); // warm up allocators and JIT
  global.gc();
  const before = rssMB();
  let bad = 0;
  for (let i = 0; i < 10000; i++) if ((await cycle()) !== 3) bad++;
  global.gc();
  const after = rssMB();
  t.equal(bad, 0, 'every cycle computed 1.5 + 1.5');
  t.ok(after - before < 50, `RSS ${before.toFixed(1)} MB -> ${after.toFixed(1)} MB (growth ${(after - before).toFixed(1)} MB)`);
  exe.dispose();
  client.dispose();
});

test('objects dropped without dispose are finalized without crashing', async (t) => {
  let client = await Client.create();
  for (let i = 0; i < 200; i++) {
    const b = await client.upload(new Float32Array(1024), [1024]);
    void b; // dropped
  }
  const exe = await client.compile(`func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    return %a : tensor<4xf32>
  }`);
  void exe;
  client = null; // drop the client before its children
  for (let i = 0; i < 5; i++) {
    global.gc();
    await new Promise((r) => setImmediate(r));
  }
  t.pass('GC of buffers, executables and the client in any order did not crash');
  const fresh = await Client.create();
  const b = await fresh.upload(new Float32Array([1, 2]), [2]);
  t.deepEqual(Array.from(await b.toHost()), [1, 2], 'a new client still works');
  fresh.dispose();
});
