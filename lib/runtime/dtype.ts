/** Element types as pjrt-score names them, and their host array classes. */

export type DType = 'f32' | 'f16' | 'bf16' | 'f64' | 's8' | 's16' | 's32' | 's64' | 'u8' | 'u16' | 'u32' | 'u64' | 'pred';

/** The host array for each element type; f16 and bf16 travel as raw bits. */
export interface HostArrayOf {
  f32: Float32Array;
  f64: Float64Array;
  f16: Uint16Array;
  bf16: Uint16Array;
  s8: Int8Array;
  s16: Int16Array;
  s32: Int32Array;
  s64: BigInt64Array;
  u8: Uint8Array;
  u16: Uint16Array;
  u32: Uint32Array;
  u64: BigUint64Array;
  pred: Uint8Array;
}

export type HostArray = HostArrayOf[DType];

interface DTypeInfo {
  readonly bytes: number;
  readonly array: { new (buffer: ArrayBuffer): HostArray; readonly name: string };
}

export const DTYPES: { readonly [K in DType]: DTypeInfo } = {
  f32: { bytes: 4, array: Float32Array },
  f64: { bytes: 8, array: Float64Array },
  f16: { bytes: 2, array: Uint16Array },
  bf16: { bytes: 2, array: Uint16Array },
  s8: { bytes: 1, array: Int8Array },
  s16: { bytes: 2, array: Int16Array },
  s32: { bytes: 4, array: Int32Array },
  s64: { bytes: 8, array: BigInt64Array },
  u8: { bytes: 1, array: Uint8Array },
  u16: { bytes: 2, array: Uint16Array },
  u32: { bytes: 4, array: Uint32Array },
  u64: { bytes: 8, array: BigUint64Array },
  pred: { bytes: 1, array: Uint8Array },
};

export function isDType(value: unknown): value is DType {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(DTYPES, value);
}

/** The dtype a typed array implies when the caller gives none. */
export function inferDType(data: ArrayBufferView): DType | undefined {
  if (data instanceof Float32Array) return 'f32';
  if (data instanceof Float64Array) return 'f64';
  if (data instanceof Int32Array) return 's32';
  if (data instanceof BigInt64Array) return 's64';
  if (data instanceof Uint8Array) return 'u8';
  if (data instanceof Int8Array) return 's8';
  if (data instanceof Int16Array) return 's16';
  if (data instanceof Uint32Array) return 'u32';
  if (data instanceof BigUint64Array) return 'u64';
  return undefined; // Uint16Array is ambiguous: f16, bf16 or u16
}

/** A typed array's class name, for messages. */
export function arrayName(data: unknown): string {
  if (data === null) return 'null';
  if (typeof data !== 'object') return typeof data;
  return (data as object).constructor?.name ?? 'object';
}

export function elementCount(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

export function hostArray(dtype: DType, buffer: ArrayBuffer): HostArray {
  return new DTYPES[dtype].array(buffer);
}
