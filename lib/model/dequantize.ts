import * as os from 'node:os';
import { decodeIQ4_XS, decodeQ2_K, decodeQ3_K, decodeQ4_K, decodeQ5_K, decodeQ6_K } from './dequantize-k';
import { DEQUANTIZABLE_TYPES, GgmlType, GgufError, IQ4_VALUES, ggmlTypeLayout, ggmlTypeName } from './gguf-types';
import { halfToFloatTable } from './half';

/*
 * ggml tensor data -> Float32Array. Each loop reads bytes straight from the
 * Buffer (no DataView, no per-element calls) because the default model has
 * ~134M quantized weights and loading must take about a second, not ten.
 *
 * Typed-array views reinterpret bytes in host order and GGUF is little-endian,
 * so we refuse to run on a big-endian host rather than return garbage.
 */

function assertLittleEndianHost(): void {
  if (os.endianness() !== 'LE') {
    throw new GgufError('pjrt-score reads GGUF/safetensors data only on little-endian hosts', 'GGUF_UNSUPPORTED');
  }
}

/** Bytes needed for `elementCount` elements of `type`; throws for unknown types or partial blocks. */
export function tensorByteLength(type: number, elementCount: number, what: string): number {
  const layout = ggmlTypeLayout(type);
  if (!layout) throw new GgufError(`${what} has unknown ggml type ${type}`, 'GGUF_UNSUPPORTED');
  if (elementCount % layout.blockSize !== 0) {
    throw new GgufError(
      `${what} has ${elementCount} elements, ` +
        `not a multiple of the ${ggmlTypeName(type)} block size ${layout.blockSize}`,
    );
  }
  return (elementCount / layout.blockSize) * layout.bytesPerBlock;
}

/**
 * Decode `elementCount` elements of `type` from `bytes` into f32.
 * `what` names the tensor in error messages ("GGUF tensor blk.0.attn_q.weight").
 */
export function dequantize(type: GgmlType, bytes: Uint8Array, elementCount: number, what = 'tensor'): Float32Array {
  if (!DEQUANTIZABLE_TYPES.includes(type)) {
    throw new GgufError(
      `${what} has type ${ggmlTypeName(type)} (${type}), which pjrt-score cannot dequantize yet ` +
        `(supported: ${DEQUANTIZABLE_TYPES.map((t) => ggmlTypeName(t)).join(', ')})`,
      'GGUF_UNSUPPORTED',
    );
  }
  const expected = tensorByteLength(type, elementCount, what);
  if (bytes.length < expected) {
    throw new GgufError(`${what}: expected ${expected} bytes of ${ggmlTypeName(type)} data, got ${bytes.length}`);
  }
  assertLittleEndianHost();
  const out = new Float32Array(elementCount);
  switch (type) {
    case GgmlType.F32:
      decodeF32(bytes, out);
      break;
    case GgmlType.F16:
      decodeF16(bytes, out);
      break;
    case GgmlType.BF16:
      decodeBF16(bytes, out);
      break;
    case GgmlType.Q8_0:
      decodeQ8_0(bytes, out);
      break;
    case GgmlType.Q4_0:
      decodeQ4_0(bytes, out);
      break;
    case GgmlType.Q4_1:
      decodeQ4_1(bytes, out);
      break;
    case GgmlType.Q5_0:
      decodeQ5(bytes, out, false);
      break;
    case GgmlType.Q5_1:
      decodeQ5(bytes, out, true);
      break;
    case GgmlType.IQ4_NL:
      decodeIQ4_NL(bytes, out);
      break;
    case GgmlType.Q2_K:
      decodeQ2_K(bytes, out);
      break;
    case GgmlType.Q3_K:
      decodeQ3_K(bytes, out);
      break;
    case GgmlType.Q4_K:
      decodeQ4_K(bytes, out);
      break;
    case GgmlType.Q5_K:
      decodeQ5_K(bytes, out);
      break;
    case GgmlType.Q6_K:
      decodeQ6_K(bytes, out);
      break;
    case GgmlType.IQ4_XS:
      decodeIQ4_XS(bytes, out);
      break;
    default:
      // A type added to DEQUANTIZABLE_TYPES without its decoder.
      throw new RangeError(`dequantize: no decoder for ${ggmlTypeName(type)}`);
  }
  return out;
}

function decodeF32(bytes: Uint8Array, out: Float32Array): void {
  // Copy through a byte view: the source may not be 4-byte aligned.
  new Uint8Array(out.buffer, out.byteOffset, out.length * 4).set(bytes.subarray(0, out.length * 4));
}

function decodeF16(bytes: Uint8Array, out: Float32Array): void {
  const table = halfToFloatTable();
  for (let i = 0, b = 0; i < out.length; i++, b += 2) out[i] = table[bytes[b] | (bytes[b + 1] << 8)];
}

