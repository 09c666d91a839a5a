'use strict';
// The JIT cache with the real plugin: concurrent requests for one new key
// compile once; a new process-like cache over the same directory loads the
// serialized executables and compiles nothing.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client, programs } = require('..');
const { JitCache, clientCompiler } = require('../dist/scoring');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-jit-'));

function lmHead(k) {
  return programs.lmHeadGather({ tokens: 16, hiddenSize: 8, gatherCount: k, vocabSize: 32, labelCount: 3, eps: 1e-5 });
}

async function runLmHead(client, exe, k) {
  const f = (n, s) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * s));
  const inputs = [
    await client.upload(f(16 * 8, 0.37), [16, 8]),
    await client.upload(Int32Array.from({ length: k }, (_, i) => (i * 5) % 16), [k]),
    await client.upload(f(8, 1.3), [8]),
    await client.upload(f(32 * 8, 0.11), [32, 8]),
    await client.upload(Int32Array.of(0, 7, 31), [3]),
  ];
  const [out] = await exe.execute(inputs);
  return Array.from(await out.toHost());
}

test('one compile per key under concurrency, then a restart compiles nothing', async (t) => {
  const first = await Client.create();
  const cacheA = new JitCache(clientCompiler(first), { disk: dir });
  const key = (k) => ({ program: 'lm_head_gather', model: 'synthetic', dims: { K: k } });
  const source = (k) => () => lmHead(k).text;
  const leases = await Promise.all(Array.from({ length: 8 }, () => cacheA.get(key(4), source(4))));
  t.ok(leases.every((e) => e === leases[0]), '8 concurrent gets share one executable');
  t.equal(cacheA.counters().compiles, 1, 'compiled once');
  await cacheA.get(key(6), source(6));
  const expected4 = await runLmHead(first, leases[0], 4);
  const expected6 = await runLmHead(first, await cacheA.get(key(6), source(6)), 6);
  await cacheA.flush();
  t.equal(cacheA.counters().compiles, 2, 'two keys, two compiles');
  t.ok(cacheA.counters().diskWrites >= 2, `${cacheA.counters().diskWrites} executables written to disk`);
  cacheA.dispose();
  first.dispose();

  const second = await Client.create();
  const cacheB = new JitCache(clientCompiler(second), { disk: dir });
  const got4 = await runLmHead(second, await cacheB.get(key(4), source(4)), 4);
  const got6 = await runLmHead(second, await cacheB.get(key(6), source(6)), 6);
  const c = cacheB.counters();
  t.equal(c.compiles, 0, 'the restarted cache compiled nothing');
  t.equal(c.diskHits, 2, 'both executables came from disk');
  t.deepEqual(got4, expected4, 'same results from the loaded executable (K=4)');
  t.deepEqual(got6, expected6, 'same results from the loaded executable (K=6)');
  cacheB.dispose();
  second.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});
