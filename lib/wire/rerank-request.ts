/**
 * The rerank dialects' request bodies (docs/rerank.md has the table), read
 * into the Scorer's rerank request:
 *   common     Cohere v1, Jina, vLLM (/v1/rerank, /rerank): `documents`
 *              (strings, or objects read through `rank_fields`), `top_n`,
 *              `return_documents`, `max_chunks_per_doc`, `truncate_prompt_tokens`
 *   cohere-v2  Cohere v2 (/v2/rerank): `documents` strings, `top_n`,
 *              `max_tokens_per_doc` (default 4096)
 *   tei        text-embeddings-inference (/rerank, /v1/rerank): `texts`,
 *              `raw_scores`, `return_text`, `truncate`, `truncation_direction`
 *   sglang     SGLang's own (what the SGLang Model Gateway forwards):
 *              `documents` strings, `top_k`, `return_documents` (default
 *              true), `rid`, `user`; told by a `rid` or `top_k` member
 * The dialect a body came in decides its answer's (rerank-response.ts).
 */
import {
  asObject,
  normalizeRerankFields,
  ScoreInputError,
  type NormalizedRerank,
  type RequestReader,
  type RerankSpelling,
  type ResolvedTemplate,
  type ScoreRequestContext,
} from '../scoring';
import { readMaxTokensPerDoc, readTeiTruncation, readTruncatePromptTokens } from './truncation';

/** Which spelling a request came in, which decides the response's. */
type RerankDialect = 'common' | 'cohere-v2' | 'tei' | 'sglang';

/**
 * The routes: 'v1' (POST /v1/rerank, /rerank: the common shape, TEI's or SGLang's), 'v2' (POST /v2/rerank: Cohere
 * v2's).
 */
export type RerankRoute = 'v1' | 'v2';

/** A validated rerank request and the dialect it came in. */
export interface WireRerank extends NormalizedRerank {
  readonly dialect: RerankDialect;
}

/** Cohere v2's default for max_tokens_per_doc. */
const COHERE_V2_MAX_TOKENS_PER_DOC = 4096;

const SNAKE = { instruction: 'instruction', rankFields: 'rank_fields', rawScores: 'raw_scores' } as const;

const SPELLINGS: Readonly<Record<RerankDialect, RerankSpelling>> = {
  common: {
    names: {
      ...SNAKE,
      documents: 'documents',
      topN: 'top_n',
      returnDocuments: 'return_documents',
      truncate: 'max_chunks_per_doc or truncate_prompt_tokens',
    },
    objectDocuments: true,
    rawScores: false,
  },
  'cohere-v2': {
    names: {
      ...SNAKE,
      documents: 'documents',
      topN: 'top_n',
      returnDocuments: 'return_documents',
      truncate: 'max_tokens_per_doc',
    },
    objectDocuments: false,
    rawScores: false,
  },
  tei: {
    names: { ...SNAKE, documents: 'texts', topN: 'top_n', returnDocuments: 'return_text', truncate: 'truncate' },
    objectDocuments: false,
    rawScores: true,
  },
  sglang: {
    names: {
      ...SNAKE,
      documents: 'documents',
      topN: 'top_k',
      returnDocuments: 'return_documents',
      truncate: 'truncate_prompt_tokens',
    },
    objectDocuments: false,
    rawScores: false,
  },
};

/** TEI's request shape names its documents `texts` (its errors are TEI's too). */
export function isTeiRerankBody(body: unknown): body is { texts: unknown } {
  return (
    body !== null &&
    typeof body === 'object' &&
    !Array.isArray(body) &&
    (body as { texts?: unknown }).texts !== undefined
  );
}

/**
 * SGLang's rerank body (V1RerankReqInput: `query`, `documents`, `top_k`,
 * `return_documents`, `rid`, `user`), as the SGLang Model Gateway forwards
 * it: told from the common shape by a `rid` or `top_k` member, which no
 * Cohere, Jina, vLLM or TEI client sends.
 */
function isSglangRerankBody(raw: Record<string, unknown>): boolean {
  return raw.texts === undefined && ('rid' in raw || 'top_k' in raw);
}

/** Validates a rerank JSON body on its route; throws ScoreInputError on bad input. */
export function normalizeRerankBody(
  body: unknown,
  template: ResolvedTemplate,
  ctx: ScoreRequestContext,
  route: RerankRoute = 'v1',
): WireRerank {
  const read = (dialect: RerankDialect, fields: Parameters<typeof normalizeRerankFields>[0]): WireRerank => ({
    dialect,
    ...normalizeRerankFields(fields, SPELLINGS[dialect], template, ctx),
  });
  const raw = asObject(body, 'body');
  const common = { query: raw.query, topN: raw.top_n, instruction: raw.instruction, rankFields: raw.rank_fields };
  if (route === 'v2') {
    if (raw.texts !== undefined)
      throw new ScoreInputError('/v2/rerank takes documents (Cohere v2), not texts', 'texts');
    const truncation = readMaxTokensPerDoc(raw.max_tokens_per_doc, 'max_tokens_per_doc', COHERE_V2_MAX_TOKENS_PER_DOC);
    return read('cohere-v2', {
      ...common,
      documents: raw.documents,
      returnDocuments: raw.return_documents,
      truncation,
    });
  }
  if (raw.texts !== undefined && raw.documents !== undefined) {
    throw new ScoreInputError('give documents or texts (text-embeddings-inference), not both', 'texts');
  }
  if (raw.texts !== undefined) {
    const truncation = readTeiTruncation(raw.truncate, raw.truncation_direction);
    return read('tei', {
      ...common,
      documents: raw.texts,
      returnDocuments: raw.return_text,
      rawScores: raw.raw_scores,
      ...(truncation ? { truncation } : {}),
    });
  }
  const truncation = readTruncatePromptTokens(raw.truncate_prompt_tokens, 'truncate_prompt_tokens');
  if (isSglangRerankBody(raw)) {
    if (raw.top_n !== undefined)
      throw new ScoreInputError("give top_k (SGLang's shape, with rid) or top_n, not both", 'top_n');
    const returnDocuments = raw.return_documents ?? true;
    return read('sglang', {
      query: raw.query,
      documents: raw.documents,
      topN: raw.top_k,
      returnDocuments,
      instruction: raw.instruction,
      ...(truncation ? { truncation } : {}),
    });
  }
  if (truncation && raw.max_chunks_per_doc !== undefined && raw.max_chunks_per_doc !== null) {
    throw new ScoreInputError('give max_chunks_per_doc or truncate_prompt_tokens, not both', 'truncate_prompt_tokens');
  }
  return read('common', {
    ...common,
    documents: raw.documents,
    returnDocuments: raw.return_documents,
    maxChunks: raw.max_chunks_per_doc,
    ...(truncation ? { truncation } : {}),
  });
}

/**
 * The body's reader for `Scorer.normalizeWith` (or its offLoop's): the template first (TemplateError before the body is
 * read).
 */
export function readRerankBody(body: unknown, route: RerankRoute = 'v1'): RequestReader<WireRerank> {
  return (source) => {
    const template = source.template();
    return normalizeRerankBody(body, template, source.context, route);
  };
}
