/**
 * createScoringService: the service without a listener, to mount in a host
 * (a fastify plugin, an express-style router) or to serve standalone
 * (standalone-server.ts). It loads and warms the Scorer in the background
 * (lifecycle/loading.ts; the routes answer 503 until then), reports through
 * the caller's pino-compatible logger and prom-client registry, and drains
 * on close().
 */
import { Registry, collectDefaultMetrics } from 'prom-client';
import { LoadingOptions, loadBackend } from '../lifecycle/loading';
import { Phase, ServiceState } from '../lifecycle/service-state';
import { AccessGate, AuthorizeHook, hookGate } from '../network/access';
import { NetworkSettingKey } from '../network/network-settings';
import { MountOptions, selectRoutes, servedRoutes } from '../routes/table';
import { DEFAULT_SERVE_OPTIONS, ServeOptions, serveSettingsOf } from '../settings/serve-settings';
import { ServiceLogger, createLogger, logEvent } from '../telemetry/log';
import { FastifyPluginLike, createFastifyPlugin } from './fastify-plugin';
import { ExpressStyleHandler, RequestListener, createExpressRouter, createRequestListener } from './node-handler';

/** The service's settings (ServeOptions without the listener's host and port) and what it reports to. */
export interface ScoringServiceOptions
  extends Partial<Omit<ServeOptions, 'host' | 'port' | 'drainDelayMs' | NetworkSettingKey>>, LoadingOptions {
  /** Any pino-compatible logger (pino, fastify's `app.log`); default pino on stdout. */
  readonly logger?: ServiceLogger;
  /** The prom-client registry our metrics join; default a registry of our own (`service.registry`). */
  readonly registry?: Registry;
  /** Also collect prom-client's default process metrics into the registry (skipped if it has them). Default false. */
  readonly processMetrics?: boolean;
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
interface ScoringServiceControl {
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

export function openScoringService(
  options: ScoringServiceOptions & Partial<Pick<ServeOptions, 'host' | 'port' | 'drainDelayMs'>>,
): ScoringServiceControl {
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
  const ready = started.then(() =>
    loadBackend(state, settings, options, logger, () => closing !== null || draining !== null),
  );
  ready.catch(() => undefined); // the caller observes .ready; never an unhandled rejection here

  const drain = (): Promise<void> => {
    if (draining) return draining;
    state.beginDrain();
    logEvent(logger, 'info', 'draining', {
      queue_depth: state.backend?.queueDepth ?? 0,
      in_flight: state.backend?.inFlight ?? 0,
    });
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
    requestListener: (mount = {}) =>
      createRequestListener(state, servedRoutes(settings.docs), { gate: gateOf(mount.authorize) }),
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
  if (typeof authorize !== 'function')
    throw new TypeError(`authorize must be a function (req) => boolean, got ${typeof authorize}`);
  return hookGate(authorize);
}
