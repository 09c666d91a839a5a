'use strict';
// upload(): dims, dtypes and typed arrays decoded from the input, through the
// public API and the raw binding. An accepted upload must read back the same
// bytes (checked against the input array, not against the runtime).
const { reader, scriptsUnder } = require('./common');
const { sharedClient, expected } = require('./native');

const DTYPES = [
  'f32',
  'f16',
  'bf16',
  'f64',
  's8',
  's16',
  's32',
  's64',
  'u8',
  'u16',
  'u32',
  'u64',
  'pred',
  'c64',
  'f8',
  '',
  'F32',
  'f32\u0000',
];
const ARRAYS = [
  Float32Array,
  Float64Array,
  Int8Array,
  Int16Array,
  Int32Array,
  BigInt64Array,
  Uint8Array,
  Uint16Array,
  Uint32Array,
  BigUint64Array,
  Uint8ClampedArray,
  DataView,
];
const SPECIAL_DIMS = [
  0,
  1,
  2,
  3,
  -1,
  -0,
  0.5,
  NaN,
  Infinity,
  2 ** 31,
  2 ** 32,
  2 ** 32 + 1,
  2 ** 53,
  2 ** 63,
  1e300,
  '2',
  null,
  undefined,
];
const MAX_ELEMENTS = 1 << 14;
let client = null;

async function setup() {
  client = await sharedClient();
}

function decode(data) {
  const next = reader(data);
  const raw = next() & 1;
  const dtype = next() < 200 ? DTYPES[next() % DTYPES.length] : undefined;
  const ndims = next() % 70;
  const dims = [];
  for (let i = 0; i < ndims; i++) {
    const b = next();
    dims.push(b < 64 ? SPECIAL_DIMS[b % SPECIAL_DIMS.length] : b % 9);
  }
  const Array_ = ARRAYS[next() % ARRAYS.length];
  const length = ((next() << 8) | next()) % (MAX_ELEMENTS + 1);
  const offset = next() % 4;
  const detach = next() === 255;
  return { raw, dtype, dims, Array_, length, offset, detach, fill: next() };
}

async function run(data) {
  const { raw, dtype, dims, Array_, length, offset, detach, fill } = decode(data);
  const bytesPer = Array_ === DataView ? 1 : Array_.BYTES_PER_ELEMENT;
  const buffer = new ArrayBuffer((length + offset) * bytesPer);
  new Uint8Array(buffer).fill(fill);
  const array =
    Array_ === DataView ? new DataView(buffer, offset, length) : new Array_(buffer, offset * bytesPer, length);
  if (detach) structuredClone(buffer, { transfer: [buffer] });
  const buf = raw ? await client.native.upload(array, dims, dtype) : await client.upload(array, dims, dtype);
  try {
    if (!raw && !detach) {
      const back = await buf.toHost();
      const got = Buffer.from(back.buffer, back.byteOffset, back.byteLength);
      const want = Buffer.from(array.buffer, array.byteOffset, array.byteLength);
      if (!got.equals(want)) throw new Error(`upload then toHost changed the bytes (${dtype} [${dims}])`);
    }
  } finally {
    buf.dispose();
  }
}

module.exports = {
  name: 'native-upload',
  smokeExecs: 1500,
  maxLength: 256,
  scripts: scriptsUnder('dist/runtime/'),
  setup,
  seeds: () => [
    Buffer.from([0, 0, 0, 2, 70, 71, 0, 0, 6, 0, 7]),
    Buffer.from([1, 0, 2, 1, 3, 0, 0, 0, 0]),
    Buffer.from([0, 0, 6, 3, 66, 67, 65, 4, 0, 0, 24, 0]),
  ],
  run,
  expected,
};
