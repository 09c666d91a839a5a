'use strict';
// The JIT cache logic with a fake compiler (a counter and timers): single
// flight, LRU caps, leases, failures, the disk cache and warmup. The real
// plugin is exercised by a separate test once the runtime exists.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { JitCache, jitKeyString, executableKey } = require('../dist/scoring');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function fakeCompiler(options = {}) {
  const compiler = {
    cacheNamespace: options.namespace || 'fake-1.0',
    compiled: [],
    disposed: [],
    deserialized: 0,
    fail: options.fail || (() => false),
    async compile(text) {
      compiler.compiled.push(text);
      await sleep(options.delayMs === undefined ? 5 : options.delayMs);
      if (compiler.fail(text)) throw new Error(`compile failed: ${text}`);
      return { text, disposed: false };
    },
    async serialize(executable) {
      return new Uint8Array(Buffer.from(`EXE:${executable.text}`));
    },
    async deserialize(bytes) {
      const text = Buffer.from(bytes).toString();
      if (!text.startsWith('EXE:')) throw new Error('not an executable');
      compiler.deserialized++;
      return { text: text.slice(4), disposed: false };
    },
    dispose(executable) {
      if (executable.disposed) throw new Error(`double dispose of ${executable.text}`);
      executable.disposed = true;
      compiler.disposed.push(executable.text);
    },
  };
  return compiler;
}

const key = (name, dims = { T: 64 }) => ({ program: name, model: 'm', dims });
// A program source that counts its calls.
function source(text, calls) {
  return () => {
    if (calls) calls.n++;
    return `program ${text}`;
  };
}
// Asserts that a promise rejects with a message matching `pattern`.
async function rejectsWith(t, promise, pattern, msg) {
  try {
    await promise;
    t.fail(`${msg || pattern}: resolved, expected a rejection`);
  } catch (error) {
    t.match(error && error.message, pattern, msg || `rejects with ${pattern}`);
  }
}
function tmpDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-jit-'));
}
function collector() {
  const messages = [];
  const warn = (m) => messages.push(m);
  warn.messages = messages;
  return warn;
}

test('key strings are canonical', (t) => {
  t.equal(jitKeyString({ program: 'p', model: 'm', dims: { N: 8, L: 16, P: 128 } }), 'p|m|L=16,N=8,P=128');
  t.equal(
    jitKeyString({ program: 'p', model: 'm', dims: { P: 128, N: 8, L: 16 } }),
    'p|m|L=16,N=8,P=128',
    'dim order does not matter',
  );
  t.throws(() => jitKeyString({ program: 'p', model: 'm', dims: { T: 1.5 } }), TypeError);
  t.throws(() => jitKeyString({ program: '', model: 'm', dims: {} }), TypeError);
  t.end();
});

test('N concurrent gets of a new key compile once', async (t) => {
  const compiler = fakeCompiler({ delayMs: 20 });
  const cache = new JitCache(compiler, { disk: false });
  const calls = { n: 0 };
  const results = await Promise.all(Array.from({ length: 10 }, () => cache.get(key('a'), source('a', calls))));
  t.equal(compiler.compiled.length, 1, 'compiled once');
  t.equal(calls.n, 1, 'program text produced once');
  t.ok(
    results.every((e) => e === results[0]),
    'everyone got the same executable',
  );
  let c = cache.counters();
  t.equal(c.compiles, 1);
  t.equal(c.misses, 10, 'every lookup that had to wait is a miss');
  t.equal(c.hits, 0);
  t.ok(c.compileSeconds > 0, 'compile time counted');
  await cache.get(key('a'), source('a', calls));
  c = cache.counters();
  t.equal(c.hits, 1, 'then a hit');
  t.equal(calls.n, 1, 'no program text on a hit');
  t.equal(c.inFlight, 0);
  t.end();
});

