/**
 * The read-only routes that describe the model, in the shapes their clients
 * read: OpenAI's `GET /v1/models` and `GET /v1/models/{id}` (openai-node
 * `models.list()` / `models.retrieve(id)`), and text-embeddings-inference's
 * `GET /info` (huggingface_hub's `get_endpoint_info()`).
 */
import { Exchange, Reply, errorReply, jsonReply } from '../http/exchange';
import { HttpError } from '../http/http-errors';
import { ServiceState } from '../lifecycle/service-state';
import { packageVersion } from './worker';
import type { ScoringBackend } from '../lifecycle/scorer-backend';

interface ModelObject {
  readonly id: string;
  readonly object: 'model';
  readonly created: number;
  readonly owned_by: string;
  readonly root: string;
  readonly max_model_len: number;
  /** The model's context in tokens (max_model_len's value, under the name other servers use). */
  readonly context_length: number;
  /** Its architecture: llama, qwen2, qwen3, gemma, gemma2, gemma3. */
  readonly family?: string;
  /** Its stored tensor types by count, most first. */
  readonly quantization?: string;
}

function loaded(service: ServiceState): ScoringBackend {
  const backend = service.backend;
  if (!backend)
    throw new HttpError(503, 'the model is loading; retry shortly', { retryAfter: service.retryAfterSeconds() });
  return backend;
}

function modelObject(service: ServiceState, backend: ScoringBackend): ModelObject {
  return {
    id: backend.modelName,
    object: 'model',
    created: Math.floor(service.startedAt / 1000),
    owned_by: 'pjrt-score',
    root: backend.modelName,
    max_model_len: backend.config.contextLength,
    context_length: backend.config.contextLength,
    ...(backend.config.architecture ? { family: backend.config.architecture } : {}),
    ...(backend.quantization ? { quantization: backend.quantization } : {}),
  };
}

/** GET /v1/models: the one model this server serves. */
export function listModels(service: ServiceState): Reply {
  const backend = service.backend;
  if (!backend)
    return errorReply(
      new HttpError(503, 'the model is loading; retry shortly', { retryAfter: service.retryAfterSeconds() }),
    );
  return jsonReply(200, { object: 'list', data: [modelObject(service, backend)] });
}

/** GET /v1/models/{id}: the model when `id` names it, else OpenAI's 404. */
export function retrieveModel(service: ServiceState, ex: Exchange): Reply {
  const backend = loaded(service);
  const id = lastSegment(ex.req.url ?? ex.path);
  if (id !== backend.modelName) {
    throw new HttpError(
      404,
      `The model '${id.slice(0, 200)}' does not exist: this server serves '${backend.modelName}'`,
      { param: 'model' },
    );
  }
  return jsonReply(200, modelObject(service, backend));
}

/** text-embeddings-inference's Info, with this server's limits in TEI's fields. */
export function teiInfo(service: ServiceState): Reply {
  const backend = loaded(service);
  const { options } = service;
  const version = packageVersion();
  return jsonReply(200, {
    model_id: backend.modelName,
    model_sha: null,
    model_dtype: 'float32',
    model_type: { reranker: { id2label: { '0': 'relevance' }, label2id: { relevance: 0 } } },
    max_concurrent_requests: options.queueSize,
    max_input_length: backend.config.contextLength,
    max_batch_tokens: options.maxRequestTokens,
    max_batch_requests: null,
    max_client_batch_size: options.maxItems,
    auto_truncate: false,
    tokenization_workers: 1,
    version,
    sha: null,
    docker_label: null,
  });
}

/** The last path segment, percent-decoded (a model id with '/' arrives as %2F). */
function lastSegment(url: string): string {
  const path = url.split('?')[0];
  const raw = path.slice(path.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
