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
  t.ok(
    kept.every((b) => b.disposed),
    'the client disposed every buffer it made',
  );
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
  t.equal(external(), start, "its own dispose (twice) and then its client's take it back once");
});

// Major collections (mark-compact) that ran while `work` did.
async function majorCollectionsDuring(work) {
  const { PerformanceObserver, constants } = require('node:perf_hooks');
  let majors = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
  });
  observer.observe({ entryTypes: ['gc'] });
  await work();
  // A collection's entry is queued as a native immediate, and those run before the JS immediates of the
  // same check phase: one turn later every collection of the work has its entry, taken here at once.
  await new Promise((resolve) => setImmediate(resolve));
  for (const entry of observer.takeRecords()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
  observer.disconnect();
  return majors;
}

test('deferExternalMemoryReports: one report to V8 at the end, the same count, fewer full collections; nests and survives a throw', async (t) => {
  const { deferExternalMemoryReports } = require('../dist/runtime');
  const { binding } = require('../dist/runtime/binding');
  const client = await Client.create();
  const big = new Float32Array(4 * MB); // 16 MB
  const uploadMany = async () => {
    const made = [];
    for (let i = 0; i < 48; i++) made.push(await client.upload(big, [big.length])); // 768 MB in all
    return made;
  };
  await settle();
  const start = external();

  let made = [];
  const plain = await majorCollectionsDuring(async () => {
    made = await uploadMany();
  });
  t.equal(external() - start, 48 * big.byteLength, 'reported one by one: 768 MB counted');
  made.forEach((b) => b.dispose());
  await settle();

  let inside = NaN;
  const deferred = await majorCollectionsDuring(() =>
    deferExternalMemoryReports(async () => {
      made = await uploadMany();
      inside = external() - start;
    }),
  );
  t.equal(inside, 48 * big.byteLength, 'deferred: the addon still counts every buffer');
  t.equal(external() - start, 48 * big.byteLength, 'and after the span the count is the same');
  t.ok(
    deferred < plain,
    `full collections while 768 MB of buffers were made: ${plain} reported one by one, ${deferred} deferred`,
  );
  made.forEach((b) => b.dispose());
  t.equal(external(), start, 'disposing them takes it all back');

  // Nesting and throws: the depth comes back to 0 whatever happens inside.
  const failure = await deferExternalMemoryReports(() =>
    deferExternalMemoryReports(() => Promise.reject(new Error('inner failure'))),
  ).then(
    () => null,
    (err) => err,
  );
  t.match(String(failure), /inner failure/, 'a failure inside nested spans comes out');
  t.equal(binding().deferExternalMemory(true), 1, 'and both spans ended: a new span is the only one open');
  t.equal(binding().deferExternalMemory(false), 0, 'which ends');
  t.equal(binding().deferExternalMemory(false), 0, 'an extra end is ignored');
  t.throws(
    () => binding().deferExternalMemory('yes'),
    /deferExternalMemory\(on: boolean\)/,
    'a non-boolean is a TypeError',
  );
  client.dispose();
});
