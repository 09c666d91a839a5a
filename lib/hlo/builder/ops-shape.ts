/**
 * Shape ops: iota, broadcast, reshape, transpose, concatenate, slices, pad,
 * gather. Each infers its result type and rejects bad axes with the op name,
 * the offending axis and the operand dims in the message.
 */

import { HloValue, Operand, i64Array, i64Attr } from './core';
import { ElementwiseBuilder } from './ops-elementwise';
import { HloBuildError, TensorType, formatDims, isIntegerType } from './types';

export interface GatherDims {
  /** Output dims that hold the slice (offset) dims, in operand order. */
  offsetDims: readonly number[];
  /** Operand dims whose slice size is 1 and that are dropped from the output. */
  collapsedSliceDims: readonly number[];
  /** start_index_map[i] is the operand dim that index component i addresses. */
  startIndexMap: readonly number[];
  /** The dim of `startIndices` that holds the index vector (may equal its rank: implicit 1). */
  indexVectorDim: number;
  sliceSizes: readonly number[];
  operandBatchingDims?: readonly number[];
  startIndicesBatchingDims?: readonly number[];
  indicesAreSorted?: boolean;
}

export class ShapeBuilder extends ElementwiseBuilder {
  protected checkAxis(op: string, axis: number, rank: number, what = 'axis'): void {
    if (!Number.isInteger(axis) || axis < 0 || axis >= rank) {
      throw new HloBuildError(`${op}: ${what} ${axis} is out of range for rank ${rank}`);
    }
  }

  protected checkAxes(op: string, axes: readonly number[], rank: number, what = 'axes'): void {
    if (!Array.isArray(axes)) throw new HloBuildError(`${op}: ${what} must be an array of integers`);
    for (const a of axes) this.checkAxis(op, a, rank, what.replace(/s$/, ''));
    if (new Set(axes).size !== axes.length)
      throw new HloBuildError(`${op}: ${what} ${formatDims(axes)} repeat an axis`);
  }

  /** Counting along `dimension`: iota(s32([2, 3]), 1) = [[0, 1, 2], [0, 1, 2]]. */
  iota(type: TensorType, dimension: number): HloValue {
    this.checkAxis('iota', dimension, type.rank, 'iota dimension');
    return this.emit1('iota', [], type, [['iota_dimension', i64Attr(dimension)]]);
  }

  /**
   * Broadcasts `x` to `dims`: operand axis i becomes result axis
   * `broadcastDimensions[i]` (its size must be 1 or the result size).
   */
  broadcastInDim(x: HloValue, dims: readonly number[], broadcastDimensions: readonly number[]): HloValue {
    this.use('broadcast_in_dim', x);
    const out = x.type.withDims(dims);
    if (broadcastDimensions.length !== x.rank) {
      throw new HloBuildError(
        `broadcast_in_dim: ${broadcastDimensions.length} broadcast dimensions ` +
          `given for an operand of rank ${x.rank} ${formatDims(x.dims)}`,
      );
    }
    this.checkAxes('broadcast_in_dim', broadcastDimensions, out.rank, 'broadcast dimensions');
    broadcastDimensions.forEach((d, i) => {
      if (x.dims[i] !== 1 && x.dims[i] !== dims[d]) {
        throw new HloBuildError(
          `broadcast_in_dim: operand dim ${i} has size ${x.dims[i]}, ` +
            `result dim ${d} has size ${dims[d]} (must be equal or 1)`,
        );
      }
    });
    return this.emit1('broadcast_in_dim', [x], out, [['broadcast_dimensions', i64Array(broadcastDimensions)]]);
  }

  /** Broadcasts a scalar to `dims`. */
  broadcastScalar(x: HloValue, dims: readonly number[]): HloValue {
    if (x.rank !== 0) throw new HloBuildError(`broadcastScalar: operand must be a scalar, got ${x.type}`);
    return this.broadcastInDim(x, dims, []);
  }

