/**
 * The Scorer's settings, each written once: its key (the Scorer option), its
 * command-line flag and environment variable (the service's), its choices or
 * bounds, its default and its help. The service's table (server/options.ts)
 * is this one plus the rows only the service has; the CLI, the environment,
 * `createScoringService` and `Scorer.load` all read and check options through
 * these rows, so adding an option is adding a row.
 *
 * No imports that load the native addon: `pjrt-score serve --help` and the
 * option checks run before anything loads.
 */
import { PjrtScoreError } from '../util/errors';
import { WEIGHT_CHOICES } from '../device-weights/choose';
import { ALGORITHM_CHOICES, AlgorithmChoice } from './planning/selector';
import { RERANK_TEMPLATES } from './requests/rerank-template';
import { DEFAULT_JIT_CACHE_ENTRIES } from './execution/jit-cache';
import { PRECISIONS, PRECISION_OPTIONS, type Precision } from './platform/precision-choice';

export { DEFAULT_JIT_CACHE_ENTRIES, PRECISIONS, type Precision };

export { ALGORITHM_CHOICES, type AlgorithmChoice };

/** How requests may share the device (docs/scorer-api.md "Batching"). */
export type Batching = 'invariant' | 'cross-request';
export const BATCHINGS: readonly Batching[] = ['invariant', 'cross-request'];

/** Most items per request, by default. */
export const DEFAULT_MAX_ITEMS = 1024;
/** Most tokens per request (the query once plus every item), by default. */
export const DEFAULT_MAX_REQUEST_TOKENS = 65536;
/**
 * Bytes of query K/V the prefix cache keeps by default, least recently used
 * evicted past it (the JIT cache's cap: execution/jit-cache.ts); what one
 * entry costs in memory, as measured: docs/service.md ("Memory").
 */
export const DEFAULT_PREFIX_CACHE_BYTES = 512 * 2 ** 20;
/** Most calls waiting in the admission queue, by default. */
const DEFAULT_QUEUE_SIZE = 64;

/** A bad setting from the command line or the environment: a usage error (exit 2). */
export class OptionError extends PjrtScoreError {
  declare readonly code: 'OPTION_INVALID';
  constructor(message: string) {
    super(message, 'OPTION_INVALID');
    this.name = 'OptionError';
  }
}

/** One setting: how the CLI and the environment spell it, how a text becomes its value, how a value is checked. */
export interface Setting<K extends string = string, V = unknown> {
  readonly key: K;
  readonly flag: string;
  readonly env: string;
  readonly kind: 'string' | 'integer' | 'choice' | 'switch-off' | 'custom';
  readonly help: string;
  /** The placeholder in --help (`--flag METAVAR`). */
  readonly metavar: string;
  readonly default?: V;
  /** Smallest accepted integer. */
  readonly min?: number;
  /** The accepted values. */
  readonly choices?: readonly string[];
  /** A flag's or variable's text -> the value; OptionError naming `source` and what is accepted. */
  parse(text: string | boolean, source: string): V;
  /** A library caller's value; TypeError naming the key and what is accepted. */
  check(value: unknown): void;
}

type Extra<D> = D extends undefined ? object : { readonly default: D };
interface Spelling {
  readonly flag: string;
  readonly env: string;
  readonly help: string;
}

export function stringSetting<K extends string, D extends string | undefined = undefined>(
  key: K,
  spec: Spelling & { readonly metavar?: string; readonly default?: D },
): Setting<K, string> & Extra<D> {
  return {
    key,
    ...spec,
    kind: 'string',
    metavar: spec.metavar ?? 'VALUE',
    parse: (text, source) => {
      if (typeof text !== 'string' || text === '') throw new OptionError(`${source} must not be empty`);
      return text;
    },
    check: (value) => {
      if (typeof value !== 'string' || value === '')
        throw new TypeError(`${key} must be a non-empty string, got ${JSON.stringify(value)}`);
    },
  } as Setting<K, string> & Extra<D>;
}

export function integerSetting<K extends string, D extends number | undefined = undefined>(
  key: K,
  spec: Spelling & { readonly min: number; readonly default?: D },
): Setting<K, number> & Extra<D> {
  const { min } = spec;
  return {
    key,
    ...spec,
    kind: 'integer',
    metavar: 'N',
    parse: (text, source) => {
      const value = typeof text === 'string' && /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
      if (!Number.isSafeInteger(value) || value < min)
        throw new OptionError(`${source} must be an integer >= ${min}, got ${JSON.stringify(text)}`);
      return value;
    },
    check: (value) => {
      if (!(typeof value === 'number' && Number.isSafeInteger(value) && value >= min))
        throw new TypeError(`${key} must be an integer >= ${min}, got ${String(value)}`);
    },
  } as Setting<K, number> & Extra<D>;
}

