/**
 * Weight arrays decoded on the device from the file's own blocks. A GGUF
 * matrix (F32, F16, BF16, Q8_0, Q4_0, Q4_1) is uploaded as the bytes the
 * file stores, and one program per device array turns them into what the
 * decoder programs take, in the weight type asked for: dequantized,
 * transposed into [in, out] columns, parts fused side by side, stacked over
 * layers, and for bf16 rounded to nearest even, for int8 re-quantized in
 * blocks of INT8_BLOCK. The host never builds an f32 copy (a Q4_1 weight is
 * 0.625 bytes read instead of 4 built, transposed and staged) and the work
 * runs on every core the device has. Each step is the host path's rule
 * (model/dequantize.ts, convert.ts) written in StableHLO, so the arrays are
 * bit-equal to the host path's (test/weights-precision.test.js).
 */
import { FunctionBuilder } from '../hlo/builder';
import { HloValue } from '../hlo/core';
import { DecoderWeightSpec, INT8_BLOCK, WeightType } from '../hlo/decoder-layout';
import { buildProgram, HloProgram } from '../hlo/program';
import { TensorType } from '../hlo/types';
import { GgmlType, ggmlTypeName } from '../model/gguf-types';

/** The stored types a decode program reads. */
export const DEVICE_DECODED_TYPES: ReadonlySet<GgmlType> = new Set([GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_1]);

/** One source matrix of a device array, as stored: [rows, rowLength] elements in rows of rowBytes bytes. */
export interface StoredPart {
  readonly type: GgmlType;
  readonly rows: number;
  readonly rowLength: number;
  readonly rowBytes: number;
}

/** u8 [..., 2] little-endian half bits -> f32 [...]: exact, as the host's table. */
function halfAt(f: FunctionBuilder, bytes: HloValue, at: number): HloValue {
  const bits = littleEndian(f, bytes, at, 2, 'u16');
  return f.convert(f.bitcastConvert(bits, 'f16'), 'f32');
}

/** The `width`-byte little-endian integers at byte `at` of the last axis (which they consume). */
function littleEndian(f: FunctionBuilder, bytes: HloValue, at: number, width: 2 | 4, type: 'u16' | 'u32'): HloValue {
  const dims = bytes.dims.slice(0, -1);
  let value: HloValue | undefined;
  for (let k = 0; k < width; k++) {
    const byte = f.reshape(sliceLast(f, bytes, at + k, at + k + 1), dims);
    const shifted = k === 0 ? f.convert(byte, type) : f.shiftLeft(f.convert(byte, type), 8 * k);
    value = value ? f.or(value, shifted) : shifted;
  }
  return value!;
}

function sliceLast(f: FunctionBuilder, x: HloValue, from: number, to: number): HloValue {
  const last = x.rank - 1;
  return f.slice(x, x.dims.map((_, i) => (i === last ? from : 0)), x.dims.map((d, i) => (i === last ? to : d)));
}

/** The 32 4-bit values of a Q4 block's 16 bytes [..., 16]: low nibbles are elements 0..15, high nibbles 16..31. */
function nibbles(f: FunctionBuilder, bytes: HloValue): HloValue {
  const low = f.and(bytes, 15);
  // Unsigned division by 16 is the logical shift right by 4.
  const high = f.divide(bytes, 16);
  return f.convert(f.concatenate([low, high], bytes.rank - 1), 'f32');
}

/** Raw rows u8 [L, rows, rowBytes] -> f32 [L, rows, rowLength], the host dequantizer's values. */
function dequantizeRows(f: FunctionBuilder, raw: HloValue, part: StoredPart): HloValue {
  const [layers, rows] = raw.dims;
  const out = [layers, rows, part.rowLength];
  const blocks = (bytesPerBlock: number): HloValue => f.reshape(raw, [layers, rows, part.rowLength / 32, bytesPerBlock]);
  const scaled = (q: HloValue, d: HloValue): HloValue => f.multiply(q, f.broadcastInDim(d, q.dims, [0, 1, 2]));
  switch (part.type) {
    case GgmlType.F32:
      return f.bitcastConvert(littleEndian(f, f.reshape(raw, [...out, 4]), 0, 4, 'u32'), 'f32');
    case GgmlType.F16:
      return halfAt(f, f.reshape(raw, [...out, 2]), 0);
    case GgmlType.BF16:
      // bf16 is the top half of an f32.
      return f.bitcastConvert(f.shiftLeft(littleEndian(f, f.reshape(raw, [...out, 2]), 0, 2, 'u32'), 16), 'f32');
    case GgmlType.Q8_0: {
      // 34 bytes: f16 d, then 32 int8 q; value = q * d.
      const b = blocks(34);
      const q = f.convert(f.bitcastConvert(sliceLast(f, b, 2, 34), 's8'), 'f32');
      return f.reshape(scaled(q, halfAt(f, b, 0)), out);
    }
    case GgmlType.Q4_0: {
      // 18 bytes: f16 d, 16 bytes of nibbles; value = (q - 8) * d.
      const b = blocks(18);
      return f.reshape(scaled(f.subtract(nibbles(f, sliceLast(f, b, 2, 18)), 8), halfAt(f, b, 0)), out);
    }
    case GgmlType.Q4_1: {
      // 20 bytes: f16 d, f16 m, 16 bytes of nibbles; value = q * d + m (q * d is exact in f32).
      const b = blocks(20);
      const q = scaled(nibbles(f, sliceLast(f, b, 4, 20)), halfAt(f, b, 0));
      return f.reshape(f.add(q, f.broadcastInDim(halfAt(f, b, 2), q.dims, [0, 1, 2])), out);
    }
    default:
      throw new RangeError(`decode: ${ggmlTypeName(part.type)} is not decoded on the device`);
  }
}

