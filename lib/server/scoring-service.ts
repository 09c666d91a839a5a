/**
 * createScoringService: the service without a listener, to mount in a host
 * (a fastify plugin, an express-style router) or to serve standalone
 * (server.ts). It loads and warms the Scorer in the background (the routes
 * answer 503 until then), reports through the caller's pino-compatible
 * logger and prom-client registry, and drains on close().
 */
import { Registry, collectDefaultMetrics } from 'prom-client';
import { AccessGate, AuthorizeHook, hookGate } from './access';
import { BackendLoadOptions, ScoringBackend, loadScorerBackend } from './backend';
import { FastifyPluginLike, createFastifyPlugin } from './fastify-plugin';
import { ServiceLogger, createLogger, logEvent } from './log';
import { ExpressStyleHandler, RequestListener, createExpressRouter, createRequestListener } from './node-handler';
import { DEFAULT_SERVE_OPTIONS, OptionError, ServeOptions, scorerSettingsOf, serveSettingsOf } from './options';
import { NetworkSettingKey } from './network-options';
import { MountOptions, ROUTES, selectRoutes } from './routes';
import { Phase, ServiceState } from './service';
import { DEFAULT_WARMUP } from './warmup-spec';

/** The service's settings (ServeOptions without the listener's host and port) and what it reports to. */
export interface ScoringServiceOptions extends Partial<Omit<ServeOptions, 'host' | 'port' | 'drainDelayMs' | NetworkSettingKey>> {
  /** Any pino-compatible logger (pino, fastify's `app.log`); default pino on stdout. */
  readonly logger?: ServiceLogger;
  /** The prom-client registry our metrics join; default a registry of our own (`service.registry`). */
  readonly registry?: Registry;
  /** Also collect prom-client's default process metrics into the registry (skipped if it has them). Default false. */
  readonly processMetrics?: boolean;
  /**
   * Builds the backend instead of `Scorer.load` (tests, a Scorer shared with other code). It is
   * given the Scorer's settings; a Scorer made otherwise keeps its own limits and queue.
   */
  readonly loadBackend?: (options: BackendLoadOptions) => Promise<ScoringBackend>;
  /** Warmup progress bar stream (default stderr; false for none). */
  readonly warmupProgress?: NodeJS.WritableStream | false;
}

export interface ScoringService {
  /** Resolves once the model is loaded and warm; rejects if loading or warmup failed. */
  readonly ready: Promise<void>;
  readonly phase: Phase;
  readonly registry: Registry;
  readonly logger: ServiceLogger;
  /** A fastify plugin: `app.register(service.fastifyPlugin({ health: true }), { prefix })`. */
  fastifyPlugin(options?: MountOptions): FastifyPluginLike;
  /** An express-style router: `app.use(service.expressRouter())`; other paths go to `next()`. */
  expressRouter(options?: MountOptions): ExpressStyleHandler;
  /** A node:http listener for every route (404 for other paths); `authorize` as a mount's. */
  requestListener(options?: { readonly authorize?: AuthorizeHook }): RequestListener;
  /** Graceful stop: new work gets 503, accepted requests finish, the Scorer is disposed. Idempotent. */
  close(): Promise<void>;
}

/** Internal handle: the standalone server starts loading once it listens, and closes its listener mid-drain. */
export interface ScoringServiceControl {
  readonly service: ScoringService;
  readonly state: ServiceState;
  readonly settings: ServeOptions;
  /** Starts loading (once). */
  start(): void;
  /** Refuses new work; resolves once accepted requests are done. */
  drain(): Promise<void>;
  /** Disposes the backend and logs `closed`. */
  finish(): void;
}

/** Creates the service and starts loading the model. */
export function createScoringService(options: ScoringServiceOptions = {}): ScoringService {
  const control = openScoringService(options);
  control.start();
  return control.service;
}

export function openScoringService(options: ScoringServiceOptions & Partial<Pick<ServeOptions, 'host' | 'port' | 'drainDelayMs'>>): ScoringServiceControl {
  const settings: ServeOptions = { ...DEFAULT_SERVE_OPTIONS, ...serveSettingsOf(options) };
  const logger = options.logger ?? createLogger();
  const registry = options.registry ?? new Registry();
  if (options.processMetrics === true && registry.getSingleMetric('process_cpu_user_seconds_total') === undefined) {
    collectDefaultMetrics({ register: registry });
  }
  const state = new ServiceState(settings, logger, registry);
  let closing: Promise<void> | null = null;
  let draining: Promise<void> | null = null;
  let startReady: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (startReady = resolve));
  const ready = started.then(() => load(state, settings, options, logger, () => closing !== null || draining !== null));
  ready.catch(() => undefined); // the caller observes .ready; never an unhandled rejection here

  const drain = (): Promise<void> => {
    if (draining) return draining;
    state.beginDrain();
    logEvent(logger, 'info', 'draining', { queue_depth: state.backend?.queueDepth ?? 0, in_flight: state.backend?.inFlight ?? 0 });
    draining = state.settled();
    return draining;
  };
  const finish = (): void => {
    if (state.phase === 'closed') return;
    const backend = state.backend;
    if (backend) backend.dispose();
    state.markClosed();
    logEvent(logger, 'info', 'closed', {});
  };
  const service: ScoringService = {
    ready,
    get phase() {
      return state.phase;
    },
    registry,
    logger,
    fastifyPlugin: (mount = {}) => createFastifyPlugin(state, selectRoutes(mount), gateOf(mount.authorize)),
    expressRouter: (mount = {}) => createExpressRouter(state, selectRoutes(mount), gateOf(mount.authorize)),
    requestListener: (mount = {}) => createRequestListener(state, ROUTES, { gate: gateOf(mount.authorize) }),
    close: () => {
      if (!closing) {
        closing = (async () => {
          startReady(); // a service closed before it started must still settle .ready
          await drain();
          finish();
        })();
      }
      return closing;
    },
  };
  return { service, state, settings, start: () => startReady(), drain, finish };
}

function gateOf(authorize: AuthorizeHook | undefined): AccessGate | undefined {
  if (authorize === undefined) return undefined;
  if (typeof authorize !== 'function') throw new TypeError(`authorize must be a function (req) => boolean, got ${typeof authorize}`);
  return hookGate(authorize);
}

async function load(
  state: ServiceState,
  settings: ServeOptions,
  options: ScoringServiceOptions,
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
    logEvent(logger, 'info', 'warm', { shapes: shapes.length, seconds: round((performance.now() - warmStarted) / 1000), stats: backend.stats().jit });
  }
  if (stopping()) throw new Error('the service was closed during warmup');
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
    throw new OptionError(`--multi-item-scoring-delimiter ${id} is not a token id of the model (vocabulary [0, ${vocab}))`);
  }
  logEvent(logger, 'info', 'multi_item_scoring_delimiter_ignored', {
    token_id: id,
    message:
      'accepted for SGLang compatibility; pjrt-score delimits items by their lengths, so no delimiter token is placed in the sequence and this setting changes nothing',
  });
}

function round(seconds: number): number {
  return Math.round(seconds * 100) / 100;
}
