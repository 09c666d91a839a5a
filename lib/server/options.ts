/**
 * The service's settings, their defaults, and their environment variables.
 * The CLI reads flags, then these variables, then the defaults, in that order.
 */
import { ALGORITHM_CHOICES, AlgorithmChoice, WarmupShape } from './backend';
import { WarmupSpecError, parseWarmupSpec } from './warmup-spec';
import type { PrecisionOption as Precision } from '../scoring/precision-choice';
import type { Batching } from '../scoring/request-batcher';
import type { WeightChoice } from '../device-weights/choose';
import { DEFAULT_JIT_CACHE_ENTRIES, DEFAULT_PREFIX_CACHE_BYTES } from '../scoring/cache-limits';

export interface ServeOptions {
  /** GGUF file or Hugging Face directory; default PJRT_SCORE_MODEL, else the cached default model. */
  readonly model?: string;
  /** PJRT plugin .so; default PJRT_PLUGIN_PATH, else the cached CPU plugin. */
  readonly plugin?: string;
  readonly host: string;
  /** 0 picks a free port (the `listening` log line says which). */
  readonly port: number;
  readonly maxItems: number;
  readonly maxRequestTokens: number;
  readonly algorithm: AlgorithmChoice;
  /** Request shapes compiled before /health turns ready; [] for none; default DEFAULT_WARMUP. */
  readonly warmup?: readonly WarmupShape[];
  /** Accepted for SGLang command-line compatibility: checked against the vocabulary, changes nothing. */
  readonly multiItemScoringDelimiter?: number;
  /** Most requests waiting for the device; more get 429. */
  readonly queueSize: number;
  /** Per-request deadline from arrival to response; past it the answer is 504 and the work is dropped. */
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
  /** Run waiting requests that share a query in one Scorer call. */
  readonly coalesce: boolean;
  /** Rerank template name for /v1/rerank; default chosen from the model. */
  readonly rerankTemplate?: string;
  /** Dot precision: 'highest' (true f32, the default), 'default' (the platform's fast f32 mode, TF32 on NVIDIA) or 'bf16' (bf16 operands, f32 accumulation) or 'auto' (bf16 on CPUs with bf16 matrix units, else highest). */
  readonly precision?: Precision;
  /** How the weight matrices live on the device: f32 (default), bf16, int8 or auto (the Scorer's `weights` option). */
  readonly weights?: WeightChoice;
  /**
   * How requests with different queries share the device (the Scorer's
   * `batching` option): 'invariant' (default: each on its own plan, scores
   * bit for bit as alone) or 'cross-request' (waiting requests share passes).
   */
  readonly batching?: Batching;
  /** Compiled programs kept in memory (the Scorer's `jitCacheEntries`; default DEFAULT_JIT_CACHE_ENTRIES). */
  readonly jitCacheEntries?: number;
  /** Bytes of query K/V kept across requests (the Scorer's `prefixCacheBytes`; default DEFAULT_PREFIX_CACHE_BYTES). */
  readonly prefixCacheBytes?: number;
}

export const DEFAULT_SERVE_OPTIONS: ServeOptions = {
  host: '127.0.0.1',
  port: 30000,
  maxItems: 1024,
  maxRequestTokens: 65536,
  algorithm: 'auto',
  queueSize: 64,
  timeoutMs: 30000,
  maxBodyBytes: 8 * 1024 * 1024,
  coalesce: true,
};

/** One setting as the CLI and the environment spell it. */
export interface SettingSpec {
  readonly flag: string;
  readonly env: string;
  readonly kind: 'string' | 'integer' | 'algorithm' | 'boolean' | 'warmup';
  readonly key: keyof ServeOptions;
  readonly help: string;
  /** Smallest accepted integer. */
  readonly min?: number;
  /** The accepted values of a string setting (checked here, so a bad value fails before the model loads). */
  readonly choices?: readonly string[];
}