test('concurrent acquires of a new key: one compile, every lease held', async (t) => {
  const compiler = fakeCompiler({ delayMs: 10 });
  const cache = new JitCache(compiler, { disk: false, maxEntries: 1 });
  const leases = await Promise.all(Array.from({ length: 5 }, () => cache.acquire(key('a'), source('a'))));
  t.equal(compiler.compiled.length, 1);
  await cache.get(key('b'), source('b')); // over the cap, but 'a' is held
  t.deepEqual(compiler.disposed, [], 'a held entry is not evicted');
  for (let i = 0; i < 4; i++) leases[i].release();
  t.deepEqual(compiler.disposed, [], 'still held by the last lease');
  leases[4].release();
  leases[4].release(); // idempotent
  t.deepEqual(compiler.disposed, ['program a'], 'evicted on the last release');
  t.equal(cache.counters().evictions, 1);
  t.end();
});

test('LRU eviction order and disposal (entry cap)', async (t) => {
  const compiler = fakeCompiler({ delayMs: 0 });
  const cache = new JitCache(compiler, { disk: false, maxEntries: 2 });
  await cache.get(key('a'), source('a'));
  await cache.get(key('b'), source('b'));
  await cache.get(key('a'), source('a')); // a becomes most recent
  await cache.get(key('c'), source('c'));
  t.deepEqual(compiler.disposed, ['program b'], 'the least recently used (b) goes first');
  t.deepEqual(cache.keys(), [jitKeyString(key('a')), jitKeyString(key('c'))], 'recency order, oldest first');
  await cache.get(key('d'), source('d'));
  t.deepEqual(compiler.disposed, ['program b', 'program a']);
  t.ok(!cache.has(key('a')) && cache.has(key('c')) && cache.has(key('d')));
  t.equal(cache.counters().evictions, 2);
  await cache.get(key('a'), source('a'));
  t.equal(compiler.compiled.filter((x) => x === 'program a').length, 2, 'an evicted key compiles again');
  t.end();
});

test('byte cap with a caller size estimate', async (t) => {
  const compiler = fakeCompiler({ delayMs: 0 });
  const cache = new JitCache(compiler, { disk: false, maxBytes: 250, sizeOf: () => 100 });
  await cache.get(key('a'), source('a'));
  await cache.get(key('b'), source('b'));
  t.equal(cache.counters().bytes, 200);
  await cache.get(key('c'), source('c'));
  t.deepEqual(compiler.disposed, ['program a'], '300 > 250: the oldest goes');
  t.equal(cache.counters().bytes, 200);
  t.equal(cache.counters().entries, 2);
  t.end();
});

test('byte cap with the serialized size as the estimate', async (t) => {
  const compiler = fakeCompiler({ delayMs: 0 });
  // 'EXE:program x' is 13 bytes; two fit in 30, three do not.
  const cache = new JitCache(compiler, { disk: false, maxBytes: 30 });
  await cache.get(key('a'), source('a'));
  await cache.get(key('b'), source('b'));
  t.equal(cache.counters().bytes, 26);
  await cache.get(key('c'), source('c'));
  t.deepEqual(compiler.disposed, ['program a']);
  t.end();
});

test('an executable in use is not disposed until released', async (t) => {
  const compiler = fakeCompiler({ delayMs: 1 });
  const cache = new JitCache(compiler, { disk: false, maxEntries: 1 });
  const result = await cache.use(key('a'), source('a'), async (executable) => {
    // Other requests churn the cache while 'a' executes.
    await cache.get(key('b'), source('b'));
    await cache.get(key('c'), source('c'));
    t.notOk(executable.disposed, 'still alive while in use');
    return executable.text;
  });
  t.equal(result, 'program a', 'use() returns the callback result');
  t.ok(compiler.disposed.includes('program a'), 'disposed once released and over the cap');
  t.ok(compiler.disposed.includes('program b'), 'unheld entries were evicted meanwhile');
  // A throwing callback still releases.
  const lease = await cache.acquire(key('d'), source('d'));
  await cache
    .use(key('d'), source('d'), () => {
      throw new Error('boom');
    })
    .catch(() => undefined);
  t.notOk(lease.executable.disposed, 'the other lease still holds d');
  lease[Symbol.dispose]();
  t.end();
});

