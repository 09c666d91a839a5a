/*
 * The super-block types of llama.cpp's quantization presets (256 elements a
 * block): Q2_K..Q6_K and IQ4_XS, decoded into f32 exactly as ggml's
 * dequantize_row_* and gguf-py's gguf.quants do. Each sub-block scale is an
 * f16 times a small integer, exact in f32; each value is that scale times
 * the element's quant, minus (for Q2_K, Q4_K, Q5_K) a sub-block minimum,
 * with one f32 rounding at the end. JavaScript computes the product and the
 * difference in f64 and rounds once to f32 on the store: the product is
 * exact, and an f64 difference of two f32 values rounded to f32 is the f32
 * difference (53 >= 2 * 24 + 2 bits), so the values are bit-equal.
 *
 * Element i of a block lives at the bit positions below; the same layout,
 * written with reshapes, is in lib/device-weights/decode-blocks.ts.
 */
import { halfToFloatTable } from './half';
import { IQ4_VALUES } from './gguf-types';

const QK = 256;

/** Q2_K (84 bytes): 16 scale bytes (low nibble scale, high nibble min), 64 bytes of 2-bit quants, f16 d, f16 dmin. */
export function decodeQ2_K(bytes: Uint8Array, out: Float32Array): void {
  const half = halfToFloatTable();
  for (let b = 0, o = 0; o < out.length; b += 84, o += QK) {
    const d = half[bytes[b + 80] | (bytes[b + 81] << 8)];
    const dmin = half[bytes[b + 82] | (bytes[b + 83] << 8)];
    for (let i = 0; i < QK; i++) {
      // i = h * 128 + s * 32 + l: bits 2s..2s+1 of quant byte h * 32 + l; sub-block i / 16.
      const h = i >> 7;
      const s = (i >> 5) & 3;
      const q = (bytes[b + 16 + h * 32 + (i & 31)] >> (2 * s)) & 3;
      const sc = bytes[b + (i >> 4)];
      out[o + i] = d * (sc & 15) * q - dmin * (sc >> 4);
    }
  }
}