export const SERVE_SETTINGS: readonly SettingSpec[] = [
  { flag: 'model', env: 'PJRT_SCORE_MODEL', kind: 'string', key: 'model', help: 'GGUF file or Hugging Face directory (default: the cached SmolLM2-135M-Instruct)' },
  { flag: 'plugin', env: 'PJRT_PLUGIN_PATH', kind: 'string', key: 'plugin', help: 'PJRT plugin .so (default: the cached XLA CPU plugin)' },
  { flag: 'host', env: 'PJRT_SCORE_HOST', kind: 'string', key: 'host', help: `address to listen on (default ${DEFAULT_SERVE_OPTIONS.host})` },
  { flag: 'port', env: 'PJRT_SCORE_PORT', kind: 'integer', key: 'port', min: 0, help: `port; 0 picks a free one (default ${DEFAULT_SERVE_OPTIONS.port})` },
  { flag: 'max-items', env: 'PJRT_SCORE_MAX_ITEMS', kind: 'integer', key: 'maxItems', min: 1, help: `most items per request (default ${DEFAULT_SERVE_OPTIONS.maxItems})` },
  {
    flag: 'max-request-tokens',
    env: 'PJRT_SCORE_MAX_REQUEST_TOKENS',
    kind: 'integer',
    key: 'maxRequestTokens',
    min: 1,
    help: `most tokens per request, the query once plus every item (default ${DEFAULT_SERVE_OPTIONS.maxRequestTokens})`,
  },
  { flag: 'algorithm', env: 'PJRT_SCORE_ALGORITHM', kind: 'algorithm', key: 'algorithm', help: `${ALGORITHM_CHOICES.join('|')} (default auto: a cost model picks per request)` },
  {
    flag: 'warmup',
    env: 'PJRT_SCORE_WARMUP',
    kind: 'warmup',
    key: 'warmup',
    help: 'request shapes to compile (and the tokenizer to build) before /health turns ready: none (the first text request builds the tokenizer), default, or QxLxN[@algorithm],... (query tokens x item tokens x items; default 16x8x4,32x16x20)',
  },
  {
    flag: 'multi-item-scoring-delimiter',
    env: 'PJRT_SCORE_MULTI_ITEM_SCORING_DELIMITER',
    kind: 'integer',
    key: 'multiItemScoringDelimiter',
    min: 0,
    help: 'accepted for SGLang compatibility: must be a token id in the vocabulary; changes nothing (items are delimited by their lengths)',
  },
  { flag: 'queue-size', env: 'PJRT_SCORE_QUEUE_SIZE', kind: 'integer', key: 'queueSize', min: 0, help: `most requests waiting for the device; more get 429 (default ${DEFAULT_SERVE_OPTIONS.queueSize})` },
  { flag: 'timeout-ms', env: 'PJRT_SCORE_TIMEOUT_MS', kind: 'integer', key: 'timeoutMs', min: 1, help: `per-request deadline; past it 504 and the work is dropped (default ${DEFAULT_SERVE_OPTIONS.timeoutMs})` },
  { flag: 'max-body-bytes', env: 'PJRT_SCORE_MAX_BODY_BYTES', kind: 'integer', key: 'maxBodyBytes', min: 1, help: `largest request body; more get 413 (default ${DEFAULT_SERVE_OPTIONS.maxBodyBytes}, 8 MiB)` },
  { flag: 'precision', env: 'PJRT_SCORE_PRECISION', kind: 'string', key: 'precision', help: "dots: highest (true f32, default), default (the platform's fast f32 mode: TF32 on NVIDIA GPUs) , bf16 (bf16 operands, f32 accumulation: the GPU fast path; on the CPU the bf16 attention kernel) or auto (bf16 where the CPU has bf16 matrix units measured to pay, else highest)" },
  { flag: 'weights', env: 'PJRT_SCORE_WEIGHTS', kind: 'string', key: 'weights', help: 'weight matrices on the device: f32 (default), bf16 (half the memory), int8 (0.28x, blocks of 32 with an f32 scale) or auto (chosen for this platform and host)' },
  {
    flag: 'batching',
    env: 'PJRT_SCORE_BATCHING',
    kind: 'string',
    key: 'batching',
    choices: ['invariant', 'cross-request'],
    help: 'invariant (default: each request on its own plan, its scores bit for bit those it gets alone) or cross-request (waiting requests with different queries share device passes, within 1e-5 of alone)',
  },
  { flag: 'rerank-template', env: 'PJRT_SCORE_RERANK_TEMPLATE', kind: 'string', key: 'rerankTemplate', help: 'template of /v1/rerank: qwen3-reranker, chatml-yes-no or llama3-yes-no (default: chosen from the model)' },
  {
    flag: 'jit-cache-entries',
    env: 'PJRT_SCORE_JIT_CACHE_ENTRIES',
    kind: 'integer',
    key: 'jitCacheEntries',
    min: 1,
    help: `compiled programs kept in memory, least recently used evicted (default ${DEFAULT_JIT_CACHE_ENTRIES}; each holds host memory: see docs/service.md)`,
  },
  {
    flag: 'prefix-cache-bytes',
    env: 'PJRT_SCORE_PREFIX_CACHE_BYTES',
    kind: 'integer',
    key: 'prefixCacheBytes',
    min: 0,
    help: `bytes of query K/V kept across requests for prefix reuse, 0 for none (default ${DEFAULT_PREFIX_CACHE_BYTES}, ${DEFAULT_PREFIX_CACHE_BYTES / 2 ** 20} MiB)`,
  },
  { flag: 'no-coalesce', env: 'PJRT_SCORE_NO_COALESCE', kind: 'boolean', key: 'coalesce', help: 'do not merge waiting requests that share a query into one Scorer call' },
];