test('a failed compile rejects every waiter and is not cached', async (t) => {
  let broken = true;
  const compiler = fakeCompiler({ delayMs: 10, fail: () => broken });
  const cache = new JitCache(compiler, { disk: false });
  const outcomes = await Promise.allSettled(Array.from({ length: 4 }, () => cache.get(key('a'), source('a'))));
  t.ok(
    outcomes.every((o) => o.status === 'rejected' && o.reason.message === 'compile failed: program a'),
    'all waiters rejected with the compile error',
  );
  t.equal(compiler.compiled.length, 1, 'one compile attempt');
  t.notOk(cache.has(key('a')), 'nothing cached');
  t.equal(cache.counters().inFlight, 0, 'no flight left behind');
  broken = false;
  const executable = await cache.get(key('a'), source('a'));
  t.equal(executable.text, 'program a', 'the next lookup compiles again and succeeds');
  t.equal(compiler.compiled.length, 2);
  t.end();
});

test('a failing program source is not cached either', async (t) => {
  const compiler = fakeCompiler();
  const cache = new JitCache(compiler, { disk: false });
  const throwingSource = () => {
    throw new Error('no builder');
  };
  await rejectsWith(t, cache.get(key('a'), throwingSource), /no builder/);
  await rejectsWith(
    t,
    cache.get(key('a'), () => ''),
    /returned no program text/,
  );
  t.equal(cache.counters().inFlight, 0);
  t.equal(compiler.compiled.length, 0);
  t.ok(await cache.get(key('a'), source('a')));
  t.end();
});

test('disk cache: a second cache instance compiles nothing', async (t) => {
  const dir = tmpDir();
  const first = fakeCompiler();
  const cacheA = new JitCache(first, { disk: dir });
  t.equal(cacheA.diskDirectory, dir);
  for (const name of ['a', 'b', 'c']) await cacheA.get(key(name), source(name));
  await cacheA.flush();
  t.equal(cacheA.counters().diskWrites, 3);
  const files = fs.readdirSync(dir).sort();
  t.equal(files.length, 3, 'three files');
  t.ok(
    files.every((f) => /^[0-9a-f]{64}\.exe$/.test(f)),
    'named by sha256, no temporary files left',
  );
  t.ok(files.includes(`${executableKey('fake-1.0', 'program a')}.exe`), 'the name is sha256(namespace, program text)');

  const second = fakeCompiler();
  const cacheB = new JitCache(second, { disk: dir });
  for (const name of ['a', 'b', 'c']) t.equal((await cacheB.get(key(name), source(name))).text, `program ${name}`);
  t.equal(second.compiled.length, 0, 'nothing compiled');
  t.equal(second.deserialized, 3);
  t.equal(cacheB.counters().diskHits, 3);
  t.equal(cacheB.counters().compiles, 0);

  const otherPlugin = fakeCompiler({ namespace: 'fake-2.0' });
  const cacheC = new JitCache(otherPlugin, { disk: dir });
  await cacheC.get(key('a'), source('a'));
  t.equal(otherPlugin.compiled.length, 1, 'another plugin version never loads these files');
  await cacheC.flush();
  fs.rmSync(dir, { recursive: true, force: true });
  t.end();
});

test('disk cache: corrupt and unloadable files are tolerated and removed', async (t) => {
  const dir = tmpDir();
  const cacheA = new JitCache(fakeCompiler(), { disk: dir });
  for (const name of ['a', 'b', 'c']) await cacheA.get(key(name), source(name));
  await cacheA.flush();
  const file = (name) => path.join(dir, `${executableKey('fake-1.0', `program ${name}`)}.exe`);
  // a: truncated; b: one payload byte flipped; c: intact.
  fs.truncateSync(file('a'), 20);
  const bytes = fs.readFileSync(file('b'));
  bytes[bytes.length - 1] ^= 0xff;
  fs.writeFileSync(file('b'), bytes);

  const warn = collector();
  const compiler = fakeCompiler();
  const cacheB = new JitCache(compiler, { disk: dir, warn });
  for (const name of ['a', 'b', 'c']) t.equal((await cacheB.get(key(name), source(name))).text, `program ${name}`);
  t.deepEqual(compiler.compiled.sort(), ['program a', 'program b'], 'the corrupt ones are recompiled');
  t.equal(compiler.deserialized, 1, 'only the intact one was handed to the deserializer');
  t.equal(
    warn.messages.filter((m) => /removing corrupt cached executable/.test(m)).length,
    2,
    'one warning per corrupt file',
  );
  await cacheB.flush();
  t.equal(fs.readdirSync(dir).length, 3, 'recompiled entries were written back');

  // Bytes that pass the checksum but that the plugin refuses: recompile, count, rewrite.
  const refusing = fakeCompiler();
  refusing.deserialize = async () => {
    throw new Error('incompatible executable');
  };
  const warn2 = collector();
  const cacheC = new JitCache(refusing, { disk: dir, warn: warn2 });
  t.equal((await cacheC.get(key('c'), source('c'))).text, 'program c');
  t.equal(refusing.compiled.length, 1, 'fell back to compiling');
  t.equal(cacheC.counters().diskErrors, 1);
  t.match(warn2.messages[0], /did not load \(incompatible executable\); recompiling/);
  await cacheC.flush();
  fs.rmSync(dir, { recursive: true, force: true });
  t.end();
});

