/**
 * startServer: listen at once (so /health answers 503 while the model
 * loads), load and warm the Scorer, turn ready; close() drains: stop
 * accepting, finish what was accepted, dispose the Scorer.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BackendLoadOptions, ScoringBackend, loadScorerBackend } from './backend';
import { Logger, createLogger } from './log';
import { DEFAULT_SERVE_OPTIONS, OptionError, ServeOptions } from './options';
import { createRequestListener } from './routes';
import { DEFAULT_WARMUP } from './warmup-spec';
import { Phase, ScoreService } from './service';

export interface StartServerOptions extends Partial<ServeOptions> {
  /** Where log lines go; default JSON lines on stdout. */
  readonly logger?: Logger;
  /** Builds the backend instead of `Scorer.load` (embedding, tests). */
  readonly loadBackend?: (options: BackendLoadOptions) => Promise<ScoringBackend>;
  /** Warmup progress bar stream (default stderr; false for none). */
  readonly warmupProgress?: NodeJS.WritableStream | false;
}

export interface ScoreServer {
  readonly server: http.Server;
  readonly host: string;
  readonly port: number;
  /** http://host:port */
  readonly url: string;
  /** Resolves once the model is loaded and warm; rejects if loading or warmup failed (the server then stops). */
  readonly ready: Promise<void>;
  readonly phase: Phase;
  /**
   * Graceful stop: refuse new work (503, /health 503), let accepted
   * requests finish, close connections, dispose the Scorer. Idempotent.
   */
  close(): Promise<void>;
}

/** Starts the service; resolves once it listens (before the model is ready: see `.ready`). */
export async function startServer(options: StartServerOptions = {}): Promise<ScoreServer> {
  const settings: ServeOptions = { ...DEFAULT_SERVE_OPTIONS, ...definedOnly(options) };
  const logger = options.logger ?? createLogger();
  const service = new ScoreService(settings, logger);
  const server = http.createServer({ keepAliveTimeout: 5000 }, createRequestListener(service));
  server.headersTimeout = 30_000;
  server.requestTimeout = Math.max(60_000, settings.timeoutMs + 10_000);
  // headersTimeout starts at a request's first byte: a connection that never sends one would stay open for
  // good (an idle-connection attack holds file descriptors). Close sockets silent for as long as a request may take.
  server.timeout = server.requestTimeout;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logger.info('listening', { host: address.address, port: address.port, url });

  let closing: Promise<void> | null = null;
  const loadOptions: BackendLoadOptions = {
    ...(settings.model !== undefined ? { model: settings.model } : {}),
    ...(settings.plugin !== undefined ? { plugin: settings.plugin } : {}),
    algorithm: settings.algorithm,
    maxItems: settings.maxItems,
    maxRequestTokens: settings.maxRequestTokens,
    ...(settings.rerankTemplate !== undefined ? { rerankTemplate: settings.rerankTemplate } : {}),
    ...(settings.precision !== undefined ? { precision: settings.precision } : {}),
    log: (event) => {
      const { event: name, ...fields } = event;
      logger.info(typeof name === 'string' ? name : 'scorer', { source: 'scorer', ...fields });
    },
  };
  const ready = (async (): Promise<void> => {
    // Parts of loading are synchronous (reading the weights): start on a later turn of the
    // event loop, so the caller gets the server (and installs its signal handlers) first.
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (closing) throw new Error('the server was closed before the model loaded');
    const started = performance.now();
    const backend = await (options.loadBackend ?? loadScorerBackend)(loadOptions);
    if (closing) {
      backend.dispose();
      throw new Error('the server was closed while the model loaded');
    }
    service.attach(backend);
    checkDelimiter(settings, backend, logger);
    logger.info('model_loaded', {
      model: backend.modelName,
      vocab_size: backend.config.vocabSize,
      context_length: backend.config.contextLength,
      seconds: round((performance.now() - started) / 1000),
    });
    const shapes = settings.warmup ?? DEFAULT_WARMUP;
    if (shapes.length > 0) {
      const warmStarted = performance.now();
      await backend.warmup(shapes, options.warmupProgress ?? process.stderr);
      logger.info('warm', { shapes: shapes.length, seconds: round((performance.now() - warmStarted) / 1000), stats: backend.stats().jit });
    }
    if (closing) throw new Error('the server was closed during warmup');
    service.markReady();
    logger.info('ready', {
      model: backend.modelName,
      algorithm: settings.algorithm,
      max_items: settings.maxItems,
      max_request_tokens: settings.maxRequestTokens,
      queue_size: settings.queueSize,
      timeout_ms: settings.timeoutMs,
      max_body_bytes: settings.maxBodyBytes,
      coalesce: settings.coalesce,
      seconds: round((performance.now() - started) / 1000),
    });
  })();
  ready.catch(() => undefined); // the caller observes .ready; never an unhandled rejection here

  const close = (): Promise<void> => {
    if (closing) return closing;
    closing = (async () => {
      service.beginDrain();
      logger.info('draining', { queue_depth: service.scheduler?.queueDepth ?? 0, in_flight: service.scheduler?.inFlight ?? 0 });
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await service.settled();
      // Keep-alive connections that finished their last response are idle now.
      server.closeIdleConnections();
      server.closeAllConnections();
      await stopped;
      const backend = service.backend;
      if (backend) backend.dispose();
      service.markClosed();
      logger.info('closed', {});
    })();
    return closing;
  };

  return {
    server,
    host: address.address,
    port: address.port,
    url,
    ready,
    get phase() {
      return service.phase;
    },
    close,
  };
}

/** `--multi-item-scoring-delimiter` is for compatibility: it must name a token, and it changes nothing. */
function checkDelimiter(settings: ServeOptions, backend: ScoringBackend, logger: Logger): void {
  const id = settings.multiItemScoringDelimiter;
  if (id === undefined) return;
  const vocab = backend.config.vocabSize;
  if (!Number.isInteger(id) || id < 0 || id >= vocab) {
    throw new OptionError(`--multi-item-scoring-delimiter ${id} is not a token id of the model (vocabulary [0, ${vocab}))`);
  }
  logger.info('multi_item_scoring_delimiter_ignored', {
    token_id: id,
    message:
      'accepted for SGLang compatibility; pjrt-score delimits items by their lengths, so no delimiter token is placed in the sequence and this setting changes nothing',
  });
}

function definedOnly(options: StartServerOptions): Partial<ServeOptions> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(DEFAULT_SERVE_OPTIONS).concat(['model', 'plugin', 'warmup', 'multiItemScoringDelimiter'])) {
    const value = (options as Record<string, unknown>)[key];
    if (value !== undefined) out[key] = value;
  }
  return out as Partial<ServeOptions>;
}

function round(seconds: number): number {
  return Math.round(seconds * 100) / 100;
}
