/**
 * The service's settings: the Scorer's rows (scoring/options.ts) and the
 * rows only the service has, each with its flag, environment variable,
 * default and help. The CLI reads flags, then these variables, then the
 * defaults, in that order; `createScoringService` takes the same keys.
 */
import {
  OptionError,
  ResolvedSettings,
  SCORER_SETTINGS,
  Setting,
  SettingValues,
  integerSetting,
  pickSettings,
  settingDefaults,
  stringSetting,
  switchOffSetting,
} from '../../scoring';
import type { WarmupShape } from '../../scoring';
import { NETWORK_SETTINGS } from '../network/network-settings';
import { WarmupSpecError, parseWarmupSpec } from './warmup-spec';

export { OptionError };
export type SettingSpec = Setting;

/** `--warmup SPEC`: request shapes compiled before /health turns ready. */
const warmupSetting: Setting<'warmup', readonly WarmupShape[]> = {
  key: 'warmup',
  flag: 'warmup',
  env: 'PJRT_SCORE_WARMUP',
  kind: 'custom',
  metavar: 'SPEC',
  help:
    'request shapes to compile (and the tokenizer to build) before /health turns ready: none (the first text ' +
    'request builds the tokenizer), default, ' +
    'or QxLxN[@algorithm],... (query tokens x item tokens x items; default 16x8x4,32x16x20)',
  parse: (text, source) => {
    try {
      return parseWarmupSpec(String(text));
    } catch (error) {
      if (error instanceof WarmupSpecError) throw new OptionError(`${source}: ${error.message}`);
      throw error;
    }
  },
  check: (value) => {
    if (!Array.isArray(value)) throw new TypeError(`warmup must be an array of shapes, got ${JSON.stringify(value)}`);
  },
};

const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 30000;
const DEFAULT_TIMEOUT_MS = 30000;
const DEFAULT_MAX_BODY_BYTES = 8 * 2 ** 20;

export const SERVE_SETTINGS = [
  ...SCORER_SETTINGS,
  stringSetting('host', {
    flag: 'host',
    env: 'PJRT_SCORE_HOST',
    metavar: 'HOST',
    default: DEFAULT_HOST,
    help: `address to listen on (default ${DEFAULT_HOST})`,
  }),
  integerSetting('port', {
    flag: 'port',
    env: 'PJRT_SCORE_PORT',
    min: 0,
    default: DEFAULT_PORT,
    help: `port; 0 picks a free one (default ${DEFAULT_PORT})`,
  }),
  warmupSetting,
  integerSetting('multiItemScoringDelimiter', {
    flag: 'multi-item-scoring-delimiter',
    env: 'PJRT_SCORE_MULTI_ITEM_SCORING_DELIMITER',
    min: 0,
    help:
      'accepted for SGLang compatibility: must be a token id in the vocabulary; ' +
      'changes nothing (items are delimited by their lengths)',
  }),
  integerSetting('timeoutMs', {
    flag: 'timeout-ms',
    env: 'PJRT_SCORE_TIMEOUT_MS',
    min: 1,
    default: DEFAULT_TIMEOUT_MS,
    help:
      `per-request deadline; past it 504 and the work is dropped, ` +
      `or 408 when the body has not all arrived (default ${DEFAULT_TIMEOUT_MS})`,
  }),
  integerSetting('drainDelayMs', {
    flag: 'drain-delay-ms',
    env: 'PJRT_SCORE_DRAIN_DELAY_MS',
    min: 0,
    default: 0,
    help:
      'on SIGTERM/SIGINT, fail readiness (/health, /readyz 503) and keep serving this long ' +
      'before the drain refuses new work, so gateways and Kubernetes stop sending first (default 0)',
  }),
  integerSetting('maxBodyBytes', {
    flag: 'max-body-bytes',
    env: 'PJRT_SCORE_MAX_BODY_BYTES',
    min: 1,
    default: DEFAULT_MAX_BODY_BYTES,
    help:
      `largest request body; more get 413 (default ${DEFAULT_MAX_BODY_BYTES}, ` +
      `${DEFAULT_MAX_BODY_BYTES / 2 ** 20} MiB)`,
  }),
  switchOffSetting('docs', {
    flag: 'no-docs',
    env: 'PJRT_SCORE_NO_DOCS',
    help: 'do not serve the interactive API reference at /docs (Swagger UI over /openapi.json, from the package)',
  }),
  ...NETWORK_SETTINGS,
] as const;

/**
 * The service's options, as the settings table defines them: the Scorer's
 * (model, plugin, algorithm, limits, precision, weights, batching, rerank
 * template, cache caps) and the service's own (host, port, warmup shapes,
 * delimiter, queue size, deadline, body limit, coalescing). Help per option:
 * the table's rows, `pjrt-score serve --help`.
 */
export type ServeOptions = ResolvedSettings<typeof SERVE_SETTINGS>;

export const DEFAULT_SERVE_OPTIONS: ServeOptions = settingDefaults(SERVE_SETTINGS);

/** The Scorer's options among `options` (each checked). */
export function scorerSettingsOf(options: object): SettingValues<typeof SCORER_SETTINGS> {
  return pickSettings(SCORER_SETTINGS, options);
}

/** The service's options among `options` (each checked: TypeError naming the key); the rest is left out. */
export function serveSettingsOf(options: object): SettingValues<typeof SERVE_SETTINGS> {
  return pickSettings(SERVE_SETTINGS, options);
}

/**
 * Resolves the serve settings: `flags` (strings as parseArgs returns them)
 * win over `env`, which wins over the defaults. Throws OptionError with a
 * message naming the flag or variable at fault.
 */
export function resolveServeOptions(
  flags: Readonly<Record<string, string | boolean | readonly string[] | undefined>>,
  env: NodeJS.ProcessEnv = process.env,
): ServeOptions {
  const out: Record<string, unknown> = { ...DEFAULT_SERVE_OPTIONS };
  for (const spec of SERVE_SETTINGS as readonly Setting[]) {
    const given = flags[spec.flag];
    // A repeated flag (--api-key a --api-key b) reads as the variable's comma-separated list.
    const fromFlag = Array.isArray(given) ? given.join(',') : (given as string | boolean | undefined);
    const fromEnv = env[spec.env];
    const source = fromFlag !== undefined ? `--${spec.flag}` : spec.env;
    const raw = fromFlag !== undefined ? fromFlag : fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined;
    if (raw === undefined) continue;
    out[spec.key] = spec.parse(raw, source);
  }
  const options = out as unknown as ServeOptions;
  if (options.port > 65535) throw new OptionError(`port must be at most 65535, got ${options.port}`);
  if ((options.tlsCert === undefined) !== (options.tlsKey === undefined))
    throw new OptionError('--tls-cert and --tls-key go together: give both or neither');
  return options;
}
