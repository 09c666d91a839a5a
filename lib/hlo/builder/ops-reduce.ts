/**
 * Reductions with a body region, and the usual sum / max / min shortcuts.
 */

import { HloValue, i64Array } from './core';
import { DotBuilder } from './ops-dot';
import { HloBuildError, HloElementType, formatDims, isFloatType } from './types';

export class ReduceBuilder extends DotBuilder {
  /**
   * Reduces `inputs` (all of one shape) over `dims` from `inits` (scalars),
   * combining with `body(b, accumulators, elements) -> new accumulators`.
   * The result drops the reduced dims.
   */
  reduce(
    inputs: readonly HloValue[],
    inits: readonly HloValue[],
    dims: readonly number[],
    body: (b: this, acc: HloValue[], x: HloValue[]) => HloValue[],
  ): HloValue[] {
    if (!inputs.length || inputs.length !== inits.length) {
      throw new HloBuildError(
        `reduce: needs as many init values as inputs (got ${inputs.length} inputs, ${inits.length} inits)`,
      );
    }
    inputs.forEach((v) => this.use('reduce', v));
    inits.forEach((v) => this.use('reduce', v));
    const shape = inputs[0].dims;
    inputs.forEach((v, i) => {
      if (v.dims.length !== shape.length || v.dims.some((d, j) => d !== shape[j])) {
        throw new HloBuildError(
          `reduce: input ${i} dims ${formatDims(v.dims)} differ from input 0 dims ${formatDims(shape)}`,
        );
      }
      if (inits[i].rank !== 0 || inits[i].elementType !== v.elementType) {
        throw new HloBuildError(`reduce: init ${i} must be a ${v.elementType} scalar, got ${inits[i].type}`);
      }
    });
    this.checkAxes('reduce', dims, shape.length, 'dimensions');
    const scalarTypes = inputs.map((v) => v.type.withDims([]));
    const region = this.buildRegion(
      'reduce',
      [...scalarTypes, ...scalarTypes],
      (b, args) => body(b, args.slice(0, inputs.length), args.slice(inputs.length)),
      scalarTypes,
    );
    const outDims = shape.filter((_, i) => !dims.includes(i));
    const resultTypes = inputs.map((v) => v.type.withDims(outDims));
    return this.emit('reduce', [...inputs, ...inits], resultTypes, [['dimensions', i64Array(dims)]], [region]);
  }

  reduceSum(x: HloValue, dims: readonly number[]): HloValue {
    return this.reduce([x], [this.scalar(0, x.elementType)], dims, (b, [acc], [v]) => [b.add(acc, v)])[0];
  }

  reduceMax(x: HloValue, dims: readonly number[]): HloValue {
    return this.reduce([x], [this.scalar(lowest(x.elementType), x.elementType)], dims, (b, [acc], [v]) => [
      b.maximum(acc, v),
    ])[0];
  }

  reduceMin(x: HloValue, dims: readonly number[]): HloValue {
    return this.reduce([x], [this.scalar(highest(x.elementType), x.elementType)], dims, (b, [acc], [v]) => [
      b.minimum(acc, v),
    ])[0];
  }

  /** Broadcasts a reduced value back over the dims it lost: the inverse shape of `reduce(x, dims)`. */
  expandReduced(reduced: HloValue, fullDims: readonly number[], reducedAxes: readonly number[]): HloValue {
    const kept = fullDims.map((_, i) => i).filter((i) => !reducedAxes.includes(i));
    if (kept.length !== reduced.rank || kept.some((a, i) => fullDims[a] !== reduced.dims[i])) {
      throw new HloBuildError(
        `expandReduced: ${reduced.type} is not ${formatDims(fullDims)} reduced over ${formatDims(reducedAxes)}`,
      );
    }
    return this.broadcastInDim(reduced, fullDims, kept);
  }
}

function lowest(t: HloElementType): number | boolean {
  if (isFloatType(t)) return -Infinity;
  if (t === 'pred') return false;
  if (t === 'u8' || t === 'u32') return 0;
  return t === 's8' ? -128 : t === 's32' ? -2147483648 : Number.MIN_SAFE_INTEGER;
}

function highest(t: HloElementType): number | boolean {
  if (isFloatType(t)) return Infinity;
  if (t === 'pred') return true;
  if (t === 'u8') return 255;
  if (t === 'u32') return 4294967295;
  return t === 's8' ? 127 : t === 's32' ? 2147483647 : Number.MAX_SAFE_INTEGER;
}
