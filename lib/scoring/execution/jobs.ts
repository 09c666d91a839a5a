/**
 * The plans of a Scorer's calls: the one place requests, warmup and
 * explain() get plans from. Picks each request's plan with the prefix cache
 * in the price (planning/selector.ts), notes its query for the cache rule
 * (docs/design.md), and says whether it may share passes with other
 * requests (batching 'cross-request').
 */
import type { NormalizedRequest } from '../requests/request';
import { batchPrograms, canJoinBatch } from '../planning/batch-plan';
import { Algorithm, ProgramKey, programKeyString, RequestShape, shapeOf, Sizing } from '../planning/plan';
import {
  ALGORITHM_CHOICES,
  AlgorithmChoice,
  choosePlan,
  CostModel,
  PlanChoice,
  QueryInCache,
} from '../planning/selector';
import { PrefixCache } from './prefix-cache';
import type { ChosenJob } from './turns';

/** Warmup compiles the shared passes of up to this many waiting requests of one shape (batching 'cross-request'). */
const WARMUP_BATCH_REQUESTS = 16;

/** Shapes to compile before serving: a request of query length P, N items of length L. */
export interface WarmupShape {
  readonly queryTokens: number;
  readonly itemTokens: number;
  readonly items: number;
  readonly labels?: number;
  readonly algorithm?: Algorithm;
}

/** A warmup shape as a request shape: `items` items of `itemTokens` tokens. */
function warmupShape(s: WarmupShape): RequestShape {
  return {
    queryLength: s.queryTokens,
    itemLengths: new Array<number>(s.items).fill(s.itemTokens),
    labelCount: s.labels ?? 2,
    itemFirst: false,
  };
}

function isAlgorithmChoice(x: unknown): x is AlgorithmChoice {
  return (ALGORITHM_CHOICES as readonly unknown[]).includes(x);
}

interface JobPlannerOptions {
  readonly sizing: Sizing;
  readonly costModel: CostModel;
  readonly prefixCache: PrefixCache;
  /** The model's K/V size: what one query's K/V takes in the prefix cache. */
  readonly config: { readonly numLayers: number; readonly numKvHeads: number; readonly headDim: number };
  /** The `algorithm` setting: what a call that names none runs. */
  readonly defaultAlgorithm: AlgorithmChoice;
  /** Whether requests with different queries may share passes. */
  readonly crossRequest: boolean;
  /** Told once that item_first requests run serial. */
  readonly log: (event: Record<string, unknown>) => void;
}

export class JobPlanner {
  private loggedItemFirst = false;

  constructor(private readonly o: JobPlannerOptions) {}

  /** The plan of a request of this shape; a TypeError for an unknown algorithm. */
  planFor(shape: RequestShape, requested: AlgorithmChoice | undefined, cache?: QueryInCache): PlanChoice {
    const algorithm = requested ?? this.o.defaultAlgorithm;
    if (!isAlgorithmChoice(algorithm)) {
      throw new TypeError(`algorithm must be one of ${ALGORITHM_CHOICES.join(', ')}; got ${JSON.stringify(algorithm)}`);
    }
    return choosePlan(shape, algorithm, this.o.sizing, this.o.costModel, cache);
  }

  /** The plan of a request, the prefix cache looked at (no hit or miss counted). */
  choose(request: NormalizedRequest, requested: AlgorithmChoice | undefined): PlanChoice {
    const choice = this.planFor(shapeOf(request), requested, this.queryInCache(request.queryTokens));
    if (request.itemFirst && !this.loggedItemFirst) {
      this.o.log({
        event: 'item_first_serial',
        message: 'item_first requests run on the serial path (no shared query prefix)',
      });
      this.loggedItemFirst = true;
    }
    return choice;
  }

  /** The plan of a request, and whether it may share passes with other requests (batching 'cross-request'). */
  chosenJob(
    request: NormalizedRequest,
    requested: AlgorithmChoice | undefined,
    signal: AbortSignal | undefined,
  ): ChosenJob {
    const choice = this.choose(request, requested);
    // The doorkeeper: this query's next request may keep its K/V (docs/design.md, the cache rule).
    if (request.queryTokens.length > 0) this.o.prefixCache.noteSeen(request.queryTokens);
    // A query the prefix cache holds runs its own extends: cheaper than its query again in a shared pass.
    const joins =
      this.mayJoin(requested) && choice.prefixCache !== 'hit' && canJoinBatch(shapeOf(request), this.o.sizing);
    return { request, choice, joins, ...(signal ? { signal } : {}) };
  }

  /**
   * The programs requests of these shapes run: a shape's first request, and its second where that keeps
   * the query's K/V (the cache rule: its later requests' hits run the same prefix programs), may take
   * different plans: both; with batching 'cross-request', also the shared passes of 2 to
   * WARMUP_BATCH_REQUESTS waiting requests of each shape.
   */
  warmupPrograms(shapes: readonly WarmupShape[]): ProgramKey[] {
    const programs = new Map<string, ProgramKey>();
    const seen = (before: boolean): QueryInCache => ({
      holds: () => false,
      keeps: (P) => this.o.prefixCache.keeps(this.queryCacheBytes(P)),
      seen: () => before,
    });
    for (const { algorithm, ...s } of shapes) {
      const shape = warmupShape(s);
      for (const cache of [seen(false), seen(true)]) {
        for (const pass of this.planFor(shape, algorithm, cache).plan.passes)
          programs.set(programKeyString(pass.program), pass.program);
      }
      if (this.mayJoin(algorithm))
        for (const program of batchPrograms(shape, this.o.sizing, WARMUP_BATCH_REQUESTS))
          programs.set(programKeyString(program), program);
    }
    return [...programs.values()];
  }

  /**
   * Batching 'cross-request', and a plan that may be a group of a shared (packed) pass: a request that names serial or
   * prefix runs that plan.
   */
  private mayJoin(requested: AlgorithmChoice | undefined): boolean {
    const algorithm = requested ?? this.o.defaultAlgorithm;
    return this.o.crossRequest && (algorithm === 'auto' || algorithm === 'packed');
  }

  /** Bytes of one query's K/V at bucket P in the prefix cache (the prefill's k_cache and v_cache, f32). */
  private queryCacheBytes(P: number): number {
    const { numLayers, numKvHeads, headDim } = this.o.config;
    return 2 * numLayers * P * numKvHeads * headDim * 4;
  }

  /** What the prefix cache holds for this query, for the selector (a look: no hit or miss is counted). */
  private queryInCache(queryTokens: readonly number[]): QueryInCache {
    return {
      holds: (P) => this.o.prefixCache.has(PrefixCache.key(queryTokens, P)),
      keeps: (P) => this.o.prefixCache.keeps(this.queryCacheBytes(P)),
      seen: () => this.o.prefixCache.seen(queryTokens),
    };
  }
}
