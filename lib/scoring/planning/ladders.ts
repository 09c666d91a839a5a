/**
 * The bucket ladders a Scorer plans with (docs/design.md "Static shapes,
 * buckets, the JIT cache"), from the model's context and vocabulary and the
 * platform's rungs. Each ladder's rule, as bucketLadder reads it:
 * - tokens (serial S): 8, then powers of two from 8 with a 1.5x rung between,
 *   rounded up to multiples of 8, up to the context;
 * - itemTokens (L): from 8, the platform's itemTokenSteps, multiples of 4,
 *   up to the context;
 * - queryTokens (P of a one-request plan): from 8, the platform's
 *   queryTokenSteps, multiples of 4, up to the context;
 * - counts (items per pass): from 1, the platform's countSteps, up to 4096;
 * - labels: powers of two from 2 up to the vocabulary size.
 * A context or vocabulary below the ladder's first rung still gets that rung.
 */
import { bucketLadder, DEFAULT_TOKEN_BUCKETS } from './buckets';
import type { Ladders } from './plan';

/** The smallest token bucket of every token ladder. */
const MIN_TOKEN_BUCKET = 8;
/** The largest item-count bucket: items per pass. */
const MAX_COUNT_BUCKET = 4096;
/** Query and item lengths are multiples of this (every rung but the context). */
const ITEM_TOKEN_ALIGN = 4;

/** The platform's rungs the ladders take (platform/profiles.ts). */
interface LadderSteps {
  readonly countSteps: readonly number[];
  readonly queryTokenSteps: readonly number[];
  readonly itemTokenSteps: readonly number[];
}

/** The ladders of a model with `contextLength` tokens and `vocabSize` tokens, on a platform with `steps`. */
export function scorerLadders(contextLength: number, vocabSize: number, steps: LadderSteps): Ladders {
  const max = Math.max(contextLength, MIN_TOKEN_BUCKET);
  return {
    tokens: bucketLadder({ ...DEFAULT_TOKEN_BUCKETS, min: MIN_TOKEN_BUCKET, max }),
    itemTokens: bucketLadder({ min: MIN_TOKEN_BUCKET, max, steps: steps.itemTokenSteps, align: ITEM_TOKEN_ALIGN }),
    queryTokens: bucketLadder({ min: MIN_TOKEN_BUCKET, max, steps: steps.queryTokenSteps, align: ITEM_TOKEN_ALIGN }),
    counts: bucketLadder({ min: 1, max: MAX_COUNT_BUCKET, steps: steps.countSteps }),
    labels: bucketLadder({ min: 2, max: Math.max(2, vocabSize) }),
  };
}
