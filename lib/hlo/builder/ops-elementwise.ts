/**
 * Elementwise ops: arithmetic, math functions, comparisons, select, logic and
 * conversion. StableHLO does not broadcast implicitly, so both operands of a
 * binary op must have the same type; a JS number stands for a splat constant
 * of the other operand's type (`f.multiply(x, 0.125)`).
 */

import { CoreBuilder, HloValue, Operand } from './core';
import { sameDims } from '../../util/dims';
import { ELEMENT_TYPES } from '../../util/element-types';
import {
  HloBuildError,
  HloElementType,
  TensorType,
  formatDims,
  isElementType,
  isFloatType,
  isIntegerType,
  isSignedIntType,
} from './types';

export type ComparisonDirection = 'EQ' | 'NE' | 'LT' | 'LE' | 'GT' | 'GE';
const DIRECTIONS: readonly ComparisonDirection[] = ['EQ', 'NE', 'LT', 'LE', 'GT', 'GE'];

export class ElementwiseBuilder extends CoreBuilder {
  /** Resolves two operands (at least one a value) to values of one type. */
  protected binaryOperands(op: string, x: Operand, y: Operand): [HloValue, HloValue] {
    if (typeof x === 'number' && typeof y === 'number') {
      throw new HloBuildError(`${op}: at least one operand must be an HloValue (got two numbers)`);
    }
    const like = typeof x === 'number' ? (y as HloValue).type : (x as HloValue).type;
    const a = this.operand(op, x, like);
    const b = this.operand(op, y, like);
    if (!a.type.equals(b.type)) {
      throw new HloBuildError(
        `${op}: operand types differ: ${a.type} vs ${b.type} (broadcast explicitly with broadcastInDim)`,
      );
    }
    return [a, b];
  }

  protected binary(
    op: string,
    x: Operand,
    y: Operand,
    allowed?: (t: HloElementType) => boolean,
    what?: string,
  ): HloValue {
    const [a, b] = this.binaryOperands(op, x, y);
    if (allowed && !allowed(a.elementType)) throw new HloBuildError(`${op}: needs ${what} operands, got ${a.type}`);
    return this.emit1(op, [a, b], a.type);
  }

  protected unary(op: string, x: HloValue, allowed?: (t: HloElementType) => boolean, what?: string): HloValue {
    this.use(op, x);
    if (allowed && !allowed(x.elementType)) throw new HloBuildError(`${op}: needs a ${what} operand, got ${x.type}`);
    return this.emit1(op, [x], x.type);
  }

  add(x: Operand, y: Operand): HloValue {
    return this.binary('add', x, y, notPred, 'numeric');
  }
  subtract(x: Operand, y: Operand): HloValue {
    return this.binary('subtract', x, y, notPred, 'numeric');
  }
  multiply(x: Operand, y: Operand): HloValue {
    return this.binary('multiply', x, y, notPred, 'numeric');
  }
  divide(x: Operand, y: Operand): HloValue {
    return this.binary('divide', x, y, notPred, 'numeric');
  }
  remainder(x: Operand, y: Operand): HloValue {
    return this.binary('remainder', x, y, notPred, 'numeric');
  }
  maximum(x: Operand, y: Operand): HloValue {
    return this.binary('maximum', x, y);
  }
  minimum(x: Operand, y: Operand): HloValue {
    return this.binary('minimum', x, y);
  }
  power(x: Operand, y: Operand): HloValue {
    return this.binary('power', x, y, notPred, 'numeric');
  }

  negate(x: HloValue): HloValue {
    return this.unary('negate', x, notPred, 'numeric');
  }
  abs(x: HloValue): HloValue {
    return this.unary('abs', x, notPred, 'numeric');
  }
  exponential(x: HloValue): HloValue {
    return this.unary('exponential', x, isFloatType, 'floating-point');
  }
  log(x: HloValue): HloValue {
    return this.unary('log', x, isFloatType, 'floating-point');
  }
  sqrt(x: HloValue): HloValue {
    return this.unary('sqrt', x, isFloatType, 'floating-point');
  }
  rsqrt(x: HloValue): HloValue {
    return this.unary('rsqrt', x, isFloatType, 'floating-point');
  }
  tanh(x: HloValue): HloValue {
    return this.unary('tanh', x, isFloatType, 'floating-point');
  }
  /** The sigmoid 1 / (1 + exp(-x)). */
  logistic(x: HloValue): HloValue {
    return this.unary('logistic', x, isFloatType, 'floating-point');
  }
  sine(x: HloValue): HloValue {
    return this.unary('sine', x, isFloatType, 'floating-point');
  }
  cosine(x: HloValue): HloValue {
    return this.unary('cosine', x, isFloatType, 'floating-point');
  }
  floor(x: HloValue): HloValue {
    return this.unary('floor', x, isFloatType, 'floating-point');
  }

