/**
 * What a gateway reads from its workers (docs/service.md, "Running a
 * fleet"): SGLang's `GET /server_info` and `/model_info` (each also under
 * its older `/get_` name), `/version`, and the load report in SGLang's
 * shapes (`/v1/loads`, `/loads`, `/get_load`) carrying the real queue; and
 * the two Kubernetes probes, `/livez` (the process answers) and `/readyz`
 * (the model is loaded and warm and no drain began; /health's answer).
 */
import { Reply, jsonReply } from '../http/exchange';
import { ServiceState } from '../lifecycle/service-state';

/** The package's version (/version, /server_info, TEI's /info, the OpenAPI document). */
export function packageVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('../../../package.json') as { version: string }).version;
}

/** The queue as the load report reads it: waiting and running requests, waiting prompt tokens. */
interface QueueLoad {
  readonly waiting: number;
  readonly running: number;
  readonly waitingTokens: number;
}

function queueLoad(service: ServiceState): QueueLoad {
  const backend = service.backend;
  if (!backend || service.phase === 'closed') return { waiting: 0, running: 0, waitingTokens: 0 };
  return { waiting: backend.queueDepth, running: backend.inFlight, waitingTokens: backend.queuedTokens ?? 0 };
}

/** The prefix cache's hits over its lookups, 0 before any. */
function prefixHitRate(service: ServiceState): number {
  if (!service.backend || service.phase === 'closed') return 0;
  const cache = service.backend.stats().prefixCache;
  const hits = cache?.hits ?? 0;
  const lookups = hits + (cache?.misses ?? 0);
  return lookups > 0 ? hits / lookups : 0;
}

/**
 * SGLang's per-rank load snapshot (`/v1/loads`): one rank. There is no KV
 * pool that running requests fill (the prefix cache is evictable and never
 * holds work back), so the token-capacity fields are 0, which the gateway
 * reads as "no absolute token data".
 */
function loadSnapshot(service: ServiceState): Record<string, number> {
  const load = queueLoad(service);
  return {
    dp_rank: 0,
    num_running_reqs: load.running,
    num_waiting_reqs: load.waiting,
    num_waiting_uncached_tokens: load.waitingTokens,
    num_total_reqs: load.running + load.waiting,
    num_used_tokens: 0,
    max_total_num_tokens: 0,
    token_usage: 0,
    gen_throughput: 0,
    cache_hit_rate: prefixHitRate(service),
    utilization: 0,
    max_running_requests: 0,
  };
}

/** GET /v1/loads and /loads: `{ timestamp, dp_rank_count, loads: [snapshot] }`. */
export function loadsReply(service: ServiceState): Reply {
  return jsonReply(200, { timestamp: new Date().toISOString(), dp_rank_count: 1, loads: [loadSnapshot(service)] });
}

/** GET /get_load: SGLang's older list, one entry per rank. */
export function getLoadReply(service: ServiceState): Reply {
  const load = queueLoad(service);
  return jsonReply(200, [
    {
      dp_rank: 0,
      num_reqs: load.running + load.waiting,
      num_waiting_reqs: load.waiting,
      num_tokens: load.waitingTokens,
    },
  ]);
}

/** GET /version: `{ version }` (this package's). */
export function versionReply(): Reply {
  return jsonReply(200, { version: packageVersion() });
}

/**
 * GET /server_info: the fields of SGLang's that a gateway reads (the model,
 * context, parallelism, version), with this server's limits under
 * `pjrt_score`. Answers while loading too (the model is then unknown).
 */
export function serverInfoReply(service: ServiceState): Reply {
  const { options } = service;
  const backend = service.backend;
  const model = backend?.modelName ?? null;
  return jsonReply(200, {
    model_path: model,
    served_model_name: model,
    tokenizer_path: model,
    context_length: backend?.config.contextLength ?? null,
    is_embedding: false,
    tp_size: 1,
    dp_size: 1,
    pp_size: 1,
    disaggregation_mode: 'null',
    weight_version: 'default',
    version: packageVersion(),
    status: service.phase,
    pjrt_score: {
      algorithm: options.algorithm,
      max_items: options.maxItems,
      max_request_tokens: options.maxRequestTokens,
      queue_size: options.queueSize,
      timeout_ms: options.timeoutMs,
      batching: options.batching,
    },
  });
}

/**
 * GET /model_info: SGLang's. `is_generation` is false: this server scores
 * and reranks, it does not generate.
 */
export function modelInfoReply(service: ServiceState): Reply {
  const backend = service.backend;
  const model = backend?.modelName ?? null;
  return jsonReply(200, {
    model_path: model,
    tokenizer_path: model,
    is_generation: false,
    preferred_sampling_params: null,
    weight_version: 'default',
    has_image_understanding: false,
    has_audio_understanding: false,
    model_type: backend?.config.architecture ?? null,
  });
}

/** GET /livez: 200 while the process answers (any phase): no model call, no I/O. */
export function liveReply(service: ServiceState): Reply {
  return jsonReply(200, { status: 'alive', phase: service.phase });
}
