'use strict';
// Bad input rejects with a clear error and never aborts the process.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { Client, PjrtError, DisposedError } = require('..');

const ADD = `func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.add %a, %b : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}`;

let client;
let exe;
let x;
test('setup', async (t) => {
  client = await Client.create();
  exe = await client.compile(ADD);
  x = await client.upload(new Float32Array(6).fill(1), [2, 3]);
  t.pass('client, executable and buffer ready');
});

async function rejects(t, promiseFn, ErrorClass, pattern, label) {
  try {
    await promiseFn();
    t.fail(`${label}: should have thrown`);
  } catch (err) {
    t.ok(err instanceof ErrorClass, `${label}: ${err.name}`);
    t.match(err.message, pattern, `${label}: "${err.message.split('\n')[0].slice(0, 160)}"`);
    return err;
  }
}

test('invalid MLIR rejects with the parser message', async (t) => {
  const err = await rejects(
    t,
    () => client.compile('func.func @main( this is not mlir'),
    PjrtError,
    /compile: .*error/,
    'garbage',
  );
  t.ok(typeof err.code === 'string' && err.code.length > 0, `code ${err.code}`);
  await rejects(
    t,
    () => client.compile('func.func @main(%a: tensor<2xf32>) -> tensor<3xf32> {\n return %a : tensor<2xf32>\n}'),
    PjrtError,
    /compile:/,
    'type mismatch in program',
  );
  await rejects(t, () => client.compile(''), TypeError, /empty program/, 'empty text');
  await rejects(t, () => client.compile(42), TypeError, /StableHLO text/, 'not a string');
});

test('wrong argument count, dtype or shape', async (t) => {
  await rejects(t, () => exe.execute([x]), RangeError, /expected 2 argument\(s\), got 1/, 'too few');
  await rejects(t, () => exe.execute([x, x, x]), RangeError, /expected 2 argument\(s\), got 3/, 'too many');
  const ints = await client.upload(new Int32Array(6), [2, 3]);
  await rejects(
    t,
    () => exe.execute([x, ints]),
    TypeError,
    /argument 1: expected f32\[2, 3\], got s32\[2, 3\]/,
    'wrong dtype',
  );
  const transposed = await client.upload(new Float32Array(6), [3, 2]);
  await rejects(
    t,
    () => exe.execute([transposed, x]),
    TypeError,
    /argument 0: expected f32\[2, 3\], got f32\[3, 2\]/,
    'wrong shape',
  );
  await rejects(t, () => exe.execute([x, 'nope']), TypeError, /argument 1 is not a DeviceBuffer/, 'not a buffer');
  await rejects(t, () => exe.execute(x), TypeError, /array of DeviceBuffers/, 'not an array');
  ints.dispose();
  transposed.dispose();
});

test('the plugin itself rejects what the signature cannot see', async (t) => {
  // The raw binding has no signature check: the plugin's size check remains.
  const small = await client.upload(new Float32Array(3), [1, 3]);
  const raw = exe.native;
  try {
    await raw.execute([x.native, small.native]);
    t.fail('should reject');
  } catch (err) {
    t.equal(err.code, 'INVALID_ARGUMENT', `plugin says: ${err.message}`);
  }
  small.dispose();
});

test('typed array of the wrong length, unknown dtype, bad dims', async (t) => {
  await rejects(
    t,
    () => client.upload(new Float32Array(5), [2, 3]),
    TypeError,
    /Expected a Float32Array of length 6 for dtype f32 and dims \[2, 3\], got Float32Array of length 5/,
    'wrong length',
  );
  await rejects(
    t,
    () => client.upload(new Int32Array(6), [2, 3], 'f32'),
    TypeError,
    /Expected a Float32Array of length 6.*got Int32Array/,
    'wrong class',
  );
  await rejects(
    t,
    () => client.upload(new Float32Array(6), [2, 3], 'f128'),
    TypeError,
    /unknown dtype "f128"/,
    'unknown dtype',
  );
  await rejects(
    t,
    () => client.upload(new Uint16Array(6), [2, 3]),
    TypeError,
    /give a dtype for a Uint16Array/,
    'ambiguous Uint16Array',
  );
  await rejects(
    t,
    () => client.upload(new Float32Array(6), [2, -3]),
    TypeError,
    /non-negative integers/,
    'negative dim',
  );
  await rejects(
    t,
    () => client.upload(new Float32Array(6), [2, 1.5]),
    TypeError,
    /non-negative integers/,
    'fractional dim',
  );
  await rejects(t, () => client.upload([1, 2, 3], [3]), TypeError, /typed array, got Array/, 'plain array');
  // Found by the fuzz target native-upload: no element, but the extents' product overflows int64 in XLA.
  await rejects(
    t,
    () => client.upload(new Float32Array(0), [2 ** 32, 2 ** 32, 0]),
    TypeError,
    /dims must have a product \(zeros left out\) of at most 2\^53 - 1/,
    'overflowing dims',
  );
  await rejects(
    t,
    () => client.upload(new Float32Array(0), [0, 2 ** 27, 2 ** 27]),
    TypeError,
    /dims must have a product/,
    'overflowing dims after a zero',
  );
  const empty = await client.upload(new Float32Array(0), [2 ** 26, 0, 2 ** 26]);
  t.deepEqual(empty.dims, [2 ** 26, 0, 2 ** 26], 'a zero-element shape whose product fits is accepted');
  empty.dispose();
});