/** Q3_K (110 bytes): 32 bytes of high bits, 64 bytes of 2-bit quants, 12 bytes of 6-bit scales, f16 d. */
export function decodeQ3_K(bytes: Uint8Array, out: Float32Array): void {
  const half = halfToFloatTable();
  const scales = new Int8Array(16);
  for (let b = 0, o = 0; o < out.length; b += 110, o += QK) {
    const d = half[bytes[b + 108] | (bytes[b + 109] << 8)];
    for (let k = 0; k < 16; k++) {
      // Low 4 bits: nibble k >> 3 of byte k & 7; high 2 bits: bits 2 * (k >> 2) of byte 8 + (k & 3).
      const low = (bytes[b + 96 + (k & 7)] >> (4 * (k >> 3))) & 15;
      const high = (bytes[b + 104 + (k & 3)] >> (2 * (k >> 2))) & 3;
      scales[k] = (low | (high << 4)) - 32;
    }
    for (let i = 0; i < QK; i++) {
      const low = (bytes[b + 32 + (i >> 7) * 32 + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3;
      // A clear high bit (bit i / 32 of byte i % 32) subtracts 4.
      const high = (bytes[b + (i & 31)] >> (i >> 5)) & 1;
      out[o + i] = d * scales[i >> 4] * (low - (high ? 0 : 4));
    }
  }
}

/** The 6-bit scale and min of sub-block k of a Q4_K / Q5_K block, from the 12 bytes at `at`. */
function scaleMin(bytes: Uint8Array, at: number, k: number): [number, number] {
  if (k < 4) return [bytes[at + k] & 63, bytes[at + 4 + k] & 63];
  const both = bytes[at + 4 + k];
  return [(both & 15) | ((bytes[at + k - 4] >> 2) & 0x30), (both >> 4) | ((bytes[at + k] >> 2) & 0x30)];
}

/**
 * Q4_K (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, 128 bytes of
 * nibbles: element g * 64 + n * 32 + l is nibble n of byte g * 32 + l. Q5_K (176 bytes) puts 32 bytes of fifth
 * bits (bit i / 32 of byte i % 32) before the nibbles.
 */
function decodeQ45_K(bytes: Uint8Array, out: Float32Array, five: boolean): void {
  const half = halfToFloatTable();
  const size = five ? 176 : 144;
  const qs = five ? 48 : 16;
  for (let b = 0, o = 0; o < out.length; b += size, o += QK) {
    const d = half[bytes[b] | (bytes[b + 1] << 8)];
    const dmin = half[bytes[b + 2] | (bytes[b + 3] << 8)];
    for (let k = 0; k < 8; k++) {
      const [sc, m] = scaleMin(bytes, b + 4, k);
      const dl = d * sc;
      const ml = dmin * m;
      const g = k >> 1;
      const shift = 4 * (k & 1);
      for (let l = 0; l < 32; l++) {
        const i = k * 32 + l;
        let q = (bytes[b + qs + g * 32 + l] >> shift) & 15;
        if (five) q |= ((bytes[b + 16 + l] >> k) & 1) << 4;
        out[o + i] = dl * q - ml;
      }
    }
  }
}

export function decodeQ4_K(bytes: Uint8Array, out: Float32Array): void {
  decodeQ45_K(bytes, out, false);
}

export function decodeQ5_K(bytes: Uint8Array, out: Float32Array): void {
  decodeQ45_K(bytes, out, true);
}

/**
 * Q6_K (210 bytes): 128 bytes of low nibbles (element h * 128 + n * 64 + l: nibble n of byte h * 64 + l), 64
 * bytes of high 2-bit pairs (element h * 128 + s * 32 + l: bits 2s of byte 128 + h * 32 + l), 16 int8 scales
 * (one per 16 elements), f16 d; value = d * scale * (q - 32).
 */
export function decodeQ6_K(bytes: Uint8Array, out: Float32Array): void {
  const half = halfToFloatTable();
  for (let b = 0, o = 0; o < out.length; b += 210, o += QK) {
    const d = half[bytes[b + 208] | (bytes[b + 209] << 8)];
    for (let i = 0; i < QK; i++) {
      const h = i >> 7;
      const low = (bytes[b + h * 64 + (i & 63)] >> (4 * ((i >> 6) & 1))) & 15;
      const high = (bytes[b + 128 + h * 32 + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3;
      const scale = (bytes[b + 192 + (i >> 4)] << 24) >> 24;
      // d * scale is exact in f32; the product with q rounds once.
      out[o + i] = d * scale * ((low | (high << 4)) - 32);
    }
  }
}

/**
 * IQ4_XS (136 bytes): f16 d, u16 of high scale bits (2 per sub-block), 4 bytes
 * of low scale nibbles, 128 bytes of IQ4_VALUES indices: element k * 32 + n * 16
 * + l is nibble n of byte k * 16 + l; value = d * (scale - 32) * IQ4_VALUES[q].
 */
export function decodeIQ4_XS(bytes: Uint8Array, out: Float32Array): void {
  const half = halfToFloatTable();
  for (let b = 0, o = 0; o < out.length; b += 136, o += QK) {
    const d = half[bytes[b] | (bytes[b + 1] << 8)];
    const high = bytes[b + 2] | (bytes[b + 3] << 8);
    for (let k = 0; k < 8; k++) {
      const scale = (((bytes[b + 4 + (k >> 1)] >> (4 * (k & 1))) & 15) | (((high >> (2 * k)) & 3) << 4)) - 32;
      const dl = d * scale;
      for (let l = 0; l < 16; l++) {
        const q = bytes[b + 8 + k * 16 + l];
        out[o + k * 32 + l] = dl * IQ4_VALUES[q & 15];
        out[o + k * 32 + 16 + l] = dl * IQ4_VALUES[q >> 4];
      }
    }
  }
}