export class OptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OptionError';
  }
}

/**
 * Resolves the serve settings: `flags` (strings as parseArgs returns them)
 * win over `env`, which wins over the defaults. Throws OptionError with a
 * message naming the flag or variable at fault.
 */
export function resolveServeOptions(
  flags: Readonly<Record<string, string | boolean | undefined>>,
  env: NodeJS.ProcessEnv = process.env,
): ServeOptions {
  const out: Record<string, unknown> = { ...DEFAULT_SERVE_OPTIONS };
  for (const spec of SERVE_SETTINGS) {
    const fromFlag = flags[spec.flag];
    const fromEnv = env[spec.env];
    const source = fromFlag !== undefined ? `--${spec.flag}` : spec.env;
    const raw = fromFlag !== undefined ? fromFlag : fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined;
    if (raw === undefined) continue;
    if (spec.kind === 'boolean') {
      // --no-coalesce (flag true) or PJRT_SCORE_NO_COALESCE=1 turns coalescing off.
      const on = raw === true || raw === '1' || raw === 'true' || raw === 'yes';
      if (!on && raw !== false && raw !== '0' && raw !== 'false' && raw !== 'no') {
        throw new OptionError(`${source} must be 1/true or 0/false, got ${JSON.stringify(raw)}`);
      }
      out[spec.key] = !on;
      continue;
    }
    const text = String(raw);
    switch (spec.kind) {
      case 'string':
        if (text === '') throw new OptionError(`${source} must not be empty`);
        if (spec.choices && !spec.choices.includes(text)) throw new OptionError(`${source} must be one of ${spec.choices.join(', ')}, got ${JSON.stringify(text)}`);
        out[spec.key] = text;
        break;
      case 'integer':
        out[spec.key] = parseInteger(text, source, spec.min ?? 0);
        break;
      case 'warmup':
        try {
          out[spec.key] = parseWarmupSpec(text);
        } catch (error) {
          if (error instanceof WarmupSpecError) throw new OptionError(`${source}: ${error.message}`);
          throw error;
        }
        break;
      case 'algorithm':
        if (!(ALGORITHM_CHOICES as readonly string[]).includes(text)) {
          throw new OptionError(`${source} must be one of ${ALGORITHM_CHOICES.join(', ')}, got ${JSON.stringify(text)}`);
        }
        out[spec.key] = text;
        break;
    }
  }
  const options = out as unknown as ServeOptions;
  if (options.port > 65535) throw new OptionError(`port must be at most 65535, got ${options.port}`);
  return options;
}

export function parseInteger(text: string, source: string, min: number): number {
  if (!/^\s*\d+\s*$/.test(text)) throw new OptionError(`${source} must be an integer >= ${min}, got ${JSON.stringify(text)}`);
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min) throw new OptionError(`${source} must be an integer >= ${min}, got ${JSON.stringify(text)}`);
  return value;
}
