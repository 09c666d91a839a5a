'use strict';
// Byte-level mutations in the manner of libFuzzer's MutationDispatcher: bit
// flips, random and "interesting" bytes and integers (little-endian 1/2/4/8
// bytes: header counts and lengths live there), erase, insert, duplicate,
// cross-over with another corpus input, dictionary words (format keywords),
// and rewriting ASCII numbers (JSON and MLIR carry theirs as text).

const INTERESTING = [
  0n,
  1n,
  2n,
  3n,
  4n,
  7n,
  8n,
  16n,
  32n,
  64n,
  100n,
  127n,
  128n,
  255n,
  256n,
  1000n,
  1024n,
  4096n,
  32767n,
  32768n,
  65535n,
  65536n,
  0x7fffffffn,
  0x80000000n,
  0xffffffffn,
  0x100000000n,
  0x1fffffffffffffn,
  0x7fffffffffffffffn,
  0x8000000000000000n,
  0xffffffffffffffffn,
];
const NUMBER_TEXT = [
  '0',
  '-1',
  '1',
  '2',
  '65535',
  '4294967296',
  '9007199254740993',
  '1e309',
  '-0',
  '0.5',
  'NaN',
  '1e-7',
  '99999999999999999999',
];

function mutateOnce(data, { random, other, dictionary }) {
  const int = (n) => Math.floor(random() * n);
  const at = () => int(Math.max(1, data.length));
  switch (int(11)) {
    case 0: {
      // flip a bit
      if (data.length === 0) return Buffer.from([int(256)]);
      const out = Buffer.from(data);
      out[at()] ^= 1 << int(8);
      return out;
    }
    case 1: {
      // set a byte
      if (data.length === 0) return Buffer.from([int(256)]);
      const out = Buffer.from(data);
      out[at()] = int(256);
      return out;
    }
    case 2: {
      // an interesting integer, little-endian, 1/2/4/8 bytes, overwriting
      const width = [1, 2, 4, 8][int(4)];
      if (data.length < width) return data;
      const out = Buffer.from(data);
      const value = INTERESTING[int(INTERESTING.length)] & ((1n << BigInt(8 * width)) - 1n);
      const offset = int(data.length - width + 1);
      for (let i = 0; i < width; i++) out[offset + i] = Number((value >> BigInt(8 * i)) & 0xffn);
      return out;
    }
    case 3: {
      // erase a range
      if (data.length < 2) return data;
      const start = at();
      const length = 1 + int(Math.min(data.length - start, 64));
      return Buffer.concat([data.subarray(0, start), data.subarray(start + length)]);
    }
    case 4: {
      // insert random bytes
      const bytes = Buffer.from(Array.from({ length: 1 + int(8) }, () => int(256)));
      const p = int(data.length + 1);
      return Buffer.concat([data.subarray(0, p), bytes, data.subarray(p)]);
    }
    case 5: {
      // duplicate a range (repetition reaches deep nesting and long runs)
      if (data.length === 0) return data;
      const start = at();
      const length = 1 + int(Math.min(data.length - start, 32));
      const piece = data.subarray(start, start + length);
      const copies = 1 + int(random() < 0.1 ? 200 : 4);
      return Buffer.concat([data.subarray(0, start), ...Array(copies).fill(piece), data.subarray(start)]);
    }
    case 6: {
      // cross-over: splice a piece of another input in
      if (!other || other.length === 0) return data;
      const start = int(other.length);
      const piece = other.subarray(start, start + 1 + int(Math.min(other.length - start, 128)));
      const p = int(data.length + 1);
      return random() < 0.5
        ? Buffer.concat([data.subarray(0, p), piece, data.subarray(p)])
        : Buffer.concat([data.subarray(0, p), piece, data.subarray(Math.min(data.length, p + piece.length))]);
    }
    case 7:
    case 8: {
      // a dictionary word, inserted or overwriting
      if (dictionary.length === 0) return data;
      const word = dictionary[int(dictionary.length)];
      const p = int(data.length + 1);
      return random() < 0.5
        ? Buffer.concat([data.subarray(0, p), word, data.subarray(p)])
        : Buffer.concat([data.subarray(0, p), word, data.subarray(Math.min(data.length, p + word.length))]);
    }
    case 9: {
      // rewrite an ASCII number
      const text = data.toString('latin1');
      const numbers = [...text.matchAll(/-?\d+(\.\d+)?(e-?\d+)?/g)];
      if (numbers.length === 0) return data;
      const m = numbers[int(numbers.length)];
      const replacement = NUMBER_TEXT[int(NUMBER_TEXT.length)];
      return Buffer.concat([
        data.subarray(0, m.index),
        Buffer.from(replacement, 'latin1'),
        data.subarray(m.index + m[0].length),
      ]);
    }
    default: {
      // truncate
      if (data.length < 2) return data;
      return data.subarray(0, at());
    }
  }
}

/** A mutated copy of `data`: 1 to 5 stacked mutations, at most `maxLength` bytes. */
function mutate(data, options) {
  let out = data;
  const n = 1 + Math.floor(options.random() * 5);
  for (let i = 0; i < n; i++) out = mutateOnce(out, options);
  if (out.length > options.maxLength) out = out.subarray(0, options.maxLength);
  return out === data ? Buffer.from(data) : out;
}

module.exports = { mutate };
