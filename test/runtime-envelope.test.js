'use strict';
// Serialized executables carry a sha256 of the plugin's bytes and a checked
// header. Found by the deserialize fuzz target: a flipped payload byte made
// the CPU plugin abort inside LLVM ("Invalid data was encountered while
// parsing the file"), killing the process. Now every corrupt byte is a
// TypeError before the plugin sees anything, and intact bytes still load.
const test = require('tape');
const { Client } = require('..');
const { prng } = require('./helpers/prng');

const ADD = `func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.add %a, %b : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}`;

// Rebuilds an envelope with a replaced header JSON (same layout as packEnvelope: magic, u32 length, JSON, payload).
function withHeader(bytes, edit) {
  const buf = Buffer.from(bytes);
  const length = buf.readUInt32LE(8);
  const json = Buffer.from(edit(buf.toString('utf8', 12, 12 + length)), 'utf8');
  const out = Buffer.alloc(12 + json.length + buf.length - 12 - length);
  buf.copy(out, 0, 0, 8);
  out.writeUInt32LE(json.length, 8);
  json.copy(out, 12);
  buf.copy(out, 12 + json.length, 12 + length);
  return new Uint8Array(out);
}

async function message(promise) {
  try {
    await promise;
    return 'resolved';
  } catch (e) {
    return `${e.name}: ${e.message}`;
  }
}

test('flipped bytes anywhere in a serialized executable: a TypeError, never the plugin', async (t) => {
  const client = await Client.create();
  const exe = await client.compile(ADD);
  const bytes = await exe.serialize();
  const headerEnd = 12 + Buffer.from(bytes).readUInt32LE(8);
  const random = prng(15);
  let clean = 0;
  const positions = [0, 8, 12, headerEnd - 1, headerEnd, bytes.length - 1];
  for (let i = 0; i < 300; i++) positions.push(random.int(headerEnd, bytes.length - 1));
  for (const at of positions) {
    const corrupt = new Uint8Array(bytes);
    corrupt[at] ^= 1 << random.int(0, 7);
    const got = await message(client.deserialize(corrupt));
    if (/^TypeError: (serialized executable|not a serialized)/.test(got)) clean++;
    else t.fail(`byte ${at}: ${got}`);
  }
  t.equal(clean, positions.length, `${positions.length} single-bit flips (header and payload): each a clear TypeError`);
  const loaded = await client.deserialize(bytes);
  const x = await client.upload(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
  const [sum] = await loaded.execute([x, x]);
  t.deepEqual(Array.from(await sum.toHost()), [2, 4, 6, 8, 10, 12], 'the intact bytes still load and run (x + x)');
  client.dispose();
});

test('a malformed header is a clear error', async (t) => {
  const client = await Client.create();
  const bytes = await (await client.compile(ADD)).serialize();
  const cases = {
    'JSON null': () => 'null',
    'JSON array': () => '[]',
    'platform missing': (h) => JSON.stringify({ ...JSON.parse(h), platform: undefined }),
    'checksum missing': (h) => JSON.stringify({ ...JSON.parse(h), payloadSha256: undefined }),
    'signature junk': (h) =>
      JSON.stringify({ ...JSON.parse(h), signature: { inputs: [{ dtype: 'x', dims: 'no' }], outputs: [] } }),
    'signature null': (h) => JSON.stringify({ ...JSON.parse(h), signature: null }),
  };
  for (const [name, edit] of Object.entries(cases)) {
    t.match(
      await message(client.deserialize(withHeader(bytes, edit))),
      /^TypeError: serialized executable has a corrupt header/,
      name,
    );
  }
  const old = new Uint8Array(bytes);
  Buffer.from('PJRTSCX1', 'latin1').copy(Buffer.from(old.buffer, old.byteOffset), 0);
  t.match(
    await message(client.deserialize(old)),
    /older pjrt-score .*serialize it again/,
    'the format before checksums is named',
  );
  client.dispose();
});