  /** Same elements, new dims; one entry may be -1 (inferred). */
  reshape(x: HloValue, dims: readonly number[]): HloValue {
    this.use('reshape', x);
    const holes = dims.filter((d) => d === -1).length;
    if (holes > 1) throw new HloBuildError(`reshape: at most one dim may be -1, got ${formatDims(dims)}`);
    let resolved = dims.slice();
    if (holes === 1) {
      const known = dims.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
      if (known === 0 || x.type.size % known !== 0) {
        throw new HloBuildError(
          `reshape: cannot infer -1 in ${formatDims(dims)} for ${x.type.size} elements ${formatDims(x.dims)}`,
        );
      }
      resolved = dims.map((d) => (d === -1 ? x.type.size / known : d));
    }
    const out = x.type.withDims(resolved);
    if (out.size !== x.type.size) {
      throw new HloBuildError(
        `reshape: ${formatDims(x.dims)} (${x.type.size} elements) ` +
          `cannot become ${formatDims(resolved)} (${out.size} elements)`,
      );
    }
    return this.emit1('reshape', [x], out);
  }

  /** Result dim i is operand dim permutation[i]. */
  transpose(x: HloValue, permutation: readonly number[]): HloValue {
    this.use('transpose', x);
    if (permutation.length !== x.rank) {
      throw new HloBuildError(
        `transpose: permutation ${formatDims(permutation)} has ${permutation.length} entries for rank ${x.rank}`,
      );
    }
    this.checkAxes('transpose', permutation, x.rank, 'permutation');
    return this.emit1('transpose', [x], x.type.withDims(permutation.map((p) => x.dims[p])), [
      ['permutation', i64Array(permutation)],
    ]);
  }

  /** Joins values along `dimension`; all other dims must agree. */
  concatenate(values: readonly HloValue[], dimension: number): HloValue {
    if (!values.length) throw new HloBuildError('concatenate: needs at least one operand');
    values.forEach((v) => this.use('concatenate', v));
    const first = values[0];
    this.checkAxis('concatenate', dimension, first.rank, 'dimension');
    let total = 0;
    values.forEach((v, i) => {
      if (
        v.elementType !== first.elementType ||
        v.rank !== first.rank ||
        v.dims.some((d, j) => j !== dimension && d !== first.dims[j])
      ) {
        throw new HloBuildError(
          `concatenate: operand ${i} ${v.type} does not match operand 0 ${first.type} outside dimension ${dimension}`,
        );
      }
      total += v.dims[dimension];
    });
    const dims = first.dims.slice();
    dims[dimension] = total;
    return this.emit1('concatenate', values, first.type.withDims(dims), [['dimension', i64Attr(dimension)]]);
  }

  /** Static slice [start, limit) with optional strides. */
  slice(x: HloValue, start: readonly number[], limit: readonly number[], strides?: readonly number[]): HloValue {
    this.use('slice', x);
    const st = strides ?? x.dims.map(() => 1);
    if (start.length !== x.rank || limit.length !== x.rank || st.length !== x.rank) {
      throw new HloBuildError(`slice: start, limit and strides need ${x.rank} entries each for ${formatDims(x.dims)}`);
    }
    const dims = x.dims.map((d, i) => {
      if (!(0 <= start[i] && start[i] <= limit[i] && limit[i] <= d) || !(st[i] >= 1)) {
        throw new HloBuildError(
          `slice: dim ${i}: need 0 <= start (${start[i]}) ` +
            `<= limit (${limit[i]}) <= size (${d}) and stride >= 1 (${st[i]})`,
        );
      }
      return Math.ceil((limit[i] - start[i]) / st[i]);
    });
    return this.emit1('slice', [x], x.type.withDims(dims), [
      ['start_indices', i64Array(start)],
      ['limit_indices', i64Array(limit)],
      ['strides', i64Array(st)],
    ]);
  }

  protected indexScalars(op: string, starts: readonly Operand[], rank: number): HloValue[] {
    if (starts.length !== rank) throw new HloBuildError(`${op}: ${starts.length} start indices given for rank ${rank}`);
    const vals = starts.map((s) => this.operand(op, s, new TensorType('s32', [])));
    vals.forEach((v, i) => {
      if (v.rank !== 0 || !isIntegerType(v.elementType))
        throw new HloBuildError(`${op}: start index ${i} must be an integer scalar, got ${v.type}`);
      if (v.elementType !== vals[0].elementType)
        throw new HloBuildError(`${op}: start indices must share one type: ${vals[0].type} vs ${v.type}`);
    });
    return vals;
  }

