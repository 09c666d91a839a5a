/**
 * Tensor types for the StableHLO builder: an element type plus a static shape.
 *
 * Element type names follow the runtime (`'f32'`, `'s32'`, `'pred'`, ...) so a
 * program's input and output descriptions can be handed to the runtime as is;
 * `mlirElementType` maps them to MLIR spelling (`f32`, `i32`, `i1`, ...). Both
 * come from the one table in util/element-types.
 */
import { PjrtScoreError } from '../../util/errors';
import { dimsProblem, elementCount, sameDims } from '../../util/dims';
import { ELEMENT_TYPES, ElementType, elementKind, isElementType } from '../../util/element-types';

export { isElementType };

export type HloElementType = ElementType;

/** Thrown for any program that cannot be built: wrong shapes, types, axes. */
export class HloBuildError extends PjrtScoreError {
  declare readonly code: 'HLO_INVALID';
  constructor(message: string) {
    super(message, 'HLO_INVALID');
    this.name = 'HloBuildError';
  }
}

export function mlirElementType(t: HloElementType): string {
  return ELEMENT_TYPES[t].mlir;
}

export function isFloatType(t: HloElementType): boolean {
  return elementKind(t) === 'float';
}

export function isSignedIntType(t: HloElementType): boolean {
  return elementKind(t) === 'signed';
}

export function isUnsignedIntType(t: HloElementType): boolean {
  return elementKind(t) === 'unsigned';
}

export function isIntegerType(t: HloElementType): boolean {
  return isSignedIntType(t) || isUnsignedIntType(t);
}

/** An element type and a static shape, e.g. tensor<8x4x64xf32>. */
export class TensorType {
  readonly elementType: HloElementType;
  readonly dims: readonly number[];

  constructor(elementType: HloElementType, dims: readonly number[]) {
    if (!isElementType(elementType)) {
      throw new HloBuildError(
        `unknown element type ${JSON.stringify(elementType)}; expected one of ${Object.keys(ELEMENT_TYPES).join(', ')}`,
      );
    }
    if (!Array.isArray(dims)) throw new HloBuildError(`tensor dims must be an array of integers, got ${String(dims)}`);
    const problem = dimsProblem(dims);
    if (problem !== undefined) throw new HloBuildError(`tensor dims ${problem}, got [${dims.join(', ')}]`);
    this.elementType = elementType;
    this.dims = Object.freeze(dims.slice());
  }

  static f32(dims: readonly number[]): TensorType {
    return new TensorType('f32', dims);
  }
  static s32(dims: readonly number[]): TensorType {
    return new TensorType('s32', dims);
  }
  static pred(dims: readonly number[]): TensorType {
    return new TensorType('pred', dims);
  }

  get rank(): number {
    return this.dims.length;
  }

  /** Number of elements. */
  get size(): number {
    return elementCount(this.dims);
  }

  withDims(dims: readonly number[]): TensorType {
    return new TensorType(this.elementType, dims);
  }

  withElementType(elementType: HloElementType): TensorType {
    return new TensorType(elementType, this.dims);
  }

  equals(other: TensorType): boolean {
    return this.elementType === other.elementType && sameDims(this.dims, other.dims);
  }

  /** MLIR spelling: `tensor<8x4x64xf32>`, `tensor<i32>` for a scalar. */
  toString(): string {
    const el = mlirElementType(this.elementType);
    return this.dims.length ? `tensor<${this.dims.join('x')}x${el}>` : `tensor<${el}>`;
  }
}

export function tensorType(elementType: HloElementType, dims: readonly number[]): TensorType {
  return new TensorType(elementType, dims);
}

export const f32 = (dims: readonly number[]): TensorType => new TensorType('f32', dims);
export const s32 = (dims: readonly number[]): TensorType => new TensorType('s32', dims);
export const pred = (dims: readonly number[]): TensorType => new TensorType('pred', dims);

export function formatDims(dims: readonly number[]): string {
  return `[${dims.join(', ')}]`;
}
