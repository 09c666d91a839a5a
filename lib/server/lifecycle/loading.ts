/**
 * Loading: the Scorer loaded and warmed in the background while the routes
 * answer 503, then the state turns ready. A close during loading disposes
 * what was loaded and rejects.
 */
import { OptionError, rerankerAdvice } from '../../scoring';
import { ServeOptions, scorerSettingsOf } from '../settings/serve-settings';
import { DEFAULT_WARMUP } from '../settings/warmup-spec';
import { ServiceLogger, logEvent } from '../telemetry/log';
import { BackendLoadOptions, ScoringBackend, loadScorerBackend } from './scorer-backend';
import { ServiceState } from './service-state';

/** What loading takes from the service's options. */
export interface LoadingOptions {
  /**
   * Builds the backend instead of `Scorer.load` (tests, a Scorer shared with other code). It is
   * given the Scorer's settings; a Scorer made otherwise keeps its own limits and queue.
   */
  readonly loadBackend?: (options: BackendLoadOptions) => Promise<ScoringBackend>;
  /** Warmup progress bar stream (default stderr; false for none). */
  readonly warmupProgress?: NodeJS.WritableStream | false;
}

/** Loads and warms the backend into `state` and marks it ready; `stopping` is polled between the steps. */
export async function loadBackend(
  state: ServiceState,
  settings: ServeOptions,
  options: LoadingOptions,
  logger: ServiceLogger,
  stopping: () => boolean,
): Promise<void> {
  // Parts of loading are synchronous (reading the weights): start on a later turn of the
  // event loop, so the caller gets the service (and installs its signal handlers) first.
  await new Promise<void>((resolve) => setImmediate(resolve));
  if (stopping()) throw new Error('the service was closed before the model loaded');
  const started = performance.now();
  const scorerLog = logger.child({ source: 'scorer' });
  const loadOptions: BackendLoadOptions = {
    ...scorerSettingsOf(settings),
    log: (event) => {
      const { event: name, ...fields } = event;
      logEvent(scorerLog, 'info', typeof name === 'string' ? name : 'scorer', fields);
    },
  };
  const backend = await (options.loadBackend ?? loadScorerBackend)(loadOptions);
  if (stopping()) {
    backend.dispose();
    throw new Error('the service was closed while the model loaded');
  }
  state.attach(backend);
  checkDelimiter(settings, backend, logger);
  logEvent(logger, 'info', 'model_loaded', {
    model: backend.modelName,
    vocab_size: backend.config.vocabSize,
    context_length: backend.config.contextLength,
    seconds: round((performance.now() - started) / 1000),
  });
  const shapes = settings.warmup ?? DEFAULT_WARMUP;
  if (shapes.length > 0) {
    const warmStarted = performance.now();
    await backend.warmup(shapes, options.warmupProgress ?? process.stderr);
    logEvent(logger, 'info', 'warm', {
      shapes: shapes.length,
      seconds: round((performance.now() - warmStarted) / 1000),
      stats: backend.stats().jit,
    });
  }
  if (stopping()) throw new Error('the service was closed during warmup');
  const advice = rerankAdviceOf(backend);
  if (advice !== null) logEvent(logger, 'warn', 'not_a_reranker', { model: backend.modelName, message: advice });
  state.markReady();
  logEvent(logger, 'info', 'ready', {
    model: backend.modelName,
    algorithm: settings.algorithm,
    max_items: settings.maxItems,
    max_request_tokens: settings.maxRequestTokens,
    queue_size: settings.queueSize,
    timeout_ms: settings.timeoutMs,
    max_body_bytes: settings.maxBodyBytes,
    coalesce: settings.coalesce,
    batching: settings.batching,
    jit_cache_entries: settings.jitCacheEntries,
    prefix_cache_bytes: settings.prefixCacheBytes,
    seconds: round((performance.now() - started) / 1000),
  });
}

/** `--multi-item-scoring-delimiter` is for compatibility: it must name a token, and it changes nothing. */
function checkDelimiter(settings: ServeOptions, backend: ScoringBackend, logger: ServiceLogger): void {
  const id = settings.multiItemScoringDelimiter;
  if (id === undefined) return;
  const vocab = backend.config.vocabSize;
  if (!Number.isInteger(id) || id < 0 || id >= vocab) {
    throw new OptionError(
      `--multi-item-scoring-delimiter ${id} is not a token id of the model (vocabulary [0, ${vocab}))`,
    );
  }
  logEvent(logger, 'info', 'multi_item_scoring_delimiter_ignored', {
    token_id: id,
    message:
      'accepted for SGLang compatibility; pjrt-score delimits items by their lengths, ' +
      'so no delimiter token is placed in the sequence and this setting changes nothing',
  });
}

function round(seconds: number): number {
  return Math.round(seconds * 100) / 100;
}

/** The advice for a chat model used to rerank (scoring's rerankerAdvice), once at load; null for a reranker. */
export function rerankAdviceOf(backend: ScoringBackend): string | null {
  const template = backend.rerankTemplate;
  return template ? rerankerAdvice(backend.modelName, () => template.call(backend).template) : null;
}