  and(x: Operand, y: Operand): HloValue {
    return this.binary('and', x, y, isLogical, 'pred or integer');
  }
  or(x: Operand, y: Operand): HloValue {
    return this.binary('or', x, y, isLogical, 'pred or integer');
  }
  not(x: HloValue): HloValue {
    return this.unary('not', x, isLogical, 'pred or integer');
  }
  shiftLeft(x: Operand, y: Operand): HloValue {
    return this.binary('shift_left', x, y, isIntegerType, 'integer');
  }
  /** x >> y with zeros shifted in (an unsigned shift whatever the type). */
  shiftRightLogical(x: Operand, y: Operand): HloValue {
    return this.binary('shift_right_logical', x, y, isIntegerType, 'integer');
  }

  /** Elementwise comparison; the result is `pred` of the same shape. */
  compare(x: Operand, y: Operand, direction: ComparisonDirection): HloValue {
    if (!DIRECTIONS.includes(direction)) {
      throw new HloBuildError(
        `compare: direction must be one of ${DIRECTIONS.join(', ')}, got ${JSON.stringify(direction)}`,
      );
    }
    const [a, b] = this.binaryOperands('compare', x, y);
    const t = a.elementType;
    const compareType = isFloatType(t) ? 'FLOAT' : isSignedIntType(t) ? 'SIGNED' : 'UNSIGNED';
    return this.emit1('compare', [a, b], a.type.withElementType('pred'), [
      ['comparison_direction', `#stablehlo<comparison_direction ${direction}>`],
      ['compare_type', `#stablehlo<comparison_type ${compareType}>`],
    ]);
  }
  eq(x: Operand, y: Operand): HloValue {
    return this.compare(x, y, 'EQ');
  }
  ne(x: Operand, y: Operand): HloValue {
    return this.compare(x, y, 'NE');
  }
  lt(x: Operand, y: Operand): HloValue {
    return this.compare(x, y, 'LT');
  }
  le(x: Operand, y: Operand): HloValue {
    return this.compare(x, y, 'LE');
  }
  gt(x: Operand, y: Operand): HloValue {
    return this.compare(x, y, 'GT');
  }
  ge(x: Operand, y: Operand): HloValue {
    return this.compare(x, y, 'GE');
  }

  /** `cond ? onTrue : onFalse` elementwise; `cond` is pred of the same shape (or a pred scalar). */
  select(cond: HloValue, onTrue: Operand, onFalse: Operand): HloValue {
    this.use('select', cond);
    const [a, b] = this.binaryOperands('select', onTrue, onFalse);
    if (cond.elementType !== 'pred') throw new HloBuildError(`select: condition must be pred, got ${cond.type}`);
    if (cond.rank !== 0 && !sameDims(cond.dims, a.dims)) {
      throw new HloBuildError(
        `select: condition dims ${formatDims(cond.dims)} differ from value dims ${formatDims(a.dims)}`,
      );
    }
    return this.emit1('select', [cond, a, b], a.type);
  }

  /** min(max(x, lo), hi) elementwise; `lo` and `hi` are scalars or of x's shape. */
  clamp(lo: Operand, x: HloValue, hi: Operand): HloValue {
    this.use('clamp', x);
    const scalarType = x.type.withDims([]);
    const bound = (v: Operand, which: string): HloValue => {
      const b = this.operand('clamp', v, scalarType);
      if (b.elementType !== x.elementType || (b.rank !== 0 && !sameDims(b.dims, x.dims))) {
        throw new HloBuildError(`clamp: ${which} bound ${b.type} must be a scalar or match the operand ${x.type}`);
      }
      return b;
    };
    const l = bound(lo, 'lower');
    const h = bound(hi, 'upper');
    return this.emit1('clamp', [l, x, h], x.type);
  }

  /** Changes the element type (float to int truncates toward zero). */
  convert(x: HloValue, elementType: HloElementType): HloValue {
    this.use('convert', x);
    if (!isElementType(elementType))
      throw new HloBuildError(`convert: unknown element type ${JSON.stringify(elementType)}`);
    return this.emit1('convert', [x], x.type.withElementType(elementType));
  }

  /** Reinterprets the bits as another element type of the same width (bf16 -> u16, u32 -> f32). */
  bitcastConvert(x: HloValue, elementType: HloElementType): HloValue {
    this.use('bitcast_convert', x);
    if (!isElementType(elementType))
      throw new HloBuildError(`bitcast_convert: unknown element type ${JSON.stringify(elementType)}`);
    const width = (t: HloElementType): number => ELEMENT_TYPES[t].bytes;
    if (width(x.elementType) !== width(elementType))
      throw new HloBuildError(`bitcast_convert: ${x.elementType} and ${elementType} differ in width`);
    return this.emit1('bitcast_convert', [x], x.type.withElementType(elementType));
  }

  /** A value of `like`'s type filled with `value`. */
  full(like: HloValue | TensorType, value: number | boolean): HloValue {
    return this.splat(value, like instanceof HloValue ? like.type : like);
  }
}

function notPred(t: HloElementType): boolean {
  return t !== 'pred';
}

function isLogical(t: HloElementType): boolean {
  return t === 'pred' || isIntegerType(t);
}
