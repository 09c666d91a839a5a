/**
 * Element types as the runtime names them and their host arrays, derived
 * from the one table in util/element-types.
 */
import { ELEMENT_TYPES, ElementType, ElementTypeInfo, isElementType } from '../util/element-types';
export { elementCount } from '../util/dims';

export type DType = ElementType;

/** The host array for each element type; f16 and bf16 travel as raw bits. */
export type HostArrayOf = { [K in DType]: InstanceType<(typeof ELEMENT_TYPES)[K]['array']> };

export type HostArray = HostArrayOf[DType];

/** Size and host array class of each element type (the shared table). */
export const DTYPES: { readonly [K in DType]: ElementTypeInfo } = ELEMENT_TYPES;

export function isDType(value: unknown): value is DType {
  return isElementType(value);
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

export function hostArray(dtype: DType, buffer: ArrayBuffer): HostArray {
  return new DTYPES[dtype].array(buffer) as HostArray;
}
