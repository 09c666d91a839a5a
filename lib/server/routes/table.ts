/**
 * The service's routes, defined once: path, methods, handler, and the
 * operation GET /openapi.json documents. Every host runs a route through
 * `dispatch` (dispatch.ts).
 */
import { AuthorizeHook } from '../network/access';
import { Exchange, Reply, jsonReply } from '../http/exchange';
import { listModels, retrieveModel, teiInfo } from './models';
import { docsAsset, docsPage } from './docs';
import { openApiDocument } from './openapi';
import { Operation, OPERATIONS } from './openapi-schemas';
import { COHERE_V2_RERANK_ENDPOINT, RERANK_ENDPOINT } from './rerank';
import { SCORE_ENDPOINT, ScoreRecord, handleScoring } from './score';
import { ServiceState } from '../lifecycle/service-state';
import {
  packageVersion,
  getLoadReply,
  liveReply,
  loadsReply,
  modelInfoReply,
  serverInfoReply,
  versionReply,
} from './worker';

export type RoutePath =
  | '/v1/score'
  | '/v1/rerank'
  | '/v2/rerank'
  | '/rerank'
  | '/health'
  | '/readyz'
  | '/livez'
  | '/v1/models'
  | '/v1/models/:id'
  | '/info'
  | '/metrics'
  | '/openapi.json'
  | '/server_info'
  | '/get_server_info'
  | '/model_info'
  | '/get_model_info'
  | '/version'
  | '/v1/loads'
  | '/loads'
  | '/get_load'
  | '/docs'
  | '/docs/:asset';

export interface RouteDefinition {
  readonly path: RoutePath;
  readonly methods: readonly string[];
  /** Scoring routes are counted in pjrt_score_requests_total and log their items, tokens and batch. */
  readonly scoring: boolean;
  /** Its entry in GET /openapi.json. */
  readonly operation: Operation;
  /** False for the API reference's page and assets (/docs): served, not in the document. Default true. */
  readonly documented?: boolean;
  run(service: ServiceState, ex: Exchange, record: ScoreRecord): Promise<Reply>;
}

/** Which of the optional routes a mount serves; the scoring routes are always there. */
export interface MountOptions {
  /** GET /health and /readyz (503 while loading or draining), GET /livez. Default false: a host usually has its own. */
  readonly health?: boolean;
  /**
   * What a gateway reads from a worker: GET /server_info, /model_info, /version, /v1/loads, /loads, /get_load
   * (worker.ts). Default false.
   */
  readonly worker?: boolean;
  /** GET /metrics: the registry's exposition (the host's metrics too, if it passed its registry). Default false. */
  readonly metrics?: boolean;
  /** GET /v1/models, GET /v1/models/{id} and TEI's GET /info. Default false. */
  readonly models?: boolean;
  /** GET /openapi.json (the standalone service's routes). Default false. */
  readonly openapi?: boolean;
  /** GET /docs, the interactive API reference over /openapi.json (docs.ts); give `openapi` too. Default false. */
  readonly docs?: boolean;
  /**
   * The host's auth: called with the raw request before any route but
   * /health reads its body; false answers 401 (`WWW-Authenticate: Bearer`,
   * our error body). Default: every request is let through.
   */
  readonly authorize?: AuthorizeHook;
}

export const ROUTES: readonly RouteDefinition[] = [
  {
    path: '/v1/score',
    methods: ['POST'],
    scoring: true,
    operation: OPERATIONS.score,
    run: (service, ex, record) => handleScoring(service, ex, record, SCORE_ENDPOINT),
  },
  {
    path: '/v1/rerank',
    methods: ['POST'],
    scoring: true,
    operation: OPERATIONS.rerank,
    run: (service, ex, record) => handleScoring(service, ex, record, RERANK_ENDPOINT),
  },
  {
    path: '/v2/rerank',
    methods: ['POST'],
    scoring: true,
    operation: OPERATIONS.rerankV2,
    run: (service, ex, record) => handleScoring(service, ex, record, COHERE_V2_RERANK_ENDPOINT),
  },
  {
    path: '/rerank',
    methods: ['POST'],
    scoring: true,
    operation: OPERATIONS.rerank,
    run: (service, ex, record) => handleScoring(service, ex, record, RERANK_ENDPOINT),
  },
  {
    path: '/health',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.health,
    run: async (service) => health(service),
  },
  {
    path: '/v1/models',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.models,
    run: async (service) => listModels(service),
  },
  {
    path: '/v1/models/:id',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.model,
    run: async (service, ex) => retrieveModel(service, ex),
  },
  {
    path: '/info',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.info,
    run: async (service) => teiInfo(service),
  },
  {
    path: '/metrics',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.metrics,
    run: (service) => metrics(service),
  },
  {
    path: '/openapi.json',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.openapi,
    run: async () => openApiReply(),
  },
  {
    path: '/readyz',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.health,
    run: async (service) => health(service),
  },
  {
    path: '/livez',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.live,
    run: async (service) => liveReply(service),
  },
  {
    path: '/server_info',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.serverInfo,
    run: async (service) => serverInfoReply(service),
  },
  {
    path: '/get_server_info',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.serverInfo,
    run: async (service) => serverInfoReply(service),
  },
  {
    path: '/model_info',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.modelInfo,
    run: async (service) => modelInfoReply(service),
  },
  {
    path: '/get_model_info',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.modelInfo,
    run: async (service) => modelInfoReply(service),
  },
  {
    path: '/version',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.version,
    run: async () => versionReply(),
  },
  {
    path: '/v1/loads',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.loads,
    run: async (service) => loadsReply(service),
  },
  {
    path: '/loads',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.loads,
    run: async (service) => loadsReply(service),
  },
  {
    path: '/get_load',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.getLoad,
    run: async (service) => getLoadReply(service),
  },
  {
    path: '/docs',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.docs,
    documented: false,
    run: async () => docsPage(),
  },
  {
    path: '/docs/:asset',
    methods: ['GET', 'HEAD'],
    scoring: false,
    operation: OPERATIONS.docs,
    documented: false,
    run: async (_service, ex) => docsAsset(ex),
  },
];

