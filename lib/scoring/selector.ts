/**
 * The `auto` plan choice: a cost model over FLOPs and passes.
 *
 * Costs are in FLOPs of useful and padded work, plus a fixed cost per pass
 * (launch, upload, readback). item_first has no shared prefix, so it is
 * always serial. A query whose K/V is already cached makes prefix cheapest.
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
    flopsPerKey: 4 * Hq * D * Ly,
    // ~2 ms of fixed cost per execution at ~150 GFLOP/s.
    flopsPerPass: 3e8,
  };
}

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
