/**
 * Weight arrays decoded on the device from the file's own blocks. A GGUF
 * matrix in a type the host decodes (DEQUANTIZABLE_TYPES: F32, F16, BF16,
 * the legacy Q4/Q5/Q8 blocks, the K-quants, IQ4_NL, IQ4_XS) is uploaded as
 * the bytes the file stores, and one program per device array turns them
 * into what the decoder programs take, in the weight type asked for:
 * dequantized, transposed into [in, out] columns, parts fused side by side,
 * stacked over layers, and for bf16 rounded to nearest even, for int8
 * re-quantized in blocks of INT8_BLOCK. The host never builds an f32 copy (a
 * Q4_1 weight is 0.625 bytes read instead of 4 built, transposed and
 * staged) and the work runs on every core the device has. Each step is the
 * host path's rule (model/dequantize.ts, convert.ts) written in StableHLO
 * (the blocks in decode-blocks.ts), so the arrays are bit-equal to the host
 * path's (test/weights-decode.test.js, test/quant-types.test.js).
 */
import {
  buildProgram,
  DecoderWeightSpec,
  nn,
  FunctionBuilder,
  HloProgram,
  HloValue,
  INT8_BLOCK,
  TensorType,
  WeightType,
} from '../hlo';
import { DEQUANTIZABLE_TYPES, GgmlType, ggmlTypeLayout, ggmlTypeName } from '../model/gguf-types';
import { dequantizeBlocks } from './decode-blocks';

/** The stored types a decode program reads: every type the host decodes. */
export const DEVICE_DECODED_TYPES: ReadonlySet<GgmlType> = new Set(DEQUANTIZABLE_TYPES);

/** One source matrix of a device array, as stored: [rows, rowLength] elements in rows of rowBytes bytes. */
interface StoredPart {
  readonly type: GgmlType;
  readonly rows: number;
  readonly rowLength: number;
  readonly rowBytes: number;
}

/*
 * The decoders (decode-blocks.ts) read blocks laid out [..., bytes, R]: the
 * bytes of a block on the second-to-last axis, R blocks side by side on the
 * last. A layer matrix is decoded with R = its rows (output channels), so
 * every elementwise step runs along contiguous memory and the values come
 * out already transposed ([in, out]); only the raw bytes are transposed,
 * not the f32 values. A [V, Dm] table keeps its orientation (R = 1).
 */

/**
 * f32 values -> int8 in blocks of INT8_BLOCK along `axis` (the input axis):
 * convert.ts's quantizeBlocksInt8, with the division and rounding in f64 as
 * JavaScript does them. Returns q s8 (x's dims) and scales f32 (x's dims with
 * that axis divided by the block).
 */
function int8Blocks(f: FunctionBuilder, x: HloValue, axis: number): { q: HloValue; scales: HloValue } {
  const blocked = [...x.dims.slice(0, axis), x.dims[axis] / INT8_BLOCK, INT8_BLOCK, ...x.dims.slice(axis + 1)];
  const values = f.reshape(x, blocked);
  const scales = f.convert(f.divide(f.convert(f.reduceMax(f.abs(values), [axis + 1]), 'f64'), 127), 'f32');
  const scale64 = f.broadcastInDim(
    f.convert(scales, 'f64'),
    blocked,
    blocked.map((_, i) => i).filter((i) => i !== axis + 1),
  );
  const ratio = f.divide(f.convert(values, 'f64'), scale64);
  const away = f.select(f.lt(ratio, 0), f.negate(f.floor(f.add(f.negate(ratio), 0.5))), f.floor(f.add(ratio, 0.5)));
  // A zero block has scale 0 (and 0 / 0 above): its values are 0.
  const q = f.select(f.eq(scale64, 0), 0, f.clamp(-127, away, 127));
  return { q: f.reshape(f.convert(q, 's8'), x.dims), scales };
}

/** What a decode program returns: the array, and for int8 its scales. */
interface Stored {
  data: HloValue;
  scales?: HloValue;
}

