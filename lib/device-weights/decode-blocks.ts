/**
 * GGUF blocks -> f32 values in StableHLO, one rule per stored type: the host
 * dequantizer's (model/dequantize.ts, dequantize-k.ts) with the same f32
 * operations in the same order, so the values are bit-equal.
 *
 * Blocks come laid out [N, bytes, R]: the bytes of a block on the middle
 * axis, R blocks side by side on the last (decode.ts puts a matrix's rows
 * there, so every step runs along contiguous memory). A block's bit fields
 * are pulled apart as gguf-py writes them with numpy: a byte range reshaped
 * to [N, groups, L, R], shifted by each of S amounts into [N, groups, S, L, R]
 * and flattened, which lists the elements in the order the block stores them.
 */
import { FunctionBuilder, HloValue, TensorType } from '../hlo';
import { GgmlType, ggmlTypeLayout, ggmlTypeName, IQ4_VALUES } from '../model/gguf-types';

/** Bytes [from, to) of each block: [N, to - from, R]. */
function byteRange(f: FunctionBuilder, blocks: HloValue, from: number, to: number): HloValue {
  const [n, , r] = blocks.dims;
  return f.slice(blocks, [0, from, 0], [n, to, r]);
}

/** The `width`-byte little-endian integers at byte `at` of each block: [N, R]. */
function littleEndian(f: FunctionBuilder, blocks: HloValue, at: number, width: 2 | 4, type: 'u16' | 'u32'): HloValue {
  const [n, , r] = blocks.dims;
  let value: HloValue | undefined;
  for (let k = 0; k < width; k++) {
    const byte = f.convert(f.reshape(byteRange(f, blocks, at + k, at + k + 1), [n, r]), type);
    const shifted = k === 0 ? byte : f.shiftLeft(byte, 8 * k);
    value = value ? f.or(value, shifted) : shifted;
  }
  return value!;
}

/** The f16 at byte `at` of each block, as f32 [N, R] (exact, as the host's table). */
function halfAt(f: FunctionBuilder, blocks: HloValue, at: number): HloValue {
  return f.convert(f.bitcastConvert(littleEndian(f, blocks, at, 2, 'u16'), 'f16'), 'f32');
}

/**
 * Bit fields of bytes [from, to) read as [groups, L] per block: field s of
 * byte (g, l) is (byte >> shifts[s]) & mask, listed g-major, then s, then l:
 * u8 [N, groups * S * L, R].
 */
function fields(
  f: FunctionBuilder,
  blocks: HloValue,
  from: number,
  to: number,
  groups: number,
  shifts: readonly number[],
  mask: number,
): HloValue {
  const [n, , r] = blocks.dims;
  const length = (to - from) / groups;
  const bytes = f.reshape(byteRange(f, blocks, from, to), [n, groups, 1, length, r]);
  const each = shifts.map((s) => f.and(s === 0 ? bytes : f.shiftRightLogical(bytes, s), mask));
  return f.reshape(f.concatenate(each, 2), [n, groups * shifts.length * length, r]);
}

const NIBBLES = [0, 4];
const PAIRS = [0, 2, 4, 6];
const BITS = [0, 1, 2, 3, 4, 5, 6, 7];

function f32(f: FunctionBuilder, x: HloValue): HloValue {
  return f.convert(x, 'f32');
}

/**
 * A per-block value [N, R] or per-sub-block values [N, K, R], repeated over the `elements` of the block: [N, elements,
 * R].
 */
function spread(f: FunctionBuilder, x: HloValue, elements: number): HloValue {
  const [n] = x.dims;
  const r = x.dims[x.rank - 1];
  const k = x.rank === 2 ? 1 : x.dims[1];
  const each = elements / k;
  const wide = f.broadcastInDim(x, [n, k, each, r], x.rank === 2 ? [0, 3] : [0, 1, 3]);
  return f.reshape(wide, [n, elements, r]);
}

/** u8 quants [N, E, R] joined with their high bits: q | (high << 4). */
function withHigh(f: FunctionBuilder, low: HloValue, high: HloValue): HloValue {
  return f.or(low, f.shiftLeft(high, 4));
}

/** IQ4_VALUES[q] for 4-bit indices q [N, E, R], as f32. */
function iq4Values(f: FunctionBuilder, q: HloValue): HloValue {
  const table = f.constant(IQ4_VALUES, new TensorType('f32', [IQ4_VALUES.length]));
  const flat = f.reshape(f.convert(q, 's32'), [q.dims.reduce((a, b) => a * b, 1)]);
  return f.reshape(f.take(table, flat, 0), q.dims);
}

