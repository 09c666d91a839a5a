/**
 * PJRT_SCORE_PLATFORM_FACTS: a measurement knob (docs/gpu.md, "Options that
 * matter there"). A JSON object merged over the platform's facts
 * (profiles.ts) for the facts that say how bf16 weights and products are
 * typed, how fine the ladders are and which XLA options programs
 * compile with, so one lent GPU call can run the variants side by side:
 *
 *   PJRT_SCORE_PLATFORM_FACTS='{"bf16Matrices":"u16","bf16Products":false}'
 *   PJRT_SCORE_PLATFORM_FACTS='{"xlaOptions":{}}'
 *   PJRT_SCORE_PLATFORM_FACTS='{"matmulKernel":false}'
 *
 * Read and validated at Scorer load, before anything loads: an unknown key
 * or a bad value is an error naming the variable. The variants are other
 * programs (their names carry `_mbf16` / `_pbf16` / `_mmk`, and the JIT disk cache
 * keys on the text) or another cache namespace (the XLA options, execution/compiler.ts),
 * so they never share an executable. xlaOptions replaces the platform's
 * options whole (a Scorer's own xlaOptions still go over it).
 */
import { BF16_MATRICES, Bf16Matrices } from '../../hlo';
import { xlaOptionsProblem, XlaOptions } from '../../runtime/xla-options';
import type { PlatformFacts } from './profiles';

export const PLATFORM_FACTS_ENV = 'PJRT_SCORE_PLATFORM_FACTS';

/** The facts the variable may set. */
export type PlatformFactsOverride = Partial<
  Pick<
    PlatformFacts,
    | 'bf16Matrices'
    | 'bf16Products'
    | 'matmulKernel'
    | 'matmulKernelF32'
    | 'countSteps'
    | 'queryTokenSteps'
    | 'itemTokenSteps'
    | 'xlaOptions'
  >
>;

/** Ladder rungs between powers of two: multipliers in (1, 2) (planning/buckets.ts). */
const isSteps = (v: unknown): boolean => Array.isArray(v) && v.every((x) => typeof x === 'number' && x > 1 && x < 2);

const CHECKS: {
  readonly [K in keyof Required<PlatformFactsOverride>]: {
    readonly ok: (v: unknown) => boolean;
    readonly want: string;
  };
} = {
  bf16Matrices: {
    ok: (v) => (BF16_MATRICES as readonly unknown[]).includes(v),
    want: BF16_MATRICES.map((m) => JSON.stringify(m)).join(' or '),
  },
  bf16Products: { ok: (v) => typeof v === 'boolean', want: 'true or false' },
  matmulKernel: { ok: (v) => typeof v === 'boolean', want: 'true or false' },
  matmulKernelF32: { ok: (v) => typeof v === 'boolean', want: 'true or false' },
  countSteps: { ok: isSteps, want: 'an array of numbers in (1, 2)' },
  queryTokenSteps: { ok: isSteps, want: 'an array of numbers in (1, 2)' },
  itemTokenSteps: { ok: isSteps, want: 'an array of numbers in (1, 2)' },
  xlaOptions: { ok: (v) => xlaOptionsProblem(v) === null, want: 'an object { xla_name: boolean | number | string }' },
};

/**
 * The override in `env` (default process.env); {} when the variable is unset or empty. Throws TypeError on a bad one.
 */
export function platformFactsOverride(env: NodeJS.ProcessEnv = process.env): PlatformFactsOverride {
  const text = env[PLATFORM_FACTS_ENV];
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new TypeError(
      `${PLATFORM_FACTS_ENV} must be a JSON object, got ${JSON.stringify(text)} (${(err as Error).message})`,
      { cause: err },
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new TypeError(`${PLATFORM_FACTS_ENV} must be a JSON object, got ${JSON.stringify(text)}`);
  }
  const known = Object.keys(CHECKS);
  const out: { -readonly [K in keyof PlatformFactsOverride]: PlatformFactsOverride[K] } = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!Object.prototype.hasOwnProperty.call(CHECKS, key))
      throw new TypeError(`${PLATFORM_FACTS_ENV}: unknown key ${JSON.stringify(key)} (known: ${known.join(', ')})`);
    const check = CHECKS[key as keyof typeof CHECKS];
    if (!check.ok(value)) {
      const why = key === 'xlaOptions' ? ` (${xlaOptionsProblem(value)})` : '';
      throw new TypeError(`${PLATFORM_FACTS_ENV}: ${key} must be ${check.want}, got ${JSON.stringify(value)}${why}`);
    }
    if (key === 'bf16Matrices') out.bf16Matrices = value as Bf16Matrices;
    else if (key === 'bf16Products') out.bf16Products = value as boolean;
    else if (key === 'matmulKernel') out.matmulKernel = value as boolean;
    else if (key === 'matmulKernelF32') out.matmulKernelF32 = value as boolean;
    else if (key === 'xlaOptions') out.xlaOptions = Object.freeze({ ...(value as XlaOptions) });
    else if (key === 'queryTokenSteps') out.queryTokenSteps = value as number[];
    else if (key === 'itemTokenSteps') out.itemTokenSteps = value as number[];
    else out.countSteps = value as number[];
  }
  return out;
}

/** The facts with the override merged in; `overridden` names the facts the variable set. */
export function withOverride(facts: PlatformFacts, override: PlatformFactsOverride): PlatformFacts {
  const overridden = Object.keys(override) as (keyof PlatformFactsOverride)[];
  return overridden.length ? { ...facts, ...override, overridden } : facts;
}
