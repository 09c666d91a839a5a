/**
 * The vocabulary of the GGUF format: metadata value types and ggml tensor
 * types with their block layouts. Kept apart from the reader so that the
 * dequantizer and error messages can name types without pulling in I/O.
 */
import { PjrtScoreError } from '../util/errors';

/** Metadata value type tags, as stored in the file (u32). */
export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/**
 * A metadata value. 64-bit integers become `number` when they fit in a
 * double exactly and `bigint` otherwise, so nothing is silently rounded.
 * Arrays keep their element type so callers can check it.
 */
export type GgufScalar = number | bigint | boolean | string;
export interface GgufArray {
  readonly kind: 'array';
  readonly elementType: GgufValueType;
  readonly values: readonly GgufValue[];
}
export type GgufValue = GgufScalar | GgufArray;

/** ggml tensor types (enum ggml_type). Gaps are types removed upstream. */
export enum GgmlType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
}

/** Elements per block and bytes per block: enough to size and skip any tensor. */
export interface GgmlTypeLayout {
  readonly blockSize: number;
  readonly bytesPerBlock: number;
}

const LAYOUTS: ReadonlyMap<GgmlType, GgmlTypeLayout> = new Map<GgmlType, GgmlTypeLayout>([
  [GgmlType.F32, { blockSize: 1, bytesPerBlock: 4 }],
  [GgmlType.F16, { blockSize: 1, bytesPerBlock: 2 }],
  [GgmlType.BF16, { blockSize: 1, bytesPerBlock: 2 }],
  [GgmlType.F64, { blockSize: 1, bytesPerBlock: 8 }],
  [GgmlType.I8, { blockSize: 1, bytesPerBlock: 1 }],
  [GgmlType.I16, { blockSize: 1, bytesPerBlock: 2 }],
  [GgmlType.I32, { blockSize: 1, bytesPerBlock: 4 }],
  [GgmlType.I64, { blockSize: 1, bytesPerBlock: 8 }],
  [GgmlType.Q4_0, { blockSize: 32, bytesPerBlock: 18 }],
  [GgmlType.Q4_1, { blockSize: 32, bytesPerBlock: 20 }],
  [GgmlType.Q5_0, { blockSize: 32, bytesPerBlock: 22 }],
  [GgmlType.Q5_1, { blockSize: 32, bytesPerBlock: 24 }],
  [GgmlType.Q8_0, { blockSize: 32, bytesPerBlock: 34 }],
  [GgmlType.Q8_1, { blockSize: 32, bytesPerBlock: 36 }],
  [GgmlType.IQ4_NL, { blockSize: 32, bytesPerBlock: 18 }],
  [GgmlType.MXFP4, { blockSize: 32, bytesPerBlock: 17 }],
  [GgmlType.Q2_K, { blockSize: 256, bytesPerBlock: 84 }],
  [GgmlType.Q3_K, { blockSize: 256, bytesPerBlock: 110 }],
  [GgmlType.Q4_K, { blockSize: 256, bytesPerBlock: 144 }],
  [GgmlType.Q5_K, { blockSize: 256, bytesPerBlock: 176 }],
  [GgmlType.Q6_K, { blockSize: 256, bytesPerBlock: 210 }],
  [GgmlType.Q8_K, { blockSize: 256, bytesPerBlock: 292 }],
  [GgmlType.IQ2_XXS, { blockSize: 256, bytesPerBlock: 66 }],
  [GgmlType.IQ2_XS, { blockSize: 256, bytesPerBlock: 74 }],
  [GgmlType.IQ3_XXS, { blockSize: 256, bytesPerBlock: 98 }],
  [GgmlType.IQ1_S, { blockSize: 256, bytesPerBlock: 50 }],
  [GgmlType.IQ3_S, { blockSize: 256, bytesPerBlock: 110 }],
  [GgmlType.IQ2_S, { blockSize: 256, bytesPerBlock: 82 }],
  [GgmlType.IQ4_XS, { blockSize: 256, bytesPerBlock: 136 }],
  [GgmlType.IQ1_M, { blockSize: 256, bytesPerBlock: 56 }],
  [GgmlType.TQ1_0, { blockSize: 256, bytesPerBlock: 54 }],
  [GgmlType.TQ2_0, { blockSize: 256, bytesPerBlock: 66 }],
]);

/** "Q4_1" for 3; "type 31" for tags this build does not know. */
export function ggmlTypeName(type: number): string {
  const name = (GgmlType as unknown as Record<number, string | undefined>)[type];
  return name ?? `type ${type}`;
}

/** The block layout of a type, or undefined for a tag this build does not know. */
export function ggmlTypeLayout(type: number): GgmlTypeLayout | undefined {
  return LAYOUTS.get(type as GgmlType);
}

/**
 * The types pjrt-score decodes into f32: on the host (`dequantize`) and on
 * the device (lib/device-weights/decode.ts), with the same values. Every
 * other type is refused by name with this list (docs/models.md).
 */
export const DEQUANTIZABLE_TYPES: readonly GgmlType[] = [
  GgmlType.F32,
  GgmlType.F16,
  GgmlType.BF16,
  GgmlType.Q8_0,
  GgmlType.Q4_0,
  GgmlType.Q4_1,
  GgmlType.Q5_0,
  GgmlType.Q5_1,
  GgmlType.Q2_K,
  GgmlType.Q3_K,
  GgmlType.Q4_K,
  GgmlType.Q5_K,
  GgmlType.Q6_K,
  GgmlType.IQ4_NL,
  GgmlType.IQ4_XS,
];

/** The 16 values an IQ4_NL / IQ4_XS index stands for (ggml's kvalues_iq4nl), times the block's scale. */
export const IQ4_VALUES: readonly number[] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/** One entry of the tensor table. */
export interface GgufTensorInfo {
  readonly name: string;
  /** Dimensions as stored: fastest-varying first (dims[0] is the row length). */
  readonly dims: readonly number[];
  readonly type: GgmlType;
  /** Offset of the data relative to the start of the data section. */
  readonly offset: number;
  /** Product of dims. */
  readonly elementCount: number;
  /** Bytes the data occupies in the file. */
  readonly byteLength: number;
}

/** Thrown for every malformed, truncated or unsupported GGUF file. */
export class GgufError extends PjrtScoreError {
  /** GGUF_INVALID: the file is malformed or truncated; GGUF_UNSUPPORTED: valid but not something we handle. */
  declare readonly code: 'GGUF_INVALID' | 'GGUF_UNSUPPORTED';
  constructor(message: string, code: 'GGUF_INVALID' | 'GGUF_UNSUPPORTED' = 'GGUF_INVALID') {
    super(message, code);
    this.name = 'GgufError';
  }
}
