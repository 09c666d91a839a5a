'use strict';
// A cached executable file with a flipped byte, on the real CPU plugin: the
// checksum check turns it into a miss plus a warning, the corrupt bytes never
// reach the plugin's deserializer, the program is recompiled and written
// back, and its results equal those of the program compiled before.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('..');
const { JitCache } = require('../dist/scoring/execution/jit-cache');
const { clientCompiler } = require('../dist/scoring/execution/compiler');
const { programs } = require('../dist/hlo');

const K = 4;
const key = { program: 'lm_head_gather', model: 'synthetic', dims: { K } };
const source = () =>
  programs.lmHeadGather({ tokens: 16, hiddenSize: 8, gatherCount: K, vocabSize: 32, labelCount: 3, eps: 1e-5 }).text;

async function scores(client, exe) {
  const f = (n, s) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * s));
  const inputs = [
    await client.upload(f(16 * 8, 0.37), [16, 8]),
    await client.upload(
      Int32Array.from({ length: K }, (_, i) => (i * 5) % 16),
      [K],
    ),
    await client.upload(f(8, 1.3), [8]),
    await client.upload(f(32 * 8, 0.11), [32, 8]),
    await client.upload(Int32Array.of(0, 7, 31), [3]),
  ];
  const [out] = await exe.execute(inputs);
  return Array.from(await out.toHost());
}

// clientCompiler with a count of the byte arrays handed to the plugin's deserializer.
function countingCompiler(client) {
  const compiler = clientCompiler(client);
  const counted = { ...compiler, deserialized: 0 };
  counted.deserialize = (bytes) => {
    counted.deserialized++;
    return compiler.deserialize(bytes);
  };
  return counted;
}

test('a flipped byte in a cached executable: a miss with a warning, recompiled, same scores', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-corrupt-'));
  const client = await Client.create();
  const first = new JitCache(clientCompiler(client), { disk: dir });
  const expected = await scores(client, await first.get(key, source));
  await first.flush();
  first.dispose();
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.exe'));
  t.equal(files.length, 1, 'one executable file on disk');
  const file = path.join(dir, files[0]);
  const intact = fs.readFileSync(file);
  t.ok(intact.length > 1000, `the file holds ${intact.length} bytes`);

  // Offsets: the magic tag, the stored digest, the payload's first byte, its middle, its last.
  const offsets = [0, 8 + 5, 40, 40 + Math.floor((intact.length - 40) / 2), intact.length - 1];
  for (const offset of offsets) {
    const corrupt = Buffer.from(intact);
    corrupt[offset] ^= 0x01;
    fs.writeFileSync(file, corrupt);
    const warnings = [];
    const compiler = countingCompiler(client);
    const cache = new JitCache(compiler, { disk: dir, warn: (m) => warnings.push(m) });
    const got = await scores(client, await cache.get(key, source));
    const c = cache.counters();
    t.equal(compiler.deserialized, 0, `byte ${offset}: the corrupt bytes never reached the plugin`);
    t.equal(c.compiles, 1, `byte ${offset}: recompiled`);
    t.equal(c.diskHits, 0, `byte ${offset}: not a disk hit`);
    t.ok(
      warnings.some((m) => /removing corrupt cached executable .*checksum/.test(m)),
      `byte ${offset}: warned "${warnings[0]}"`,
    );
    t.deepEqual(got, expected, `byte ${offset}: same scores as before`);
    await cache.flush();
    cache.dispose();
  }

  // The entry written back after the last recompile loads again, with no warning.
  const warnings = [];
  const compiler = countingCompiler(client);
  const cache = new JitCache(compiler, { disk: dir, warn: (m) => warnings.push(m) });
  const got = await scores(client, await cache.get(key, source));
  t.equal(cache.counters().diskHits, 1, 'the rewritten entry is a disk hit');
  t.equal(cache.counters().compiles, 0, 'nothing compiled');
  t.deepEqual(warnings, [], 'no warning');
  t.deepEqual(got, expected, 'same scores from the reloaded executable');
  cache.dispose();
  client.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});
