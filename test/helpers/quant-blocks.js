'use strict';
/**
 * Random GGUF blocks of the quantized types, for decoder tests: the test
 * suite's own table of ggml's block_* structs (elements, bytes, where the
 * f16 scales sit), independent of lib/.
 *
 *   QUANT_BLOCKS: { Q8_0: { elements, bytes, halves }, ... } (the types pjrt-score decodes)
 *   REFUSED_BLOCKS: { IQ2_XS: ... } (one it refuses)
 *   randomQuantBlocks(name, count, random) -> Uint8Array of `count` blocks:
 *     random bytes, each f16 scale finite (an all-ones exponent loses a bit);
 *     block 0 all zero, block 1 all ones but its scales (the largest quants,
 *     the largest finite scale 0x7bff) when there are two blocks or more.
 */
const QUANT_BLOCKS = {
  Q8_0: { elements: 32, bytes: 34, halves: [0] },
  Q4_0: { elements: 32, bytes: 18, halves: [0] },
  Q4_1: { elements: 32, bytes: 20, halves: [0, 2] },
  Q5_0: { elements: 32, bytes: 22, halves: [0] },
  Q5_1: { elements: 32, bytes: 24, halves: [0, 2] },
  Q2_K: { elements: 256, bytes: 84, halves: [80, 82] },
  Q3_K: { elements: 256, bytes: 110, halves: [108] },
  Q4_K: { elements: 256, bytes: 144, halves: [0, 2] },
  Q5_K: { elements: 256, bytes: 176, halves: [0, 2] },
  Q6_K: { elements: 256, bytes: 210, halves: [208] },
  IQ4_NL: { elements: 32, bytes: 18, halves: [0] },
  IQ4_XS: { elements: 256, bytes: 136, halves: [0] },
};

/** A type pjrt-score does not decode, for refusal tests. */
const REFUSED_BLOCKS = { IQ2_XS: { elements: 256, bytes: 74, halves: [0] } };

function randomQuantBlocks(name, count, random) {
  const { bytes, halves } = QUANT_BLOCKS[name] ?? REFUSED_BLOCKS[name];
  const data = new Uint8Array(count * bytes);
  for (let i = 0; i < data.length; i++) data[i] = random.int(0, 255);
  for (let b = 0; b < count; b++) {
    for (const at of halves) {
      const high = b * bytes + at + 1;
      if (((data[high] >> 2) & 31) === 31) data[high] &= ~0x40;
    }
  }
  if (count >= 2) {
    data.fill(0, 0, bytes);
    data.fill(0xff, bytes, 2 * bytes);
    for (const at of halves) data[bytes + at + 1] = 0x7b;
  }
  return data;
}

module.exports = { QUANT_BLOCKS, REFUSED_BLOCKS, randomQuantBlocks };
