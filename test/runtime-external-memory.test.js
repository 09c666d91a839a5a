'use strict';
// External memory accounting: each DeviceBuffer adds its size to V8's
// external memory count; the count must come back down on every path that
// releases a buffer (its own dispose, its client's dispose, finalization).
// V8's total is not in process.memoryUsage(), so the addon keeps its own.
const test = require('tape');
const { Client, DeviceBuffer } = require('../dist/runtime');

const ELEMENTS = 16 * 1024; // 64 KiB of f32 per buffer: 1,000 leaked would be 64 MB
const COUNT = 1000;
const MB = 1 << 20;

function external() {
  return DeviceBuffer.externalBytes();
}

async function settle() {
  // Finalizers run after a GC, from the event loop: give them a few turns.
  for (let i = 0; i < 5; i++) {
    global.gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test('external memory returns to its start after buffers are disposed through their client or collected', async (t) => {
  const data = new Float32Array(ELEMENTS).fill(0.5); // one host array, reused
  await settle();
  const start = external();

  const viaClient = await Client.create();
  const kept = [];
  for (let i = 0; i < COUNT; i++) kept.push(await viaClient.upload(data, [ELEMENTS]));
  const withBuffers = external();
  t.ok(
    withBuffers - start >= (COUNT * ELEMENTS * 4) / 2,
    `1,000 live buffers raise external memory by ${((withBuffers - start) / MB).toFixed(1)} MB`,
  );
  viaClient.dispose();
  t.ok(kept.every((b) => b.disposed), 'the client disposed every buffer it made');
  kept.length = 0;
  await settle();
  const afterClient = external();
  t.ok(
    Math.abs(afterClient - start) < MB,
    `after client.dispose(): ${((afterClient - start) / MB).toFixed(3)} MB from the start`,
  );

  const collected = await Client.create();
  for (let i = 0; i < COUNT; i++) await collected.upload(data, [ELEMENTS]); // dropped at once
  await settle();
  const afterGc = external();
  t.ok(
    Math.abs(afterGc - start) < MB,
    `after 1,000 buffers were collected: ${((afterGc - start) / MB).toFixed(3)} MB from the start`,
  );
  collected.dispose();
  await settle();
  t.ok(Math.abs(external() - start) < MB, 'and after their client was disposed too');
  const own = await Client.create();
  const b = await own.upload(data, [ELEMENTS]);
  t.equal(external() - start, ELEMENTS * 4, 'one live buffer counts its byte length');
  b.dispose();
  b.dispose();
  own.dispose();
  t.equal(external(), start, 'its own dispose (twice) and then its client\'s take it back once');
});
