/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of the service's request
 * and response bodies, and each route's operation built from them. The
 * route table (table.ts) names its operation; openapi.ts assembles the
 * document from the table. Request schemas describe the fields each shape
 * reads (validation itself is lib/scoring's); response schemas are exact.
 */
export type JsonSchema = Readonly<Record<string, unknown>>;

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const str = { type: 'string' } as const;
const int = { type: 'integer' } as const;
const num = { type: 'number' } as const;
const bool = { type: 'boolean' } as const;
const tokenIds = { type: 'array', items: { type: 'integer', minimum: 0 } } as const;
const obj = (required: readonly string[], properties: Record<string, unknown>, extra = false): JsonSchema => ({
  type: 'object',
  required,
  properties,
  additionalProperties: extra,
});

const usage = obj(['prompt_tokens', 'total_tokens'], {
  prompt_tokens: int,
  completion_tokens: int,
  total_tokens: int,
  prompt_tokens_before_truncation: int,
});

export const SCHEMAS: Readonly<Record<string, JsonSchema>> = {
  Error: obj(['object', 'message', 'type', 'param', 'code', 'error'], {
    object: { const: 'error' },
    message: str,
    type: str,
    param: { type: ['string', 'null'] },
    code: int,
    error: {
      description: "OpenAI's nested error object; on TEI's request shape TEI's message string",
      oneOf: [
        str,
        obj(['message', 'type', 'param', 'code'], {
          message: str,
          type: str,
          param: { type: ['string', 'null'] },
          code: int,
        }),
      ],
    },
    error_type: { enum: ['validation', 'empty', 'tokenizer', 'overloaded', 'unhealthy', 'backend'] },
  }),
  Truncate: {
    oneOf: [bool, obj([], { keep: { enum: ['start', 'end'] }, max_item_tokens: { type: 'integer', minimum: 1 } })],
  },
  ScoreRequest: obj(
    ['query', 'items', 'label_token_ids'],
    {
      model: str,
      query: { oneOf: [str, tokenIds] },
      items: { oneOf: [str, { type: 'array', items: str }, { type: 'array', items: tokenIds }] },
      label_token_ids: { ...tokenIds, minItems: 1 },
      apply_softmax: bool,
      item_first: bool,
      truncate: ref('Truncate'),
      truncate_prompt_tokens: { type: 'integer', minimum: -1 },
    },
    true,
  ),
  ScoreResponse: obj(['scores', 'model', 'object', 'usage'], {
    scores: { type: 'array', items: { type: 'array', items: num } },
    model: str,
    object: { const: 'scoring' },
    usage,
  }),
  RerankRequest: obj(
    ['query'],
    {
      model: str,
      query: str,
      documents: { type: 'array', items: { oneOf: [str, { type: 'object' }] } },
      texts: {
        type: 'array',
        items: str,
        description: "text-embeddings-inference's shape: answered with TEI's bare array",
      },
      top_n: { type: 'integer', minimum: 0 },
      return_documents: bool,
      return_text: bool,
      raw_scores: bool,
      rank_fields: { type: 'array', items: str, minItems: 1 },
      max_chunks_per_doc: { type: 'integer', minimum: 1 },
      truncate_prompt_tokens: { type: 'integer', minimum: -1 },
      truncate: bool,
      truncation_direction: { enum: ['left', 'right', 'Left', 'Right'] },
      instruction: str,
      top_k: {
        type: 'integer',
        minimum: 0,
        description: "SGLang's shape (with rid): answered with SGLang's bare array",
      },
      rid: { description: "SGLang's request id: marks SGLang's shape" },
      user: { type: ['string', 'null'] },
    },
    true,
  ),
  CohereV2RerankRequest: obj(
    ['query', 'documents'],
    {
      model: str,
      query: str,
      documents: { type: 'array', items: str },
      top_n: { type: 'integer', minimum: 0 },
      max_tokens_per_doc: { type: 'integer', minimum: 1 },
      return_documents: bool,
      instruction: str,
    },
    true,
  ),
  RerankMeta: obj(['api_version', 'billed_units', 'tokens'], {
    api_version: obj(['version'], { version: str }),
    billed_units: obj(['search_units'], { search_units: int }),
    tokens: obj(['input_tokens', 'output_tokens'], { input_tokens: int, output_tokens: int }),
    warnings: { type: 'array', items: str },
  }),
  RerankResponse: obj(['id', 'model', 'object', 'results', 'usage', 'meta'], {
    id: str,
    model: str,
    object: { const: 'rerank' },
    results: {
      type: 'array',
      items: obj(['index', 'relevance_score'], {
        index: int,
        relevance_score: num,
        document: { type: 'object', description: '{text} for a string document, the whole object otherwise' },
      }),
    },
    usage,
    meta: ref('RerankMeta'),
  }),
  TeiRerankResponse: { type: 'array', items: obj(['index', 'score'], { index: int, score: num, text: str }) },
  SglangRerankResponse: {
    type: 'array',
    items: obj(['score', 'index', 'meta_info'], {
      score: num,
      document: str,
      index: int,
      meta_info: obj(['id', 'prompt_tokens'], { id: str, prompt_tokens: int }),
    }),
  },
  CohereV2RerankResponse: obj(['id', 'model', 'results', 'usage', 'meta'], {
    id: str,
    model: str,
    results: {
      type: 'array',
      items: obj(['index', 'relevance_score'], {
        index: int,
        relevance_score: num,
        document: obj(['text'], { text: str }),
      }),
    },
    usage,
    meta: ref('RerankMeta'),
  }),
  Model: obj(['id', 'object', 'created', 'owned_by'], {
    id: str,
    object: { const: 'model' },
    created: int,
    owned_by: str,
    root: str,
    max_model_len: int,
    context_length: int,
    family: str,
    quantization: str,
  }),
  ModelList: obj(['object', 'data'], { object: { const: 'list' }, data: { type: 'array', items: ref('Model') } }),
  TeiInfo: obj(['model_id', 'model_type', 'max_input_length', 'max_client_batch_size', 'version'], {
    model_id: str,
    model_sha: { type: ['string', 'null'] },
    model_dtype: str,
    model_type: { type: 'object' },
    max_concurrent_requests: int,
    max_input_length: int,
    max_batch_tokens: int,
    max_batch_requests: { type: ['integer', 'null'] },
    max_client_batch_size: int,
    auto_truncate: bool,
    tokenization_workers: int,
    version: str,
    sha: { type: ['string', 'null'] },
    docker_label: { type: ['string', 'null'] },
  }),
  Health: obj(['status', 'ready', 'uptime_seconds'], {
    status: str,
    ready: bool,
    uptime_seconds: num,
    model: str,
    queue_depth: int,
    in_flight: int,
  }),
  Live: obj(['status', 'phase'], {
    status: { const: 'alive' },
    phase: { enum: ['loading', 'ready', 'leaving', 'draining', 'closed'] },
  }),
  ServerInfo: obj(['version', 'status'], {
    model_path: { type: ['string', 'null'] },
    served_model_name: { type: ['string', 'null'] },
    tokenizer_path: { type: ['string', 'null'] },
    context_length: { type: ['integer', 'null'] },
    is_embedding: bool,
    tp_size: int,
    dp_size: int,
    pp_size: int,
    disaggregation_mode: str,
    max_running_requests: int,
    weight_version: str,
    version: str,
    status: str,
    pjrt_score: { type: 'object' },
  }),
  ModelInfo: obj(
    ['is_generation'],
    {
      model_path: { type: ['string', 'null'] },
      tokenizer_path: { type: ['string', 'null'] },
      is_generation: bool,
      model_type: { type: ['string', 'null'] },
    },
    true,
  ),
  Version: obj(['version'], { version: str }),
  Loads: obj(['dp_rank_count', 'loads'], {
    timestamp: str,
    dp_rank_count: int,
    loads: {
      type: 'array',
      items: obj(['dp_rank', 'num_running_reqs', 'num_waiting_reqs'], {
        dp_rank: int,
        num_running_reqs: int,
        num_waiting_reqs: int,
        num_waiting_uncached_tokens: int,
        num_total_reqs: int,
        num_used_tokens: int,
        max_total_num_tokens: int,
        token_usage: num,
        gen_throughput: num,
        cache_hit_rate: num,
        utilization: num,
        max_running_requests: int,
      }),
    },
  }),
  GetLoad: {
    type: 'array',
    items: obj(['dp_rank', 'num_reqs', 'num_waiting_reqs', 'num_tokens'], {
      dp_rank: int,
      num_reqs: int,
      num_waiting_reqs: int,
      num_tokens: int,
    }),
  },
};

export interface Operation {
  readonly summary: string;
  /** The request body's schema (POST routes). */
  readonly request?: JsonSchema;
  /** The 200 answer: a JSON schema, or a content type for text answers. */
  readonly ok: JsonSchema | { readonly text: string };
  /** Error statuses this route answers beyond 404/405. */
  readonly errors: readonly number[];
  /** Request bodies to try, by name (the API reference offers them). */
  readonly examples?: Readonly<Record<string, { readonly summary: string; readonly value: unknown }>>;
}

// SmolLM2's " yes" and " no" (the default model); another model's label ids differ.
const LABEL_IDS = [9805, 787];
const DOCUMENTS = [
  'Paris is the capital and largest city of France.',
  'Bananas are rich in potassium.',
  'Berlin is the capital of Germany.',
];
const QUESTION = 'What is the capital of France?';

const SCORE_EXAMPLES = {
  text: {
    summary: 'Text: P(label) per item',
    value: { query: 'Is this a fruit? Answer yes or no:', items: [' apple', ' car'], label_token_ids: LABEL_IDS },
  },
  softmax: {
    summary: 'Softmax over the labels',
    value: {
      query: 'Is this a fruit? Answer yes or no:',
      items: [' apple', ' car'],
      label_token_ids: LABEL_IDS,
      apply_softmax: true,
    },
  },
  tokenIds: {
    summary: 'Token ids',
    value: { query: [1, 4093, 314, 260], items: [[2911], [1340, 28]], label_token_ids: LABEL_IDS },
  },
};
const RERANK_EXAMPLES = {
  cohere: {
    summary: 'Cohere v1, Jina, vLLM: documents as strings',
    value: { query: QUESTION, documents: DOCUMENTS, top_n: 2, return_documents: true },
  },
  jina: {
    summary: 'Jina: documents as {text}',
    value: { model: 'm', query: QUESTION, documents: DOCUMENTS.map((text) => ({ text })) },
  },
  tei: {
    summary: 'text-embeddings-inference: texts',
    value: { query: QUESTION, texts: DOCUMENTS, raw_scores: false, return_text: true },
  },
  sglang: {
    summary: "SGLang's rerank (rid): a bare array",
    value: { query: QUESTION, documents: DOCUMENTS, rid: 'r1' },
  },
};
const RERANK_V2_EXAMPLES = {
  cohereV2: {
    summary: 'Cohere v2',
    value: { model: 'm', query: QUESTION, documents: DOCUMENTS, top_n: 2, max_tokens_per_doc: 64 },
  },
};

const SCORING_ERRORS = [400, 413, 429, 503, 504];

export const OPERATIONS = {
  score: {
    summary: "Score items against a query (SGLang's ScoringRequest)",
    request: ref('ScoreRequest'),
    ok: ref('ScoreResponse'),
    errors: SCORING_ERRORS,
    examples: SCORE_EXAMPLES,
  },
  rerank: {
    summary:
      "Rerank documents: Cohere v1, Jina and vLLM's shape, " +
      "text-embeddings-inference's (texts), or SGLang's (rid or top_k)",
    request: ref('RerankRequest'),
    ok: { oneOf: [ref('RerankResponse'), ref('TeiRerankResponse'), ref('SglangRerankResponse')] },
    errors: SCORING_ERRORS,
    examples: RERANK_EXAMPLES,
  },
  rerankV2: {
    summary: "Rerank documents: Cohere v2's shape",
    request: ref('CohereV2RerankRequest'),
    ok: ref('CohereV2RerankResponse'),
    errors: SCORING_ERRORS,
    examples: RERANK_V2_EXAMPLES,
  },
  health: { summary: 'Readiness (503 while loading or draining)', ok: ref('Health'), errors: [503] },
  live: { summary: 'Liveness: the process answers (any phase)', ok: ref('Live'), errors: [] },
  serverInfo: { summary: "SGLang's server info: the model, context and limits", ok: ref('ServerInfo'), errors: [] },
  modelInfo: { summary: "SGLang's model info", ok: ref('ModelInfo'), errors: [] },
  version: { summary: 'The server version', ok: ref('Version'), errors: [] },
  loads: {
    summary: "SGLang's load report: waiting and running requests, waiting tokens",
    ok: ref('Loads'),
    errors: [],
  },
  getLoad: { summary: "SGLang's older load list", ok: ref('GetLoad'), errors: [] },
  models: { summary: "The model served (OpenAI's list)", ok: ref('ModelList'), errors: [503] },
  model: { summary: "One model by id (OpenAI's retrieve)", ok: ref('Model'), errors: [503] },
  info: { summary: "text-embeddings-inference's model info", ok: ref('TeiInfo'), errors: [503] },
  metrics: { summary: 'Prometheus metrics', ok: { text: 'text/plain' }, errors: [] },
  openapi: { summary: 'The OpenAPI 3.1 document of these routes', ok: { type: 'object' }, errors: [] },
  docs: {
    summary: 'The interactive API reference (Swagger UI) over /openapi.json',
    ok: { text: 'text/html' },
    errors: [],
  },
} satisfies Record<string, Operation>;