/** A program's named outputs. */
function named(s: Stored): Record<string, HloValue> {
  return { data: s.data, ...(s.scales ? { scales: s.scales } : {}) };
}

/** f32 values in the weight type's storage (bf16 bits typed as `spec` says); int8 blocks run along `inAxis`. */
function store(f: FunctionBuilder, x: HloValue, type: WeightType, inAxis: number, spec: DecoderWeightSpec): Stored {
  if (type === 'f32') return { data: x };
  if (type === 'bf16')
    return { data: spec.elementType === 'bf16' ? f.bitcastConvert(nn.bf16Bits(f, x), 'bf16') : nn.bf16Bits(f, x) };
  const { q, scales } = int8Blocks(f, x, inAxis);
  return { data: q, scales };
}

/**
 * The program that builds `spec` (layers [from, from + layers) of a
 * per-layer array, or a whole [V, Dm] table) from its parts' raw rows:
 * inputs u8 [layers, rows, rowBytes] per part (a table: one "layer"),
 * outputs the array in the spec's element type and, for int8, its scales.
 */
export function decodeProgram(
  spec: DecoderWeightSpec,
  parts: readonly StoredPart[],
  type: WeightType,
  layers: number,
): HloProgram {
  const types = parts.map((p) => ggmlTypeName(p.type)).join('_');
  // bf16 typed bf16 (not u16 bits): `bf16t`.
  const storage = type === 'bf16' && spec.elementType === 'bf16' ? 'bf16t' : type;
  return buildProgram(`decode_${spec.name}_${storage}_l${layers}_${types}`, (f) => {
    const raw = parts.map((p, k) => f.param(new TensorType('u8', [layers, p.rows, p.rowBytes]), `part${k}`));
    const layout = (p: StoredPart): { bytes: number; blocks: number } => {
      const block = ggmlTypeLayout(p.type);
      if (!block || !DEVICE_DECODED_TYPES.has(p.type))
        throw new RangeError(`decode: ${ggmlTypeName(p.type)} is not decoded on the device`);
      return { bytes: block.bytesPerBlock, blocks: p.rowLength / block.blockSize };
    };
    if (!spec.perLayer) {
      // A [V, Dm] table keeps the file's orientation: [V, blocks, bytes, 1].
      const [p] = parts;
      const { bytes, blocks } = layout(p);
      const values = f.reshape(dequantizeBlocks(f, f.reshape(raw[0], [p.rows, blocks, bytes, 1]), p.type), [
        p.rows,
        p.rowLength,
      ]);
      return named(store(f, values, type, 1, spec));
    }
    // Layer matrices: [L, rows, blocks, bytes] -> [L, blocks, bytes, rows], decoded to [L, in, rows]:
    // the Hugging Face rows are already the columns of the [in, width] slice. Parts stored alike are
    // joined as bytes (side by side on the rows axis) and decoded once; others are joined decoded.
    const byRows = parts.map((p, k) => {
      const { bytes, blocks } = layout(p);
      return f.transpose(f.reshape(raw[k], [layers, p.rows, blocks, bytes]), [0, 2, 3, 1]);
    });
    const decode = (blocks: HloValue, p: StoredPart): Stored => {
      const rows = blocks.dims[3];
      return store(f, f.reshape(dequantizeBlocks(f, blocks, p.type), [layers, p.rowLength, rows]), type, 1, spec);
    };
    if (parts.every((p) => p.type === parts[0].type))
      return named(decode(byRows.length === 1 ? byRows[0] : f.concatenate(byRows, 3), parts[0]));
    const stored = parts.map((p, k) => decode(byRows[k], p));
    const side = (vs: HloValue[]): HloValue => f.concatenate(vs, 2);
    return named({
      data: side(stored.map((s) => s.data)),
      ...(type === 'int8' ? { scales: side(stored.map((s) => s.scales!)) } : {}),
    });
  });
}