function decodeBF16(bytes: Uint8Array, out: Float32Array): void {
  // bf16 is the top half of an f32: shift the 16 bits into place.
  const bits = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0, b = 0; i < out.length; i++, b += 2) bits[i] = ((bytes[b] | (bytes[b + 1] << 8)) << 16) >>> 0;
}

/** Q8_0 block (34 bytes): f16 scale d, then 32 int8 q; value = q * d. */
function decodeQ8_0(bytes: Uint8Array, out: Float32Array): void {
  const table = halfToFloatTable();
  const blocks = out.length / 32;
  for (let blk = 0, b = 0, o = 0; blk < blocks; blk++, b += 34, o += 32) {
    const d = table[bytes[b] | (bytes[b + 1] << 8)];
    for (let j = 0; j < 32; j++) out[o + j] = ((bytes[b + 2 + j] << 24) >> 24) * d;
  }
}

/** Q4_0's values by nibble: q - 8. */
const Q4_0_VALUES: readonly number[] = Array.from({ length: 16 }, (_, q) => q - 8);

/** Q4_0 block (18 bytes): f16 d, 16 bytes; low nibbles are elements 0..15, high nibbles 16..31; value = (q - 8) * d. */
function decodeQ4_0(bytes: Uint8Array, out: Float32Array): void {
  decodeNibbleTable(bytes, out, Q4_0_VALUES);
}

/** Q4_1 block (20 bytes): f16 d, f16 m, 16 bytes of nibbles laid out as Q4_0; value = q * d + m. */
function decodeQ4_1(bytes: Uint8Array, out: Float32Array): void {
  const table = halfToFloatTable();
  const blocks = out.length / 32;
  for (let blk = 0, b = 0, o = 0; blk < blocks; blk++, b += 20, o += 32) {
    const d = table[bytes[b] | (bytes[b + 1] << 8)];
    const m = table[bytes[b + 2] | (bytes[b + 3] << 8)];
    for (let j = 0; j < 16; j++) {
      const q = bytes[b + 4 + j];
      out[o + j] = (q & 15) * d + m;
      out[o + j + 16] = (q >> 4) * d + m;
    }
  }
}

/**
 * Q5_0 block (22 bytes): f16 d, u32 qh (bit j is the fifth bit of element j), 16 bytes of low nibbles laid
 * out as Q4_0; value = (q - 16) * d. Q5_1 (24 bytes): f16 d, f16 m, then the same; value = q * d + m.
 */
function decodeQ5(bytes: Uint8Array, out: Float32Array, withMin: boolean): void {
  const table = halfToFloatTable();
  const size = withMin ? 24 : 22;
  const blocks = out.length / 32;
  for (let blk = 0, b = 0, o = 0; blk < blocks; blk++, b += size, o += 32) {
    const d = table[bytes[b] | (bytes[b + 1] << 8)];
    const m = withMin ? table[bytes[b + 2] | (bytes[b + 3] << 8)] : 0;
    const h = withMin ? b + 4 : b + 2;
    const qh = (bytes[h] | (bytes[h + 1] << 8) | (bytes[h + 2] << 16) | (bytes[h + 3] << 24)) >>> 0;
    for (let j = 0; j < 16; j++) {
      const q = bytes[h + 4 + j];
      const lo = (q & 15) | (((qh >>> j) & 1) << 4);
      const hi = (q >> 4) | (((qh >>> (j + 16)) & 1) << 4);
      // q * d is exact in f32 (16 significant bits), so one rounding of the sum, as in f32.
      out[o + j] = withMin ? lo * d + m : (lo - 16) * d;
      out[o + j + 16] = withMin ? hi * d + m : (hi - 16) * d;
    }
  }
}

/**
 * IQ4_NL block (18 bytes): f16 d, 16 bytes of nibbles laid out as Q4_0, each an index into IQ4_VALUES; value = d *
 * IQ4_VALUES[q].
 */
function decodeIQ4_NL(bytes: Uint8Array, out: Float32Array): void {
  decodeNibbleTable(bytes, out, IQ4_VALUES);
}

/**
 * An 18-byte block of Q4_0's layout (f16 d, then 16 bytes: low nibbles are
 * elements 0..15, high nibbles 16..31) whose nibble q stands for d * values[q].
 */
function decodeNibbleTable(bytes: Uint8Array, out: Float32Array, values: ArrayLike<number>): void {
  const table = halfToFloatTable();
  const blocks = out.length / 32;
  for (let blk = 0, b = 0, o = 0; blk < blocks; blk++, b += 18, o += 32) {
    const d = table[bytes[b] | (bytes[b + 1] << 8)];
    for (let j = 0; j < 16; j++) {
      const q = bytes[b + 2 + j];
      out[o + j] = d * values[q & 15];
      out[o + j + 16] = d * values[q >> 4];
    }
  }
}
