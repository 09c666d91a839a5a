'use strict';
// Nothing leaks: 10,000 upload/execute/toHost/dispose cycles; compiles give
// their scratch back; finalizers clean up what callers forget to dispose.
const test = require('tape');
const fs = require('node:fs');
const { Client } = require('..');
const { loadModelInfo } = require('../dist/model');
const { decoderFused } = require('../dist/hlo');

function rssMB() {
  return process.memoryUsage().rss / (1 << 20);
}

/** Resident MiB of anonymous memory (the heap and arenas), without the file-backed code pages a first compile brings in. */
function anonMB() {
  let kb = 0;
  let anonymous = false;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping) anonymous = !mapping[1].startsWith('/');
    else if (anonymous && line.startsWith('Rss:')) kb += Number(/(\d+)/.exec(line)[1]);
  }
  return kb / 1024;
}

// XLA's compiler allocates hundreds of MiB of scratch on several threads and
// frees it; glibc kept those pages in its arenas, and with each compile on
// another thread the kept memory grew (measured before the addon trimmed the
// heap after compile and deserialize: 12 compiles of these programs, all
// disposed, left RSS 480 MiB above the start and still growing; after: 60 MiB,
// most of it the compiler's code pages).
test('compiling and disposing decoder programs gives the compiler scratch back', async (t) => {
  const { config } = loadModelInfo();
  const client = await Client.create();
  const programs = [4, 5, 6].map(
    (items) => decoderFused(config, { prefix: 16, items, itemLength: 8, labels: 2 }, { dotPrecision: 'HIGHEST' }).text,
  );
  const round = async () => {
    for (const text of programs) {
      const executable = await client.compile(text);
      if (text === programs[0]) (await client.deserialize(await executable.serialize())).dispose();
      executable.dispose();
    }
  };
  const start = anonMB();
  await round();
  const first = anonMB();
  await round();
  await round();
  const third = anonMB();
  t.ok(
    first - start < 100,
    `anonymous RSS after a first round of ${programs.length} compiles and a load: ${start.toFixed(0)} -> ${first.toFixed(0)} MiB (< +100)`,
  );
  t.ok(third - first < 40, `two more rounds: ${first.toFixed(0)} -> ${third.toFixed(0)} MiB (< +40)`);
  client.dispose();
});

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
  t.ok(
    after - before < 50,
    `RSS ${before.toFixed(1)} MB -> ${after.toFixed(1)} MB (growth ${(after - before).toFixed(1)} MB)`,
  );
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
  // eslint-disable-next-line no-useless-assignment -- the last reference to the client, dropped before the collections
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
