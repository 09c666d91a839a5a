/**
 * The `auto` plan choice: a cost model over FLOPs and passes.
 *
 * Costs are in FLOP-equivalents of useful and padded work (attention FLOPs
 * weighted by their measured relative cost), plus a fixed cost per pass.
 * item_first has no shared prefix, so it is always serial. A query whose K/V
 * is already cached makes prefix cheapest.
 */
import { Algorithm, Budget, Ladders, PlanInput, planPasses } from './plans';

export interface CostModel {
  /** FLOPs per token row for the projections and MLP (about 2 x layer params). */
  readonly flopsPerRow: number;
  /** FLOPs per (row, key) pair of attention (4 x heads x head dim x layers). */
  readonly flopsPerKey: number;
  /** Fixed cost of one execution, in FLOP-equivalents. */
  readonly flopsPerPass: number;
}

export interface Choice {
  readonly algorithm: Algorithm;
  readonly reason: string;
  /** Estimated cost of each candidate, FLOP-equivalents. */
  readonly costs: Partial<Record<Algorithm, number>>;
}

export function costModelFor(config: {
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
}): CostModel {
  const { hiddenSize: Dm, intermediateSize: F, numLayers: Ly, numHeads: Hq, numKvHeads: Hkv, headDim: D } = config;
  const params = Ly * (Dm * (Hq + 2 * Hkv) * D + Hq * D * Dm + 3 * Dm * F);
  return {
    flopsPerRow: 2 * params,
    flopsPerKey: FITTED.keyWeight * 4 * Hq * D * Ly,
    flopsPerPass: FITTED.flopsPerPass,
  };
}

/**
 * Fitted on the development machine (AMD EPYC, 2 cores) by
 * scripts/fit-cost-model.js, over 20 requests of 8 shapes and 3 plans
 * (largest error 24%): attention FLOPs cost 1.4x projection/MLP FLOPs, and a
 * pass costs ~48 ms of fixed work (the per-layer weight slices, launch,
 * transfers), i.e. 1.45e10 projection FLOPs. Re-run the script on other
 * hardware; only these ratios matter to the choice.
 */
const FITTED = { keyWeight: 1.405, flopsPerPass: 1.45e10 } as const;

function passCost(dims: Readonly<Record<string, number>>, program: string, m: CostModel): number {
  const { P = 0, N = 0, L = 0 } = dims;
  switch (program) {
    case 'decoder_prefill':
      return P * m.flopsPerRow + P * P * m.flopsPerKey + m.flopsPerPass;
    case 'decoder_extend':
      return N * L * m.flopsPerRow + N * L * (P + L) * m.flopsPerKey + m.flopsPerPass;
    case 'decoder_fused':
      return (P + N * L) * m.flopsPerRow + (P * P + N * L * (P + L)) * m.flopsPerKey + m.flopsPerPass;
    default:
      return Infinity;
  }
}

export function estimateCost(algorithm: Algorithm, input: PlanInput, ladders: Ladders, budget: Budget, m: CostModel, numHeads: number, prefixCached: boolean): number {
  const passes = planPasses(algorithm, input, ladders, budget, numHeads);
  return passes.reduce((sum, p) => sum + (prefixCached && p.ref.program === 'decoder_prefill' ? 0 : passCost(p.ref.dims, p.ref.program, m)), 0);
}

export function chooseAlgorithm(input: PlanInput, ladders: Ladders, budget: Budget, m: CostModel, numHeads: number, prefixCached: boolean): Choice {
  if (input.itemFirst) return { algorithm: 'serial', reason: 'item_first has no shared prefix', costs: {} };
  const costs: Partial<Record<Algorithm, number>> = {};
  for (const a of ['packed', 'prefix', 'serial'] as const) costs[a] = estimateCost(a, input, ladders, budget, m, numHeads, prefixCached);
  const best = (Object.entries(costs) as [Algorithm, number][]).sort((a, b) => a[1] - b[1])[0][0];
  return { algorithm: best, reason: prefixCached && best === 'prefix' ? 'query K/V cached' : 'lowest estimated cost', costs };
}
