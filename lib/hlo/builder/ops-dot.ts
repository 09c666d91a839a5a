/**
 * dot_general: a batched tensor contraction. The result dims are, in order,
 * the batch dims, the free lhs dims, then the free rhs dims.
 */

import { HloValue } from './core';
import { ShapeBuilder } from './ops-shape';
import { HloBuildError, formatDims } from './types';

export type DotPrecision = 'DEFAULT' | 'HIGH' | 'HIGHEST';

export interface DotDims {
  lhsBatch?: readonly number[];
  rhsBatch?: readonly number[];
  lhsContract: readonly number[];
  rhsContract: readonly number[];
  /** Precision for both operands; default the function's (ModuleBuilder.func options), else none. */
  precision?: DotPrecision;
  /**
   * The result's element type. Default: f32 where an operand was f32 (in a
   * bf16-operand function too: the product accumulates in f32), else the
   * operands'. 'bf16' of f32 or bf16 operands: the backend still accumulates
   * in f32 and rounds the result once (on a GPU, a bf16 GEMM output).
   */
  result?: 'f32' | 'bf16';
  /** 'as-is': f32 operands stay f32 in a function that computes its dots in bf16. */
  operands?: 'as-is';
}

export class DotBuilder extends ShapeBuilder {
  /** 'bf16' where this function computes its dots in bf16 (ModuleBuilder.func options). */
  get dotOperands(): 'bf16' | undefined {
    return this.fn.dotOperands;
  }

  dotGeneral(lhsIn: HloValue, rhsIn: HloValue, d: DotDims): HloValue {
    this.use('dot_general', lhsIn);
    this.use('dot_general', rhsIn);
    // A function that computes its dots in bf16 rounds f32 operands here (both
    // f32, or an f32 side meeting a bf16 one: a bf16 matrix as stored); the
    // result stays f32 (the product accumulates in f32) unless d.result says.
    const floats = (x: HloValue): boolean => x.elementType === 'f32' || x.elementType === 'bf16';
    const narrow =
      d.operands !== 'as-is' &&
      this.fn.dotOperands === 'bf16' &&
      floats(lhsIn) &&
      floats(rhsIn) &&
      (lhsIn.elementType === 'f32' || rhsIn.elementType === 'f32');
    const lhs = narrow && lhsIn.elementType === 'f32' ? this.convert(lhsIn, 'bf16') : lhsIn;
    const rhs = narrow && rhsIn.elementType === 'f32' ? this.convert(rhsIn, 'bf16') : rhsIn;
    const lb = d.lhsBatch ?? [];
    const rb = d.rhsBatch ?? [];
    const lc = d.lhsContract;
    const rc = d.rhsContract;
    if (lhs.elementType !== rhs.elementType) {
      throw new HloBuildError(`dot_general: element types differ: lhs ${lhs.type}, rhs ${rhs.type}`);
    }
    this.checkAxes('dot_general', lb, lhs.rank, 'lhs batch dims');
    this.checkAxes('dot_general', lc, lhs.rank, 'lhs contracting dims');
    this.checkAxes('dot_general', rb, rhs.rank, 'rhs batch dims');
    this.checkAxes('dot_general', rc, rhs.rank, 'rhs contracting dims');
    for (const [side, batch, contract] of [
      ['lhs', lb, lc],
      ['rhs', rb, rc],
    ] as const) {
      const both = batch.find((a) => contract.includes(a));
      if (both !== undefined)
        throw new HloBuildError(`dot_general: ${side} dim ${both} is both a batch and a contracting dim`);
    }
    if (lb.length !== rb.length)
      throw new HloBuildError(`dot_general: ${lb.length} lhs batch dims vs ${rb.length} rhs batch dims`);
    if (lc.length !== rc.length)
      throw new HloBuildError(`dot_general: ${lc.length} lhs contracting dims vs ${rc.length} rhs contracting dims`);
    lb.forEach((a, i) => {
      if (lhs.dims[a] !== rhs.dims[rb[i]]) {
        throw new HloBuildError(
          `dot_general: batch dims differ: lhs[${a}]=${lhs.dims[a]}, rhs[${rb[i]}]=${rhs.dims[rb[i]]}`,
        );
      }
    });
    lc.forEach((a, i) => {
      if (lhs.dims[a] !== rhs.dims[rc[i]]) {
        throw new HloBuildError(
          `dot_general: contracting dims differ: lhs[${a}]=${lhs.dims[a]}, rhs[${rc[i]}]=${rhs.dims[rc[i]]}`,
        );
      }
    });
    const lhsFree = lhs.dims.filter((_, i) => !lb.includes(i) && !lc.includes(i));
    const rhsFree = rhs.dims.filter((_, i) => !rb.includes(i) && !rc.includes(i));
    const dims = [...lb.map((a) => lhs.dims[a]), ...lhsFree, ...rhsFree];
    const list = (xs: readonly number[]): string => `[${xs.join(', ')}]`;
    const dn = [
      ...(lb.length ? [`lhs_batching_dimensions = ${list(lb)}`, `rhs_batching_dimensions = ${list(rb)}`] : []),
      `lhs_contracting_dimensions = ${list(lc)}`,
      `rhs_contracting_dimensions = ${list(rc)}`,
    ].join(', ');
    const attrs: [string, string][] = [['dot_dimension_numbers', `#stablehlo.dot<${dn}>`]];
    const precision = narrow ? undefined : (d.precision ?? this.fn.dotPrecision);
    if (precision) {
      const p = `#stablehlo<precision ${precision}>`;
      attrs.push(['precision_config', `[${p}, ${p}]`]);
    }
    if (d.result !== undefined && d.result !== 'f32' && d.result !== 'bf16')
      throw new HloBuildError(`dot_general: result must be f32 or bf16, got ${String(d.result)}`);
    if (d.result !== undefined && !floats(lhs))
      throw new HloBuildError(`dot_general: a declared result type needs float operands, got ${lhs.type}`);
    const result = d.result ?? (narrow ? 'f32' : lhs.elementType);
    return this.emit1('dot_general', [lhs, rhs], lhs.type.withDims(dims).withElementType(result), attrs);
  }

  /** Plain matrix product [m, k] x [k, n] -> [m, n]. */
  matmul(lhs: HloValue, rhs: HloValue): HloValue {
    if (lhs.rank !== 2 || rhs.rank !== 2) {
      throw new HloBuildError(`matmul: needs two matrices, got ${formatDims(lhs.dims)} and ${formatDims(rhs.dims)}`);
    }
    return this.dotGeneral(lhs, rhs, { lhsContract: [1], rhsContract: [0] });
  }
}