test('disk cache: an unusable directory never breaks compiling', async (t) => {
  const dir = tmpDir();
  const blocker = path.join(dir, 'not-a-dir');
  fs.writeFileSync(blocker, 'x'); // the cache directory path is a file: mkdir and writes fail
  const warn = collector();
  const compiler = fakeCompiler();
  const cache = new JitCache(compiler, { disk: path.join(blocker, 'executables'), warn });
  t.equal((await cache.get(key('a'), source('a'))).text, 'program a');
  await cache.flush();
  t.equal(cache.counters().diskWrites, 0);
  t.ok(
    warn.messages.some((m) => /could not write cached executable/.test(m)),
    'a warning, not an error',
  );
  // A directory where a cache file should be: unreadable, ignored.
  const dir2 = tmpDir();
  fs.mkdirSync(path.join(dir2, `${executableKey('fake-1.0', 'program a')}.exe`));
  const cache2 = new JitCache(fakeCompiler(), { disk: dir2, warn });
  t.equal((await cache2.get(key('a'), source('a'))).text, 'program a');
  await cache2.flush();
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(dir2, { recursive: true, force: true });
  t.end();
});

test('the default disk directory is <cacheDir>/executables/<namespace>', (t) => {
  const saved = process.env.PJRT_SCORE_CACHE;
  process.env.PJRT_SCORE_CACHE = '/tmp/pjrt-score-cache-test';
  try {
    const cache = new JitCache(fakeCompiler({ namespace: 'cpu-0.0.1 (build 7)' }));
    t.equal(cache.diskDirectory, path.join('/tmp/pjrt-score-cache-test', 'executables', 'cpu-0.0.1_build_7_'));
    const noSerialize = fakeCompiler();
    delete noSerialize.serialize;
    t.equal(new JitCache(noSerialize).diskDirectory, null, 'off when the compiler cannot serialize');
    t.throws(
      () => new JitCache(noSerialize, { disk: '/tmp/x' }),
      TypeError,
      'asking for disk without serialize is an error',
    );
  } finally {
    if (saved === undefined) delete process.env.PJRT_SCORE_CACHE;
    else process.env.PJRT_SCORE_CACHE = saved;
  }
  t.end();
});

