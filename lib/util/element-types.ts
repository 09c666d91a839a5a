/**
 * The element types pjrt-score handles, in one table: name, size, MLIR
 * spelling, kind and the host array class that holds them. The runtime
 * (dtype, signature parsing) and the StableHLO builder both derive from it;
 * it lives in util/ so that neither of those rooms imports the other.
 */

type ElementKind = 'float' | 'signed' | 'unsigned' | 'pred';

export interface ElementTypeInfo {
  readonly bytes: number;
  /** How StableHLO text spells it (`i32` for s32, `i1` for pred). */
  readonly mlir: string;
  readonly kind: ElementKind;
  /** The typed array a host copy lives in; f16 and bf16 travel as raw bits. */
  readonly array: { new (buffer: ArrayBuffer): ArrayBufferView; readonly name: string };
}

// Order matters only for messages that list the known types.
export const ELEMENT_TYPES = {
  f32: { bytes: 4, mlir: 'f32', kind: 'float', array: Float32Array },
  f64: { bytes: 8, mlir: 'f64', kind: 'float', array: Float64Array },
  f16: { bytes: 2, mlir: 'f16', kind: 'float', array: Uint16Array },
  bf16: { bytes: 2, mlir: 'bf16', kind: 'float', array: Uint16Array },
  s8: { bytes: 1, mlir: 'i8', kind: 'signed', array: Int8Array },
  s16: { bytes: 2, mlir: 'i16', kind: 'signed', array: Int16Array },
  s32: { bytes: 4, mlir: 'i32', kind: 'signed', array: Int32Array },
  s64: { bytes: 8, mlir: 'i64', kind: 'signed', array: BigInt64Array },
  u8: { bytes: 1, mlir: 'ui8', kind: 'unsigned', array: Uint8Array },
  u16: { bytes: 2, mlir: 'ui16', kind: 'unsigned', array: Uint16Array },
  u32: { bytes: 4, mlir: 'ui32', kind: 'unsigned', array: Uint32Array },
  u64: { bytes: 8, mlir: 'ui64', kind: 'unsigned', array: BigUint64Array },
  pred: { bytes: 1, mlir: 'i1', kind: 'pred', array: Uint8Array },
} as const satisfies Readonly<Record<string, ElementTypeInfo>>;

export type ElementType = keyof typeof ELEMENT_TYPES;

export function isElementType(value: unknown): value is ElementType {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ELEMENT_TYPES, value);
}

export function elementKind(t: ElementType): ElementKind {
  return ELEMENT_TYPES[t].kind;
}

/** MLIR spelling -> element type (`i32` -> s32); undefined for others. */
export function elementTypeFromMlir(mlir: string): ElementType | undefined {
  return FROM_MLIR.get(mlir);
}

const FROM_MLIR: ReadonlyMap<string, ElementType> = new Map(
  (Object.keys(ELEMENT_TYPES) as ElementType[]).map((t) => [ELEMENT_TYPES[t].mlir, t]),
);
