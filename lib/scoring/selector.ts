/**
 * The `auto` plan choice: a cost model over the passes of each candidate plan.
 *
 * Costs are in FLOP-equivalents of useful and padded work (attention FLOPs
 * weighted by their measured relative cost), plus a fixed cost per pass.
 * item_first has no shared prefix, so it is always serial. The choice looks
 * at the request's shape only, never at what the prefix cache holds: a
 * request must run the same programs every time it is sent (docs/design.md
 * "Batch invariance"), so a cached query makes prefix cheaper but never flips the plan.
 */
import { Algorithm, makePlan, Pass, Plan, RequestShape, Sizing } from './plan';
import { CostConstants, platformFacts } from './platform';

export interface CostModel {
  /** FLOPs per token row for the projections and MLP (about 2 x layer params). */
  readonly flopsPerRow: number;
  /** FLOPs per (row, key) pair of attention (4 x heads x head dim x layers), weighted. */
  readonly flopsPerKey: number;
  /** Fixed cost of one execution, in FLOP-equivalents. */
  readonly flopsPerPass: number;
}

/** A plan with its estimated cost and why it was chosen. */
export interface PlanChoice {
  readonly plan: Plan;
  /** Estimated cost of the chosen plan, FLOP-equivalents. */
  readonly cost: number;
  readonly reason: string;
  /** Estimated cost of each candidate that was considered. */
  readonly costs: Partial<Record<Algorithm, number>>;
}

/** The cost model of a model's shape on a platform (constants from platform.ts; the CPU's by default). */
export function costModelFor(
  config: {
    hiddenSize: number;
    intermediateSize: number;
    numLayers: number;
    numHeads: number;
    numKvHeads: number;
    headDim: number;
  },
  constants: CostConstants = platformFacts('cpu').cost,
): CostModel {
  const { hiddenSize: Dm, intermediateSize: F, numLayers: Ly, numHeads: Hq, numKvHeads: Hkv, headDim: D } = config;
  const params = Ly * (Dm * (Hq + 2 * Hkv) * D + Hq * D * Dm + 3 * Dm * F);
  return {
    flopsPerRow: 2 * params,
    flopsPerKey: constants.keyWeight * 4 * Hq * D * Ly,
    flopsPerPass: constants.flopsPerPass,
  };
}

/** Estimated cost of one pass. */
export function passCost(pass: Pass, m: CostModel): number {
  const key = pass.program;
  const P = key.prefix;
  switch (key.program) {
    case 'decoder_prefill':
      return P * m.flopsPerRow + P * P * m.flopsPerKey + m.flopsPerPass;
    case 'decoder_extend': {
      const rows = key.items * key.itemLength;
      return rows * m.flopsPerRow + rows * (P + key.itemLength) * m.flopsPerKey + m.flopsPerPass;
    }
    case 'decoder_fused': {
      // Per group: its query and its items; groups share the pass's fixed cost.
      const rows = key.items * key.itemLength;
      const group = (P + rows) * m.flopsPerRow + (P * P + rows * (P + key.itemLength)) * m.flopsPerKey;
      return key.groups * group + m.flopsPerPass;
    }
  }
}

/** Estimated cost of a whole plan. */
export function planCost(plan: Plan, m: CostModel): number {
  return plan.passes.reduce((sum, pass) => sum + passCost(pass, m), 0);
}

/**
 * The plan a request runs: `requested` when it names an algorithm, else the
 * cheapest candidate. item_first and an empty query always run serial.
 */
export function choosePlan(shape: RequestShape, requested: Algorithm | 'auto', sizing: Sizing, m: CostModel): PlanChoice {
  if (shape.itemFirst || shape.queryLength === 0) {
    const plan = makePlan('serial', shape, sizing);
    const reason = shape.itemFirst ? 'item_first has no shared prefix' : 'an empty query has no shared prefix';
    return { plan, cost: planCost(plan, m), reason, costs: {} };
  }
  if (requested !== 'auto') {
    const plan = makePlan(requested, shape, sizing);
    const cost = planCost(plan, m);
    return { plan, cost, reason: 'requested', costs: { [requested]: cost } };
  }
  const candidates = (['packed', 'prefix', 'serial'] as const).map((a) => {
    const plan = makePlan(a, shape, sizing);
    return { plan, cost: planCost(plan, m) };
  });
  const costs: Partial<Record<Algorithm, number>> = {};
  for (const c of candidates) costs[c.plan.algorithm] = c.cost;
  // Stable on ties: the order above (packed, prefix, serial) wins.
  const best = candidates.reduce((a, b) => (b.cost < a.cost ? b : a));
  return { plan: best.plan, cost: best.cost, reason: 'lowest estimated cost', costs };
}