export function choiceSetting<K extends string, C extends string, D extends C | undefined = undefined>(
  key: K,
  choices: readonly C[],
  spec: Spelling & { readonly default?: D },
): Setting<K, C> & Extra<D> {
  const accepted = choices.join(', ');
  return {
    key,
    ...spec,
    kind: 'choice',
    metavar: 'NAME',
    choices,
    parse: (text, source) => {
      if (typeof text !== 'string' || !(choices as readonly string[]).includes(text))
        throw new OptionError(`${source} must be one of ${accepted}, got ${JSON.stringify(text)}`);
      return text as C;
    },
    check: (value) => {
      if (!(choices as readonly unknown[]).includes(value))
        throw new TypeError(`${key} must be one of ${accepted}; got ${JSON.stringify(value)}`);
    },
  } as Setting<K, C> & Extra<D>;
}

/** A boolean on by default that a bare flag (`--no-x`) or `VAR=1` turns off. */
export function switchOffSetting<K extends string>(
  key: K,
  spec: Spelling,
): Setting<K, boolean> & { readonly default: true } {
  return {
    key,
    ...spec,
    kind: 'switch-off',
    metavar: '',
    default: true,
    parse: (raw, source) => {
      if (raw === true || raw === '1' || raw === 'true' || raw === 'yes') return false;
      if (raw === false || raw === '0' || raw === 'false' || raw === 'no') return true;
      throw new OptionError(`${source} must be 1/true or 0/false, got ${JSON.stringify(raw)}`);
    },
    check: (value) => {
      if (typeof value !== 'boolean') throw new TypeError(`${key} must be a boolean, got ${JSON.stringify(value)}`);
    },
  };
}