test('warmup: compiles the list with a progress report', async (t) => {
  const dir = tmpDir();
  const compiler = fakeCompiler();
  const cache = new JitCache(compiler, { disk: dir });
  const lines = [];
  const stream = { isTTY: false, write: (s) => lines.push(s) };
  const events = [];
  const items = ['a', 'b', 'c'].map((name) => ({ key: key(name), source: source(name) }));
  const result = await cache.warmup(items, { progress: stream, onProgress: (p) => events.push(p) });
  t.equal(result.total, 3);
  t.equal(result.compiled, 3);
  t.deepEqual(
    events.map((e) => [e.done, e.total, e.source]),
    [
      [1, 3, 'compile'],
      [2, 3, 'compile'],
      [3, 3, 'compile'],
    ],
  );
  t.equal(lines.length, 4, 'not a TTY: one plain line per program plus a summary');
  t.match(lines[0], /^warmup 1\/3 a\|m\|T=64 compiled \(\d+\.\ds\)\n$/);
  t.match(lines[3], /^warmup 3 programs in \d+\.\ds: 3 compiled, 0 from disk, 0 cached\n$/);
  t.notOk(lines.join('').includes('\r'), 'no carriage returns in logs');

  const again = await cache.warmup(items, { progress: false });
  t.equal(again.alreadyCached, 3, 'a second warmup finds everything in memory');
  await cache.flush();

  const fresh = new JitCache(fakeCompiler(), { disk: dir });
  const tty = [];
  const fromDisk = await fresh.warmup(items, { progress: { isTTY: true, columns: 60, write: (s) => tty.push(s) } });
  t.equal(fromDisk.fromDisk, 3, 'a restart warms from disk');
  t.ok(
    tty.slice(0, 3).every((s) => s.startsWith('\r\x1b[K') && !s.includes('\n') && s.length <= 60 + 4),
    'a TTY gets one redrawn line',
  );
  t.match(tty[0], /^\r\x1b\[Kwarmup \[#{8}\.{16}\] 1\/3 /);
  t.equal(tty[3], '\n', 'the bar line is ended');
  t.match(tty[4], /3 from disk/);
  fs.rmSync(dir, { recursive: true, force: true });
  t.end();
});

test('warmup: tries everything, then reports the failures', async (t) => {
  const compiler = fakeCompiler({ fail: (text) => text === 'program b' });
  const cache = new JitCache(compiler, { disk: false });
  const items = ['a', 'b', 'c'].map((name) => ({ key: key(name), source: source(name) }));
  const sources = [];
  try {
    await cache.warmup(items, { progress: false, onProgress: (p) => sources.push(p.source) });
    t.fail('should throw');
  } catch (error) {
    t.match(error.message, /^warmup failed for 1 of 3 programs: b\|m\|T=64 \(compile failed: program b\)$/);
    t.equal(error.failures.length, 1);
  }
  t.deepEqual(sources, ['compile', 'failed', 'compile']);
  t.ok(cache.has(key('a')) && cache.has(key('c')), 'the others are warm');
  t.end();
});

test('warmup warns when the list does not fit in the cache', async (t) => {
  const warn = collector();
  const cache = new JitCache(fakeCompiler({ delayMs: 0 }), { disk: false, maxEntries: 2, warn });
  const items = ['a', 'b', 'c'].map((name) => ({ key: key(name), source: source(name) }));
  await cache.warmup(items, { progress: false });
  t.match(warn.messages[0], /warmup has 3 programs but the JIT cache keeps at most 2/);
  t.end();
});

test('dispose: idle entries now, held ones on release, no lookups after', async (t) => {
  const compiler = fakeCompiler({ delayMs: 5 });
  const cache = new JitCache(compiler, { disk: false });
  await cache.get(key('a'), source('a'));
  const lease = await cache.acquire(key('b'), source('b'));
  const inFlight = cache.get(key('c'), source('c'));
  cache.dispose();
  cache.dispose(); // idempotent
  t.deepEqual(compiler.disposed, ['program a'], 'idle entry disposed at once');
  lease.release();
  t.deepEqual(compiler.disposed, ['program a', 'program b'], 'held entry disposed on release');
  await rejectsWith(t, inFlight, /disposed while loading/, 'a load in flight is rejected');
  t.ok(compiler.disposed.includes('program c'), 'and its executable disposed');
  await rejectsWith(t, cache.get(key('a'), source('a')), /JitCache is disposed/);
  t.equal(compiler.disposed.length, 3, 'nothing disposed twice (the fake throws on double dispose)');
  t.end();
});

test('a dispose error is a warning, not a crash', async (t) => {
  const warn = collector();
  const compiler = fakeCompiler({ delayMs: 0 });
  compiler.dispose = () => {
    throw new Error('native said no');
  };
  const cache = new JitCache(compiler, { disk: false, maxEntries: 1, warn });
  await cache.get(key('a'), source('a'));
  await cache.get(key('b'), source('b'));
  t.match(warn.messages[0], /disposing the executable for a\|m\|T=64 failed: native said no/);
  t.end();
});

test('constructor checks', (t) => {
  t.throws(() => new JitCache({}), TypeError);
  t.throws(() => new JitCache({ ...fakeCompiler(), cacheNamespace: '' }), TypeError);
  t.throws(() => new JitCache(fakeCompiler(), { disk: false, maxEntries: 0 }), RangeError);
  t.throws(() => new JitCache(fakeCompiler(), { disk: false, maxBytes: 0 }), RangeError);
  t.end();
});
