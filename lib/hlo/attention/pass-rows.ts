/**
 * The rows of a factored pass (lib/hlo/decoder/pass-programs.ts, decoderFused), written once: group after group, each
 * group's P prefill rows then its N items of L rows, T = P + N x L rows a group. One group is one
 * request's [prefill ; items] with no group axis anywhere; G groups (a cross-request pass) are G such
 * blocks, so a group's rows are contiguous and a [G x T, ...] array is a [G, T, ...] one.
 */

import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError } from '../builder/types';

export class PassRows {
  /** Rows a group: P + N x L. */
  readonly perGroup: number;
  /** The group axis of per-group arrays: [] for one group, [G] for more. */
  readonly lead: readonly number[];

  constructor(
    readonly groups: number,
    readonly prefix: number,
    readonly items: number,
    readonly itemLength: number,
  ) {
    if (!(Number.isInteger(groups) && groups >= 1))
      throw new HloBuildError(`decoder: groups must be a positive integer, got ${groups}`);
    this.perGroup = prefix + items * itemLength;
    this.lead = groups === 1 ? [] : [groups];
  }

  /** All rows of the pass: G x T. */
  get total(): number {
    return this.groups * this.perGroup;
  }

  /** Rows [from, to) of every group of x [G x T, ...rest] -> [...lead, to - from, ...rest]. */
  part(f: FunctionBuilder, x: HloValue, from: number, to: number): HloValue {
    const rest = x.dims.slice(1);
    if (x.dims[0] !== this.total) throw new HloBuildError(`PassRows: expected ${this.total} rows, got ${x.type}`);
    if (this.groups === 1) return f.slice(x, [from, ...rest.map(() => 0)], [to, ...rest]);
    const grouped = f.reshape(x, [this.groups, this.perGroup, ...rest]);
    return f.slice(grouped, [0, from, ...rest.map(() => 0)], [this.groups, to, ...rest]);
  }

  /** The prefill rows of each group: [...lead, P, ...rest]. */
  prefill(f: FunctionBuilder, x: HloValue): HloValue {
    return this.part(f, x, 0, this.prefix);
  }

  /** The item rows of each group: [...lead, N x L, ...rest]. */
  itemRows(f: FunctionBuilder, x: HloValue): HloValue {
    return this.part(f, x, this.prefix, this.perGroup);
  }

  /** The inverse of prefill and itemRows: [...lead, P, ...rest] and [...lead, N x L, ...rest] -> [G x T, ...rest]. */
  join(f: FunctionBuilder, prefill: HloValue, items: HloValue): HloValue {
    return this.ungroup(f, this.joinPerGroup(f, prefill, items));
  }

  /** Each group's prefill rows then its item rows, the group axis kept: -> [...lead, T, ...rest]. */
  joinPerGroup(f: FunctionBuilder, prefill: HloValue, items: HloValue): HloValue {
    return f.concatenate([prefill, items], this.lead.length);
  }

  /**
   * Item rows [...lead, N x L, ...rest] at their place in each group, the prefill rows `fill`: -> [...lead, T,
   * ...rest].
   */
  atItemRows(f: FunctionBuilder, items: HloValue, fill: number): HloValue {
    const g = this.lead.length;
    const low = items.dims.map((_, i) => (i === g ? this.prefix : 0));
    return f.pad(
      items,
      fill,
      low,
      items.dims.map(() => 0),
    );
  }

  /** Per-group rows [...lead, R, ...rest] as one run of rows [G x R, ...rest] (x itself for one group). */
  ungroup(f: FunctionBuilder, x: HloValue): HloValue {
    return this.lead.length === 0 ? x : f.reshape(x, [this.groups * x.dims[1], ...x.dims.slice(2)]);
  }
}