/** The Scorer's rows. The service's table (server/options.ts) adds its own. */
export const SCORER_SETTINGS = [
  stringSetting('model', {
    flag: 'model',
    env: 'PJRT_SCORE_MODEL',
    metavar: 'PATH|ID',
    help:
      'GGUF file or Hugging Face directory, or a hub id: org/repo, org/repo/file.gguf, hf:org/repo:QUANT, each ' +
      'with @REVISION; fetched into the hub cache, ' +
      'HF_TOKEN for gated repos (default: the cached SmolLM2-135M-Instruct)',
  }),
  stringSetting('plugin', {
    flag: 'plugin',
    env: 'PJRT_PLUGIN_PATH',
    metavar: 'PATH',
    help: 'PJRT plugin .so, or cuda (an installed jax CUDA plugin) (default: the cached XLA CPU plugin)',
  }),
  integerSetting('maxItems', {
    flag: 'max-items',
    env: 'PJRT_SCORE_MAX_ITEMS',
    min: 1,
    default: DEFAULT_MAX_ITEMS,
    help: `most items per request (default ${DEFAULT_MAX_ITEMS})`,
  }),
  integerSetting('maxRequestTokens', {
    flag: 'max-request-tokens',
    env: 'PJRT_SCORE_MAX_REQUEST_TOKENS',
    min: 1,
    default: DEFAULT_MAX_REQUEST_TOKENS,
    help: `most tokens per request, the query once plus every item (default ${DEFAULT_MAX_REQUEST_TOKENS})`,
  }),
  choiceSetting('algorithm', ALGORITHM_CHOICES, {
    flag: 'algorithm',
    env: 'PJRT_SCORE_ALGORITHM',
    default: 'auto',
    help: `${ALGORITHM_CHOICES.join('|')} (default auto: a cost model picks per request)`,
  }),
  choiceSetting('precision', PRECISION_OPTIONS, {
    flag: 'precision',
    env: 'PJRT_SCORE_PRECISION',
    default: 'auto',
    help:
      'dots: auto (default: bf16 on NVIDIA GPUs, and on CPUs with bf16 dot units for a checkpoint stored in bf16 ' +
      'or f16, as transformers, vLLM and TEI run it; else highest), highest (true f32), ' +
      "default (the platform's fast f32 mode: TF32 on NVIDIA GPUs) or bf16 (bf16 operands, f32 accumulation)",
  }),
  choiceSetting('weights', WEIGHT_CHOICES, {
    flag: 'weights',
    env: 'PJRT_SCORE_WEIGHTS',
    default: 'auto',
    help:
      'weight matrices on the device: auto (default: a bf16 checkpoint stays bf16 where the dots read it as ' +
      'stored; else the fastest type for this platform that fits), f32, ' +
      'bf16 (half the memory) or int8 (0.28x, blocks of 32 with an f32 scale)',
  }),
  choiceSetting('batching', BATCHINGS, {
    flag: 'batching',
    env: 'PJRT_SCORE_BATCHING',
    default: 'invariant',
    help:
      'invariant (default: each request on its own plan, its scores bit for bit those it gets alone) or ' +
      'cross-request (waiting requests with different queries share device passes, ' +
      'within f32 rounding of alone: docs/design.md, Batch invariance)',
  }),
  choiceSetting('rerankTemplate', Object.keys(RERANK_TEMPLATES), {
    flag: 'rerank-template',
    env: 'PJRT_SCORE_RERANK_TEMPLATE',
    help: `template of /v1/rerank: ${Object.keys(RERANK_TEMPLATES).join(', ')} (default: chosen from the model)`,
  }),
  integerSetting('queueSize', {
    flag: 'queue-size',
    env: 'PJRT_SCORE_QUEUE_SIZE',
    min: 0,
    default: DEFAULT_QUEUE_SIZE,
    help:
      `most requests waiting for the device; ` +
      `more are refused (QueueFullError; HTTP 429) (default ${DEFAULT_QUEUE_SIZE})`,
  }),
  switchOffSetting('coalesce', {
    flag: 'no-coalesce',
    env: 'PJRT_SCORE_NO_COALESCE',
    help: 'do not run waiting requests that share a query in one turn of the device',
  }),
  integerSetting('jitCacheEntries', {
    flag: 'jit-cache-entries',
    env: 'PJRT_SCORE_JIT_CACHE_ENTRIES',
    min: 1,
    default: DEFAULT_JIT_CACHE_ENTRIES,
    help:
      `compiled programs kept in memory, least recently used evicted (default ${DEFAULT_JIT_CACHE_ENTRIES}; ` +
      `each holds host memory: see docs/service.md)`,
  }),
  integerSetting('prefixCacheBytes', {
    flag: 'prefix-cache-bytes',
    env: 'PJRT_SCORE_PREFIX_CACHE_BYTES',
    min: 0,
    default: DEFAULT_PREFIX_CACHE_BYTES,
    help:
      `bytes of query K/V kept across requests for prefix reuse, ` +
      `0 for none (default ${DEFAULT_PREFIX_CACHE_BYTES}, ${DEFAULT_PREFIX_CACHE_BYTES / 2 ** 20} MiB)`,
  }),
] as const;

type ValueOf<S> = S extends Setting<string, infer V> ? V : never;
/** The options a table of settings defines, every one optional (what a caller passes). */
export type SettingValues<T extends readonly Setting[]> = { readonly [S in T[number] as S['key']]?: ValueOf<S> };
/** The options a table defines once resolved: those with a default are always there. */
export type ResolvedSettings<T extends readonly Setting[]> = {
  readonly [S in T[number] as S extends { readonly default: unknown } ? S['key'] : never]: ValueOf<S>;
} & {
  readonly [S in T[number] as S extends { readonly default: unknown } ? never : S['key']]?: ValueOf<S>;
};

/** The Scorer options its settings table defines. */
export type ScorerSettings = SettingValues<typeof SCORER_SETTINGS>;

/** Each table default, by key. */
export function settingDefaults<T extends readonly Setting[]>(table: T): ResolvedSettings<T> {
  const out: Record<string, unknown> = {};
  for (const s of table) if (s.default !== undefined) out[s.key] = s.default;
  return out as ResolvedSettings<T>;
}

/** The table's options present in `options` (undefined ones left out), each checked by its row (TypeError). */
export function pickSettings<T extends readonly Setting[]>(
  table: T,
  options: object,
  skip: (setting: Setting) => boolean = () => false,
): SettingValues<T> {
  const out: Record<string, unknown> = {};
  for (const s of table) {
    const value = (options as Record<string, unknown>)[s.key];
    if (value === undefined || skip(s)) continue;
    s.check(value);
    out[s.key] = value;
  }
  return out as SettingValues<T>;
}