test('the raw binding rejects with instances of the exported error classes', async (t) => {
  // The plugin's own refusal of the fuzzer's input, past the facade.
  const err = await rejects(
    t,
    () => client.native.upload(new Float32Array(0), [2 ** 32, 2 ** 32, 0], 'f32'),
    PjrtError,
    /overflow/,
    'raw upload of overflowing dims',
  );
  t.equal(typeof err.code, 'string', `raw PjrtError has a code (${err.code})`);
  const b = await client.upload(new Float32Array(6), [2, 3]);
  const raw = b.native;
  b.dispose();
  t.throws(
    () => raw.dims,
    (e) => e instanceof DisposedError && /DeviceBuffer has been disposed/.test(e.message),
    'raw disposed buffer throws a DisposedError',
  );
});

test('disposed buffer, executable and client', async (t) => {
  const b = await client.upload(new Float32Array(6), [2, 3]);
  b.dispose();
  b.dispose(); // idempotent
  await rejects(
    t,
    () => exe.execute([x, b]),
    DisposedError,
    /argument 1 \(DeviceBuffer\) has been disposed/,
    'disposed argument',
  );
  await rejects(t, () => b.toHost(), DisposedError, /DeviceBuffer has been disposed/, 'toHost after dispose');
  t.throws(() => b.dims, /DeviceBuffer has been disposed/, 'dims after dispose');
  const e2 = await client.compile(ADD);
  e2[Symbol.dispose]();
  await rejects(t, () => e2.execute([x, x]), DisposedError, /Executable has been disposed/, 'execute after dispose');
  await rejects(t, () => e2.serialize(), DisposedError, /Executable has been disposed/, 'serialize after dispose');
  const c2 = await Client.create();
  const e3 = await c2.compile(ADD);
  const b3 = await c2.upload(new Float32Array(6), [2, 3]);
  await rejects(t, () => e3.execute([x, b3]), TypeError, /belongs to another client/, 'buffer from another client');
  c2.dispose();
  t.ok(e3.disposed && b3.disposed, 'disposing a client disposes its executables and buffers');
  await rejects(t, () => c2.compile(ADD), DisposedError, /Client has been disposed/, 'compile after client dispose');
  await rejects(t, () => b3.toHost(), DisposedError, /has been disposed/, 'child used after client dispose');
});

test('a missing plugin names the fix', async (t) => {
  await rejects(
    t,
    () => Client.create({ plugin: '/nonexistent/plugin.so' }),
    Error,
    /PJRT plugin not found at \/nonexistent\/plugin.so/,
    'missing file',
  );
  await rejects(
    t,
    () => Client.create({ plugin: require('node-gyp-build').resolve(path.join(__dirname, '..')) }),
    PjrtError,
    /not a PJRT plugin: it does not export GetPjrtApi/,
    'not a plugin',
  );
});

// Each snippet abuses the raw binding or the facade in a way that could crash
// a careless addon. It runs in a child process: the child must survive and
// report the error it got.
const ABUSE = {
  'raw upload with lying byte length': `await c.native.upload(new Float32Array(2), [1000000], 'f32')`,
  'raw upload with unknown dtype': `await c.native.upload(new Float32Array(2), [2], 'invalid')`,
  'raw upload with negative dims': `await c.native.upload(new Float32Array(2), [-2], 'f32')`,
  'raw execute with non-buffers': `await (await c.native.compile(ADD)).execute([{}, 1])`,
  'raw execute with wrong sizes': `await (await c.native.compile(ADD)).execute([(await c.native.upload(new Float32Array(1), [1], 'f32'))])`,
  'raw deserialize of garbage': `await c.native.deserialize(new Uint8Array([1, 2, 3, 4]))`,
  'raw compile of non-string': `await c.native.compile({ toString() { throw new Error('x'); } })`,
  'construct native classes directly': `new (require('node-gyp-build')(${JSON.stringify(path.join(__dirname, '..'))}).DeviceBuffer)()`,
  'use after client dispose via raw handle': `const e = await c.native.compile(ADD); c.dispose(); await e.execute([])`,
  'deserialize bytes from our envelope with a corrupt payload': `const e = await c.compile(ADD); const s = await e.serialize(); s.fill(7, s.length - 100); await c.deserialize(s)`,
};

for (const [name, body] of Object.entries(ABUSE)) {
  test(`child process survives: ${name}`, (t) => {
    const script = `
      const { Client } = require(${JSON.stringify(path.join(__dirname, '..'))});
      const ADD = ${JSON.stringify(ADD)};
      (async () => {
        const c = await Client.create();
        try { ${body}; console.log('RESULT no error'); }
        catch (e) { console.log('RESULT ' + (e.name || 'Error') + ': ' + String(e.message).split('\\n')[0]); }
        console.log('ALIVE');
      })();`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 });
    t.equal(r.signal, null, 'no signal');
    t.equal(r.status, 0, 'exit code 0');
    t.match(r.stdout, /ALIVE/, 'process still running after the call');
    const line = (r.stdout.match(/RESULT .*/) || ['RESULT ?'])[0];
    t.doesNotMatch(line, /no error/, line);
    t.end();
  });
}

test('teardown', (t) => {
  client.dispose();
  t.end();
});