  /** Slice of `sizes` at run-time `starts` (clamped by XLA so the slice stays in bounds). */
  dynamicSlice(x: HloValue, starts: readonly Operand[], sizes: readonly number[]): HloValue {
    this.use('dynamic_slice', x);
    const idx = this.indexScalars('dynamic_slice', starts, x.rank);
    if (sizes.length !== x.rank)
      throw new HloBuildError(`dynamic_slice: ${sizes.length} slice sizes for rank ${x.rank}`);
    sizes.forEach((s, i) => {
      if (!(Number.isInteger(s) && s >= 0 && s <= x.dims[i])) {
        throw new HloBuildError(`dynamic_slice: slice size ${s} for dim ${i} must be in [0, ${x.dims[i]}]`);
      }
    });
    return this.emit1('dynamic_slice', [x, ...idx], x.type.withDims(sizes), [['slice_sizes', i64Array(sizes)]]);
  }

  /** `x` with `update` written at run-time `starts` (clamped into bounds). */
  dynamicUpdateSlice(x: HloValue, update: HloValue, starts: readonly Operand[]): HloValue {
    this.use('dynamic_update_slice', x);
    this.use('dynamic_update_slice', update);
    if (update.elementType !== x.elementType || update.rank !== x.rank || update.dims.some((d, i) => d > x.dims[i])) {
      throw new HloBuildError(`dynamic_update_slice: update ${update.type} does not fit in ${x.type}`);
    }
    const idx = this.indexScalars('dynamic_update_slice', starts, x.rank);
    return this.emit1('dynamic_update_slice', [x, update, ...idx], x.type);
  }

  /** `x[i]` along axis 0 for a run-time scalar `i`: [L, ...rest] -> [...rest]. */
  dynamicIndex(x: HloValue, i: Operand): HloValue {
    if (x.rank < 1) throw new HloBuildError(`dynamicIndex: operand must have rank >= 1, got ${x.type}`);
    const starts: Operand[] = [i, ...x.dims.slice(1).map(() => 0)];
    const zero = typeof i === 'number' ? undefined : i.elementType;
    const startVals = zero
      ? starts.map((s) => (typeof s === 'number' ? this.splat(s, new TensorType(zero, [])) : s))
      : starts;
    const slab = this.dynamicSlice(x, startVals, [1, ...x.dims.slice(1)]);
    return this.reshape(slab, x.dims.slice(1));
  }

  /** Pads with `padValue`: `low`/`high` per dim (may be negative), `interior` between elements. */
  pad(
    x: HloValue,
    padValue: Operand,
    low: readonly number[],
    high: readonly number[],
    interior?: readonly number[],
  ): HloValue {
    this.use('pad', x);
    const v = this.operand('pad', padValue, x.type.withDims([]));
    if (v.rank !== 0 || v.elementType !== x.elementType)
      throw new HloBuildError(`pad: padding value must be a ${x.elementType} scalar, got ${v.type}`);
    const inner = interior ?? x.dims.map(() => 0);
    if (low.length !== x.rank || high.length !== x.rank || inner.length !== x.rank) {
      throw new HloBuildError(`pad: low, high and interior need ${x.rank} entries each`);
    }
    const dims = x.dims.map((d, i) => {
      const n = low[i] + high[i] + d + Math.max(d - 1, 0) * inner[i];
      if (n < 0 || inner[i] < 0) throw new HloBuildError(`pad: dim ${i} would have size ${n}`);
      return n;
    });
    return this.emit1('pad', [x, v], x.type.withDims(dims), [
      ['edge_padding_low', i64Array(low)],
      ['edge_padding_high', i64Array(high)],
      ['interior_padding', i64Array(inner)],
    ]);
  }