/** Q4_K / Q5_K: the 6-bit scales and mins of the 8 sub-blocks, from the 12 bytes at byte 4: f32 [N, 8, R] each. */
function scalesMins(f: FunctionBuilder, blocks: HloValue): { scales: HloValue; mins: HloValue } {
  const d = byteRange(f, blocks, 4, 8);
  const m = byteRange(f, blocks, 8, 12);
  const both = byteRange(f, blocks, 12, 16);
  const upper = (x: HloValue): HloValue => f.and(f.shiftRightLogical(x, 2), 0x30);
  return {
    scales: f32(f, f.concatenate([f.and(d, 63), f.or(f.and(both, 15), upper(d))], 1)),
    mins: f32(f, f.concatenate([f.and(m, 63), f.or(f.shiftRightLogical(both, 4), upper(m))], 1)),
  };
}

/** Blocks u8 [N, bytes, R] of `type` -> f32 [N, elements, R]. */
function decodeFlat(f: FunctionBuilder, blocks: HloValue, type: GgmlType): HloValue {
  const [n, , r] = blocks.dims;
  const one = (x: HloValue): HloValue => f.reshape(x, [n, 1, r]);
  switch (type) {
    case GgmlType.F32:
      return one(f.bitcastConvert(littleEndian(f, blocks, 0, 4, 'u32'), 'f32'));
    case GgmlType.F16:
      return one(halfAt(f, blocks, 0));
    case GgmlType.BF16:
      // bf16 is the top half of an f32.
      return one(f.bitcastConvert(f.shiftLeft(littleEndian(f, blocks, 0, 2, 'u32'), 16), 'f32'));
    case GgmlType.Q8_0:
      // 34 bytes: f16 d, then 32 int8 q; value = q * d.
      return f.multiply(
        f32(f, f.bitcastConvert(byteRange(f, blocks, 2, 34), 's8')),
        spread(f, halfAt(f, blocks, 0), 32),
      );
    case GgmlType.Q4_0:
      // 18 bytes: f16 d, 16 bytes of nibbles (low: elements 0..15, high: 16..31); value = (q - 8) * d.
      return f.multiply(
        f.subtract(f32(f, fields(f, blocks, 2, 18, 1, NIBBLES, 15)), 8),
        spread(f, halfAt(f, blocks, 0), 32),
      );
    case GgmlType.Q4_1:
      // 20 bytes: f16 d, f16 m, nibbles as Q4_0; value = q * d + m (q * d is exact in f32).
      return f.add(
        f.multiply(f32(f, fields(f, blocks, 4, 20, 1, NIBBLES, 15)), spread(f, halfAt(f, blocks, 0), 32)),
        spread(f, halfAt(f, blocks, 2), 32),
      );
    case GgmlType.Q5_0: {
      // 22 bytes: f16 d, u32 of fifth bits (bit j: element j), nibbles as Q4_0; value = (q - 16) * d.
      const q = withHigh(f, fields(f, blocks, 6, 22, 1, NIBBLES, 15), fields(f, blocks, 2, 6, 4, BITS, 1));
      return f.multiply(spread(f, halfAt(f, blocks, 0), 32), f.subtract(f32(f, q), 16));
    }
    case GgmlType.Q5_1: {
      // 24 bytes: f16 d, f16 m, then as Q5_0; value = q * d + m.
      const q = withHigh(f, fields(f, blocks, 8, 24, 1, NIBBLES, 15), fields(f, blocks, 4, 8, 4, BITS, 1));
      return f.add(f.multiply(spread(f, halfAt(f, blocks, 0), 32), f32(f, q)), spread(f, halfAt(f, blocks, 2), 32));
    }
    case GgmlType.IQ4_NL:
      // 18 bytes: f16 d, nibbles as Q4_0 indexing IQ4_VALUES; value = d * IQ4_VALUES[q].
      return f.multiply(spread(f, halfAt(f, blocks, 0), 32), iq4Values(f, fields(f, blocks, 2, 18, 1, NIBBLES, 15)));
    case GgmlType.Q2_K: {
      // 84 bytes: 16 scale bytes (low nibble: scale, high: min, per
      // 16 elements), 64 bytes of 2-bit quants, f16 d, f16 dmin.
      const sc = byteRange(f, blocks, 0, 16);
      const scale = f.multiply(spread(f, halfAt(f, blocks, 80), 16), f32(f, f.and(sc, 15)));
      const min = f.multiply(spread(f, halfAt(f, blocks, 82), 16), f32(f, f.shiftRightLogical(sc, 4)));
      const q = f32(f, fields(f, blocks, 16, 80, 2, PAIRS, 3));
      return f.subtract(f.multiply(spread(f, scale, 256), q), spread(f, min, 256));
    }
    case GgmlType.Q3_K: {
      // 110 bytes: 32 bytes of high bits, 64 bytes of 2-bit quants, 12 bytes of 6-bit scales (- 32), f16 d;
      // a clear high bit subtracts 4 from the quant.
      const low = fields(f, blocks, 96, 104, 1, NIBBLES, 15);
      const high = fields(f, blocks, 104, 108, 1, PAIRS, 3);
      const scale = f.multiply(spread(f, halfAt(f, blocks, 108), 16), f.subtract(f32(f, withHigh(f, low, high)), 32));
      const hbit = fields(f, blocks, 0, 32, 1, BITS, 1);
      const q = f.subtract(f32(f, fields(f, blocks, 32, 96, 2, PAIRS, 3)), f32(f, f.subtract(4, f.shiftLeft(hbit, 2))));
      return f.multiply(spread(f, scale, 256), q);
    }
    case GgmlType.Q4_K:
    case GgmlType.Q5_K: {
      // f16 d, f16 dmin, 12 bytes of 6-bit scales and mins (8 sub-blocks
      // of 32), [Q5_K: 32 bytes of fifth bits], 128 bytes of nibbles.
      const { scales, mins } = scalesMins(f, blocks);
      const scale = f.multiply(spread(f, halfAt(f, blocks, 0), 8), scales);
      const min = f.multiply(spread(f, halfAt(f, blocks, 2), 8), mins);
      const five = type === GgmlType.Q5_K;
      const low = fields(f, blocks, five ? 48 : 16, five ? 176 : 144, 4, NIBBLES, 15);
      const q = five ? withHigh(f, low, fields(f, blocks, 16, 48, 1, BITS, 1)) : low;
      return f.subtract(f.multiply(spread(f, scale, 256), f32(f, q)), spread(f, min, 256));
    }
    case GgmlType.Q6_K: {
      // 210 bytes: 128 bytes of low nibbles, 64 bytes of high pairs, 16
      // int8 scales (per 16 elements), f16 d; value = d * scale * (q - 32).
      const scale = f.multiply(
        spread(f, halfAt(f, blocks, 208), 16),
        f32(f, f.bitcastConvert(byteRange(f, blocks, 192, 208), 's8')),
      );
      const q = withHigh(f, fields(f, blocks, 0, 128, 2, NIBBLES, 15), fields(f, blocks, 128, 192, 2, PAIRS, 3));
      return f.multiply(spread(f, scale, 256), f.subtract(f32(f, q), 32));
    }
    case GgmlType.IQ4_XS: {
      // 136 bytes: f16 d, u16 of high scale bits (2 per sub-block of 32),
      // 4 bytes of low scale nibbles, 128 bytes of IQ4_VALUES indices.
      const sc = withHigh(f, fields(f, blocks, 4, 8, 4, NIBBLES, 15), fields(f, blocks, 2, 4, 2, PAIRS, 3));
      const scale = f.multiply(spread(f, halfAt(f, blocks, 0), 8), f.subtract(f32(f, sc), 32));
      return f.multiply(spread(f, scale, 256), iq4Values(f, fields(f, blocks, 8, 136, 8, NIBBLES, 15)));
    }
    default:
      throw new RangeError(`decode: ${ggmlTypeName(type)} is not decoded on the device`);
  }
}

/** Blocks u8 [..., bytes, R] -> f32 [..., elements, R], the host dequantizer's values. */
export function dequantizeBlocks(f: FunctionBuilder, blocks: HloValue, type: GgmlType): HloValue {
  const layout = ggmlTypeLayout(type);
  if (!layout) throw new RangeError(`decode: unknown ggml type ${type}`);
  const lead = blocks.dims.slice(0, -2);
  const r = blocks.dims[blocks.rank - 1];
  const n = lead.reduce((a, b) => a * b, 1);
  const values = decodeFlat(f, f.reshape(blocks, [n, layout.bytesPerBlock, r]), type);
  return f.reshape(values, [...lead, layout.blockSize, r]);
}