/** f32 -> bf16 bits (u16), round to nearest even; NaN stays NaN (quiet): convert.ts's f32ToBf16. */
function bf16Bits(f: FunctionBuilder, x: HloValue): HloValue {
  const bits = f.bitcastConvert(x, 'u32');
  const high = f.divide(bits, 0x10000);
  const rounded = f.divide(f.add(f.add(bits, 0x7fff), f.and(high, 1)), 0x10000);
  const nan = f.gt(f.and(bits, 0x7fffffff), 0x7f800000);
  return f.convert(f.select(nan, f.or(high, 0x40), rounded), 'u16');
}

/**
 * f32 [L, rows, n] -> int8 blocks along the last axis: convert.ts's
 * quantizeBlocksInt8, with the division and rounding in f64 as JavaScript
 * does them. Returns q s8 [L, rows, n] and scales f32 [L, rows, n / B].
 */
function int8Blocks(f: FunctionBuilder, x: HloValue): { q: HloValue; scales: HloValue } {
  const [layers, rows, n] = x.dims;
  const blocked = [layers, rows, n / INT8_BLOCK, INT8_BLOCK];
  const values = f.reshape(x, blocked);
  const max = f.reduceMax(f.abs(values), [3]);
  const scales = f.convert(f.divide(f.convert(max, 'f64'), 127), 'f32');
  const scale64 = f.broadcastInDim(f.convert(scales, 'f64'), blocked, [0, 1, 2]);
  const ratio = f.divide(f.convert(values, 'f64'), scale64);
  const away = f.select(f.lt(ratio, 0), f.negate(f.floor(f.add(f.negate(ratio), 0.5))), f.floor(f.add(ratio, 0.5)));
  const clamped = f.clamp(-127, away, 127);
  // A zero block has scale 0 (and 0 / 0 above): its values are 0.
  const q = f.select(f.eq(scale64, 0), 0, clamped);
  return { q: f.reshape(f.convert(q, 's8'), [layers, rows, n]), scales };
}

/** What a decode program returns: the array, and for int8 its scales. */
interface Stored {
  data: HloValue;
  scales?: HloValue;
}

/** f32 rows [L, rows, n] in the weight type's storage (still rows: the layout comes after). */
function store(f: FunctionBuilder, x: HloValue, type: WeightType): Stored {
  if (type === 'f32') return { data: x };
  if (type === 'bf16') return { data: bf16Bits(f, x) };
  const { q, scales } = int8Blocks(f, x);
  return { data: q, scales };
}

/**
 * The program that builds `spec` (layers [from, from + layers) of a
 * per-layer array, or a whole [V, Dm] table) from its parts' raw rows:
 * inputs u8 [layers, rows, rowBytes] per part (a table: one "layer"),
 * outputs the array in the spec's element type and, for int8, its scales.
 */
export function decodeProgram(spec: DecoderWeightSpec, parts: readonly StoredPart[], type: WeightType, layers: number): HloProgram {
  const types = parts.map((p) => ggmlTypeName(p.type)).join('_');
  return buildProgram(`decode_${spec.name}_${type}_l${layers}_${types}`, (f) => {
    const raw = parts.map((p, k) => f.param(new TensorType('u8', [layers, p.rows, p.rowBytes]), `part${k}`));
    const stored = parts.map((p, k) => store(f, dequantizeRows(f, raw[k], p), type));
    if (!spec.perLayer) {
      // A [V, Dm] table keeps the file's orientation.
      const [only] = stored;
      const drop = (v: HloValue): HloValue => f.reshape(v, v.dims.slice(1));
      return { data: drop(only.data), ...(only.scales ? { scales: drop(only.scales) } : {}) };
    }
    // Hugging Face [out, in] rows become the columns of the [in, width] slice, parts side by side.
    const columns = (vs: HloValue[]): HloValue => f.concatenate(vs.map((v) => f.transpose(v, [0, 2, 1])), 2);
    const data = columns(stored.map((s) => s.data));
    return type === 'int8' ? { data, scales: columns(stored.map((s) => s.scales!)) } : { data };
  });
}