  /** The general StableHLO gather; see `take` for the common case. */
  gather(operand: HloValue, startIndices: HloValue, d: GatherDims): HloValue {
    this.use('gather', operand);
    this.use('gather', startIndices);
    if (!isIntegerType(startIndices.elementType))
      throw new HloBuildError(`gather: start indices must be integers, got ${startIndices.type}`);
    const opBatch = d.operandBatchingDims ?? [];
    const idxBatch = d.startIndicesBatchingDims ?? [];
    const r = operand.rank;
    if (d.sliceSizes.length !== r)
      throw new HloBuildError(`gather: ${d.sliceSizes.length} slice sizes for operand rank ${r}`);
    d.sliceSizes.forEach((s, i) => {
      if (!(s >= 0 && s <= operand.dims[i]))
        throw new HloBuildError(`gather: slice size ${s} for dim ${i} exceeds ${operand.dims[i]}`);
    });
    this.checkAxes('gather', d.collapsedSliceDims, r, 'collapsed slice dims');
    this.checkAxes('gather', opBatch, r, 'operand batching dims');
    this.checkAxes('gather', d.startIndexMap, r, 'start index map');
    for (const c of [...d.collapsedSliceDims, ...opBatch]) {
      if (d.sliceSizes[c] > 1)
        throw new HloBuildError(
          `gather: collapsed or batching dim ${c} must have slice size <= 1, got ${d.sliceSizes[c]}`,
        );
    }
    const ivd = d.indexVectorDim;
    if (!(ivd >= 0 && ivd <= startIndices.rank))
      throw new HloBuildError(`gather: index vector dim ${ivd} out of range for indices rank ${startIndices.rank}`);
    const indexVectorSize = ivd === startIndices.rank ? 1 : startIndices.dims[ivd];
    if (indexVectorSize !== d.startIndexMap.length) {
      throw new HloBuildError(
        `gather: index vectors have ${indexVectorSize} components but start index map has ${d.startIndexMap.length}`,
      );
    }
    const batchDims = startIndices.dims.filter((_, i) => i !== ivd);
    const offsetSizes = d.sliceSizes.filter((_, i) => !d.collapsedSliceDims.includes(i) && !opBatch.includes(i));
    if (d.offsetDims.length !== offsetSizes.length) {
      throw new HloBuildError(
        `gather: ${d.offsetDims.length} offset dims given, ${offsetSizes.length} slice dims remain after collapsing`,
      );
    }
    const outRank = batchDims.length + offsetSizes.length;
    this.checkAxes('gather', d.offsetDims, outRank, 'offset dims');
    if (idxBatch.length !== opBatch.length)
      throw new HloBuildError('gather: operand and start-indices batching dims differ in count');
    const dims: number[] = [];
    let o = 0;
    let b = 0;
    const sortedOffset = d.offsetDims.slice().sort((x, y) => x - y);
    for (let i = 0; i < outRank; i++) dims.push(sortedOffset.includes(i) ? offsetSizes[o++] : batchDims[b++]);
    const gd = [
      `offset_dims = [${d.offsetDims.join(', ')}]`,
      `collapsed_slice_dims = [${d.collapsedSliceDims.join(', ')}]`,
      ...(opBatch.length
        ? [`operand_batching_dims = [${opBatch.join(', ')}]`, `start_indices_batching_dims = [${idxBatch.join(', ')}]`]
        : []),
      `start_index_map = [${d.startIndexMap.join(', ')}]`,
      `index_vector_dim = ${ivd}`,
    ].join(', ');
    return this.emit1('gather', [operand, startIndices], operand.type.withDims(dims), [
      ['dimension_numbers', `#stablehlo.gather<${gd}>`],
      ['slice_sizes', i64Array(d.sliceSizes)],
      ['indices_are_sorted', d.indicesAreSorted ? 'true' : 'false'],
    ]);
  }

  /**
   * numpy-style `take(x, indices, axis)` with 1-D indices: replaces dim
   * `axis` of x by the indices' length. Out-of-range indices are clamped by
   * XLA; clamp them yourself when the clamped value matters.
   */
  take(x: HloValue, indices: HloValue, axis: number): HloValue {
    this.checkAxis('take', axis, x.rank);
    if (indices.rank !== 1) throw new HloBuildError(`take: indices must be 1-D, got ${indices.type}`);
    const sliceSizes = x.dims.map((d, i) => (i === axis ? 1 : d));
    const offsetDims = x.dims.map((_, i) => i).filter((i) => i !== axis);
    return this.gather(x, indices, {
      offsetDims,
      collapsedSliceDims: [axis],
      startIndexMap: [axis],
      indexVectorDim: 1,
      sliceSizes,
    });
  }
}
