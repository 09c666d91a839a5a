/**
 * `--warmup SPEC`: which request shapes to compile (after building the
 * tokenizer) before /health turns ready; with `none` nothing is, and the
 * first text request builds the tokenizer. SPEC is `none`, `default`, or a
 * comma-separated list of `QxLxN[@algorithm]`: a query of Q tokens with N items of L tokens each
 * (e.g. `32x8x16,128x16x64@prefix`). Each shape compiles the programs the
 * Scorer's plan for it uses (their buckets), so nearby shapes are warm too.
 */
import { PjrtScoreError } from '../../util/errors';
import { ALGORITHMS, type Algorithm, type WarmupShape } from '../../scoring';

/** Small requests of the kinds the Score API mostly sees: short queries, a few to a few dozen short items. */
export const DEFAULT_WARMUP: readonly WarmupShape[] = [
  { queryTokens: 16, itemTokens: 8, items: 4 },
  { queryTokens: 32, itemTokens: 16, items: 20 },
];

export class WarmupSpecError extends PjrtScoreError {
  declare readonly code: 'WARMUP_SPEC_INVALID';
  constructor(message: string) {
    super(message, 'WARMUP_SPEC_INVALID');
    this.name = 'WarmupSpecError';
  }
}

export function parseWarmupSpec(spec: string): readonly WarmupShape[] {
  const text = spec.trim();
  if (text === 'none') return [];
  if (text === 'default' || text === '') return DEFAULT_WARMUP;
  return text.split(',').map((part) => {
    const match = /^\s*(\d+)x(\d+)x(\d+)(?:@([a-z]+))?\s*$/.exec(part);
    if (!match) {
      throw new WarmupSpecError(
        `warmup shape ${JSON.stringify(part)} is not QxLxN[@algorithm] (query tokens x item tokens x items), ` +
          `e.g. 32x8x16`,
      );
    }
    const [queryTokens, itemTokens, items] = [match[1], match[2], match[3]].map(Number);
    if (queryTokens < 1 || items < 1)
      throw new WarmupSpecError(`warmup shape ${JSON.stringify(part)}: query tokens and items must be at least 1`);
    const algorithm = match[4];
    if (algorithm !== undefined && !(ALGORITHMS as readonly string[]).includes(algorithm)) {
      throw new WarmupSpecError(
        `warmup shape ${JSON.stringify(part)}: algorithm must be one of ${ALGORITHMS.join(', ')}`,
      );
    }
    return {
      queryTokens,
      itemTokens,
      items,
      ...(algorithm !== undefined ? { algorithm: algorithm as Algorithm } : {}),
    };
  });
}
