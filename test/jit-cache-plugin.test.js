'use strict';
// The JIT cache with the real plugin: concurrent requests for one new key
// compile once; a new process-like cache over the same directory loads the
// serialized executables and compiles nothing. An executable written under
// another CPU identity (or other XLA_FLAGS) is never loaded: it is compiled
// anew (XLA compiles for the host's instruction set).
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('../dist/runtime/client');
const { JitCache } = require('../dist/scoring/execution/jit-cache');
const { clientCompiler, executableNamespace } = require('../dist/scoring/execution/compiler');
const { hostCpu } = require('../dist/runtime/host-cpu');
const { programs } = require('../dist/hlo');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-jit-'));

function lmHead(k) {
  return programs.lmHeadGather({ tokens: 16, hiddenSize: 8, gatherCount: k, vocabSize: 32, labelCount: 3, eps: 1e-5 });
}

async function runLmHead(client, exe, k) {
  const f = (n, s) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * s));
  const inputs = [
    await client.upload(f(16 * 8, 0.37), [16, 8]),
    await client.upload(
      Int32Array.from({ length: k }, (_, i) => (i * 5) % 16),
      [k],
    ),
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
  t.ok(
    leases.every((e) => e === leases[0]),
    '8 concurrent gets share one executable',
  );
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
});

test('an executable cached under another CPU key is recompiled, not loaded', async (t) => {
  const client = await Client.create();
  const key = { program: 'lm_head_gather', model: 'synthetic', dims: { K: 5 } };
  const source = () => lmHead(5).text;
  const here = clientCompiler(client);
  t.ok(
    here.cacheNamespace.includes(`cpu${hostCpu().id}`),
    `the default namespace names this CPU (${hostCpu().model}): ${here.cacheNamespace}`,
  );
  // Written by "another machine": the same plugin and program under another CPU identity.
  const other = new JitCache(clientCompiler(client, { hostCpuId: 'f00dcafe0000' }), { disk: dir });
  const expected = await runLmHead(client, await other.get(key, source), 5);
  await other.flush();
  t.equal(other.counters().diskWrites, 1, 'the other CPU wrote its executable to the shared directory');
  other.dispose();

  const mine = new JitCache(here, { disk: dir });
  const got = await runLmHead(client, await mine.get(key, source), 5);
  t.equal(mine.counters().diskHits, 0, "this CPU did not load the other CPU's executable");
  t.equal(mine.counters().compiles, 1, 'it compiled its own');
  t.deepEqual(got, expected, 'same results');
  await mine.flush();
  mine.dispose();

  const again = new JitCache(clientCompiler(client), { disk: dir });
  await again.get(key, source);
  t.equal(again.counters().diskHits, 1, 'its own entry is found on the next start');
  again.dispose();

  const flags = executableNamespace(client, { xlaFlags: '--xla_cpu_use_thunk_runtime=false' });
  t.notEqual(flags, here.cacheNamespace, 'other XLA_FLAGS: another namespace');
  client.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});