/** The API reference's routes (--no-docs leaves them out). */
const DOCS_PATHS: ReadonlySet<RoutePath> = new Set(['/docs', '/docs/:asset']);

let openApiText: string | undefined;
/** The document of ROUTES, built once. */
function openApiReply(): Reply {
  openApiText ??= JSON.stringify(
    openApiDocument(
      ROUTES.filter((route) => route.documented !== false),
      { title: 'pjrt-score', version: packageVersion() },
    ),
  );
  return { status: 200, contentType: 'application/json', body: openApiText, headers: {} };
}

/** The standalone service's routes: every one, less the API reference's with `docs` false (--no-docs). */
export function servedRoutes(docs: boolean): readonly RouteDefinition[] {
  return docs ? ROUTES : ROUTES.filter((route) => !DOCS_PATHS.has(route.path));
}

/** The routes a mount serves. */
export function selectRoutes(options: MountOptions): readonly RouteDefinition[] {
  return ROUTES.filter(
    (route) =>
      route.scoring ||
      (HEALTH_PATHS.has(route.path) && options.health === true) ||
      (WORKER_PATHS.has(route.path) && options.worker === true) ||
      (route.path === '/metrics' && options.metrics === true) ||
      (MODEL_PATHS.has(route.path) && options.models === true) ||
      (route.path === '/openapi.json' && options.openapi === true) ||
      (DOCS_PATHS.has(route.path) && options.docs === true),
  );
}

const MODEL_PATHS: ReadonlySet<RoutePath> = new Set(['/v1/models', '/v1/models/:id', '/info']);
const HEALTH_PATHS: ReadonlySet<RoutePath> = new Set(['/health', '/readyz', '/livez']);
const WORKER_PATHS: ReadonlySet<RoutePath> = new Set([
  '/server_info',
  '/get_server_info',
  '/model_info',
  '/get_model_info',
  '/version',
  '/v1/loads',
  '/loads',
  '/get_load',
]);

/** The route serving `path`: an exact path, else a pattern whose `:name` segments match any one segment. */
export function findRoute(routes: readonly RouteDefinition[], path: string): RouteDefinition | null {
  const exact = routes.find((route) => route.path === path);
  if (exact) return exact;
  const segments = path.split('/');
  for (const route of routes) {
    const pattern = route.path.split('/');
    if (!route.path.includes('/:') || pattern.length !== segments.length) continue;
    if (pattern.every((p, i) => (p.startsWith(':') ? segments[i] !== '' : p === segments[i]))) return route;
  }
  return null;
}

function health(service: ServiceState): Reply {
  const ready = service.phase === 'ready';
  const body: Record<string, unknown> = {
    status: ready ? 'ok' : service.phase,
    ready,
    uptime_seconds: Math.round((Date.now() - service.startedAt) / 100) / 10,
  };
  if (service.backend) body.model = service.backend.modelName;
  if (service.backend) {
    body.queue_depth = service.backend.queueDepth;
    body.in_flight = service.backend.inFlight;
  }
  return jsonReply(ready ? 200 : 503, body, ready ? {} : { 'retry-after': String(service.retryAfterSeconds()) });
}

async function metrics(service: ServiceState): Promise<Reply> {
  const text = await service.metrics.render();
  return { status: 200, contentType: service.metrics.contentType, body: text, headers: {} };
}
