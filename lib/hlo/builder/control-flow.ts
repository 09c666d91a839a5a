/**
 * Loops. `whileLoop` is StableHLO's while; `forLoop` is a counted loop on top
 * of it that also threads loop-invariant values (e.g. stacked per-layer
 * weights) through the loop state, because a loop body may only use its own
 * arguments: it never captures values from the enclosing function.
 */

import { HloValue, Operand } from './core';
import { ReduceBuilder } from './ops-reduce';
import { HloBuildError, TensorType, isIntegerType } from './types';

export interface ForLoopOptions {
  /** Trip count: a number, or an integer scalar computed in the program. */
  count: Operand;
  /** Values updated by each iteration; the loop returns their final values. */
  carried: readonly HloValue[];
  /** Values every iteration reads but never changes (weights, masks). */
  invariants?: readonly HloValue[];
}

export class ControlFlowBuilder extends ReduceBuilder {
  /**
   * `while (cond(state)) state = body(state)`; returns the final state.
   * `cond` returns a pred scalar, `body` the next state (same types).
   */
  whileLoop(
    init: readonly HloValue[],
    cond: (b: this, state: HloValue[]) => HloValue,
    body: (b: this, state: HloValue[]) => HloValue[],
  ): HloValue[] {
    if (!init.length) throw new HloBuildError('while: needs at least one loop-carried value');
    init.forEach((v) => this.use('while', v));
    const types = init.map((v) => v.type);
    const condRegion = this.buildRegion('while condition', types, (b, args) => [cond(b, args)], [
      new TensorType('pred', []),
    ]);
    const bodyRegion = this.buildRegion('while body', types, body, types);
    return this.emit('while', init, types, [], [condRegion, bodyRegion]);
  }

  /**
   * `for (i = 0; i < count; i++) carried = body(i, carried, invariants)`.
   * `i` is an s32 scalar (or the count's integer type).
   */
  forLoop(
    opts: ForLoopOptions,
    body: (b: this, i: HloValue, carried: HloValue[], invariants: HloValue[]) => HloValue[],
  ): HloValue[] {
    const invariants = opts.invariants ?? [];
    const count = typeof opts.count === 'number' ? this.scalar(opts.count, 's32') : this.use('forLoop', opts.count);
    if (count.rank !== 0 || !isIntegerType(count.elementType))
      throw new HloBuildError(`forLoop: count must be an integer scalar, got ${count.type}`);
    const nc = opts.carried.length;
    const init = [this.scalar(0, count.elementType), count, ...opts.carried, ...invariants];
    const final = this.whileLoop(
      init,
      (b, [i, n]) => b.lt(i, n),
      (b, [i, n, ...rest]) => {
        const carried = rest.slice(0, nc);
        const inv = rest.slice(nc);
        const next = body(b, i, carried, inv);
        if (!Array.isArray(next) || next.length !== nc) {
          throw new HloBuildError(
            `forLoop: the body returned ${Array.isArray(next) ? next.length : typeof next} values, ` +
              `expected ${nc} carried values`,
          );
        }
        return [b.add(i, 1), n, ...next, ...inv];
      },
    );
    return final.slice(2, 2 + nc);
  }
}
