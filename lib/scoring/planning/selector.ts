/**
 * The `auto` plan choice: a cost model over the passes of each candidate plan.
 *
 * Costs are in FLOP-equivalents of useful and padded work (attention FLOPs
 * weighted by their measured relative cost), plus a fixed cost per pass.
 * item_first has no shared prefix, so it is always serial.
 *
 * The prefix cache is in the price (docs/design.md "Plans", the cache rule):
 * when it holds the request's query K/V, prefix costs its extend passes
 * alone; when it does not but would keep them, prefix is chosen as long as
 * it costs at most FIRST_REQUEST_ALLOWANCE more than the cheapest plan, so a
 * query seen for the first time leaves K/V the next request can hit.
 */
import { Algorithm, ALGORITHMS, makePlan, Pass, Plan, RequestShape, Sizing } from './plan';
import { CostConstants, platformFacts } from '../platform/profiles';

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
  /**
   * What the prefix cache did to an 'auto' choice: 'hit' when it held the query's K/V (prefix priced
   * at its extends alone), 'keep' when prefix was chosen to leave them for the next request.
   */
  readonly prefixCache?: 'hit' | 'keep';
}

/** What the prefix cache holds for one request's query, as the selector sees it (execution/prefix-cache.ts). */
export interface QueryInCache {
  /** Whether the cache holds this query's K/V computed at bucket P (a look, not a use). */
  holds(prefixBucket: number): boolean;
  /** Whether the cache would keep this query's K/V computed at bucket P (it is on and they fit). */
  keeps(prefixBucket: number): boolean;
  /**
   * Whether a request with this query ran before (the cache's doorkeeper): only then is keeping its K/V worth a price.
   */
  seen(): boolean;
}

/**
 * How much more than the cheapest plan a first-seen query's prefix plan may cost and still be chosen
 * (a fraction): what the first request pays so the next one with the same query hits the cache.
 * On SmolLM2 the PR shape's prefix costs about 1.12x its packed pass (one more pass, the same rows).
 */
export const FIRST_REQUEST_ALLOWANCE = 0.25;

/** The cost model of a model's shape on a platform (constants from platform/profiles.ts; the CPU's by default). */
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
function passCost(pass: Pass, m: CostModel): number {
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

/** A plan, or 'auto' (the selector picks per request). */
export type AlgorithmChoice = Algorithm | 'auto';
export const ALGORITHM_CHOICES: readonly AlgorithmChoice[] = ['auto', ...ALGORITHMS];

/**
 * The plan a request runs: `requested` when it names an algorithm, else the
 * cheapest candidate, with the prefix cache in the price when `cache` says
 * what it holds for this query. item_first and an empty query always run serial.
 */
export function choosePlan(
  shape: RequestShape,
  requested: Algorithm | 'auto',
  sizing: Sizing,
  m: CostModel,
  cache?: QueryInCache,
): PlanChoice {
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
  let hit = false;
  const candidates = (['packed', 'prefix', 'serial'] as const).map((a) => {
    const plan = makePlan(a, shape, sizing);
    if (a === 'prefix' && cache?.holds(plan.prefixBucket)) {
      // The prefill does not run: its K/V come from the cache.
      hit = true;
      return { plan, cost: planCost({ ...plan, passes: plan.passes.slice(1) }, m) };
    }
    return { plan, cost: planCost(plan, m) };
  });
  const costs: Partial<Record<Algorithm, number>> = {};
  for (const c of candidates) costs[c.plan.algorithm] = c.cost;
  // Stable on ties: the order above (packed, prefix, serial) wins.
  const best = candidates.reduce((a, b) => (b.cost < a.cost ? b : a));
  const prefix = candidates[1];
  if (best === prefix && hit)
    return {
      plan: best.plan,
      cost: best.cost,
      reason: "the prefix cache holds the query's K/V: prefix priced at its extend passes alone",
      costs,
      prefixCache: 'hit',
    };
  if (
    best !== prefix &&
    !hit &&
    cache?.seen() &&
    cache.keeps(prefix.plan.prefixBucket) &&
    prefix.cost <= best.cost * (1 + FIRST_REQUEST_ALLOWANCE)
  ) {
    const extra = Math.round(100 * (prefix.cost / best.cost - 1));
    return {
      plan: prefix.plan,
      cost: prefix.cost,
      reason:
        `a query seen before: prefix (${extra}% over ${best.plan.algorithm}) ` +
        `leaves its K/V in the prefix cache for the next request`,
      costs,
      prefixCache: 'keep',
    };
  }
  return { plan: best.plan, cost: best.cost, reason: 'lowest estimated cost', costs };
}
