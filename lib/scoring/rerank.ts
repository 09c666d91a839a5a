/**
 * Rerank requests (docs/design.md "Rerank"): a query and documents in, documents
 * sorted by relevance out. A request is validated here, turned into one
 * multi-item score request by its template (the prompt up to the document
 * is the shared query; each document with the template's suffix is an
 * item; the labels are the template's "no" and "yes"), and its scores
 * become relevances: softmax([no, yes])[yes], Qwen3-Reranker's recipe.
 *
 * Two request spellings: the common rerank JSON (Cohere, Jina, vLLM:
 * `documents`, `top_n`, `return_documents`; `instruction` is ours) and
 * text-embeddings-inference's (`texts`, `raw_scores`, `return_text`). The
 * library's is the common one in camelCase.
 */
import { ScoreInputError, describeValue } from './errors';
import { checkUnicode, FieldNames, NormalizedRequest, normalizeTokenRequest, ScoreRequestContext } from './request';
import { ResolvedTemplate } from './rerank-template';

/** The library's rerank request. */
export interface RerankRequest {
  readonly query: string;
  /** Strings, or objects with a `text` field. */
  readonly documents: readonly (string | { readonly text: string })[];
  /** Keep only the best N results; default all. */
  readonly topN?: number;
  /** The task instruction; default the template's. */
  readonly instruction?: string;
  /** Put each document in its result; default false. */
  readonly returnDocuments?: boolean;
}

/** Which spelling a request came in, which decides the response's. */
export type RerankDialect = 'library' | 'common' | 'tei';

/** A validated rerank request: the score request it runs, and how to shape its answer. */
export interface NormalizedRerank {
  readonly dialect: RerankDialect;
  readonly score: NormalizedRequest;
  readonly documents: readonly string[];
  readonly topN: number;
  readonly returnDocuments: boolean;
  /** TEI's raw_scores: log-odds of yes against no instead of a probability. */
  readonly rawScores: boolean;
}

export interface RerankResult {
  /** Index of the document in the request. */
  readonly index: number;
  /** P(yes) / (P(yes) + P(no)) at the answer position; log-odds when rawScores. */
  readonly relevanceScore: number;
  readonly document?: string;
}

interface RerankNames {
  readonly documents: string;
  readonly topN: string;
  readonly returnDocuments: string;
  readonly instruction: string;
}

const NAMES: Record<RerankDialect, RerankNames> = {
  library: { documents: 'documents', topN: 'topN', returnDocuments: 'returnDocuments', instruction: 'instruction' },
  common: { documents: 'documents', topN: 'top_n', returnDocuments: 'return_documents', instruction: 'instruction' },
  tei: { documents: 'texts', topN: 'top_n', returnDocuments: 'return_text', instruction: 'instruction' },
};

function scoreNames(documents: string): FieldNames {
  return { request: 'request', query: 'query', items: documents, labels: 'labels', applySoftmax: 'apply_softmax', itemFirst: 'item_first' };
}

/** Validates a library rerank request. */
export function normalizeRerank(request: RerankRequest, template: ResolvedTemplate, ctx: ScoreRequestContext): NormalizedRerank {
  return normalizeFields(request as unknown as Record<string, unknown>, 'library', template, ctx);
}

/** Validates a rerank JSON body: the common shape, or TEI's when it has `texts`. */
export function normalizeRerankBody(body: unknown, template: ResolvedTemplate, ctx: ScoreRequestContext): NormalizedRerank {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ScoreInputError(`the body must be an object, got ${describeValue(body)}`, 'body');
  }
  const raw = body as Record<string, unknown>;
  if (raw.texts !== undefined && raw.documents !== undefined) {
    throw new ScoreInputError('give documents or texts (text-embeddings-inference), not both', 'texts');
  }
  if (raw.texts !== undefined) {
    return normalizeFields({ ...raw, documents: raw.texts, topN: raw.top_n, returnDocuments: raw.return_text }, 'tei', template, ctx);
  }
  return normalizeFields({ ...raw, topN: raw.top_n, returnDocuments: raw.return_documents }, 'common', template, ctx);
}

function normalizeFields(raw: Record<string, unknown>, dialect: RerankDialect, template: ResolvedTemplate, ctx: ScoreRequestContext): NormalizedRerank {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ScoreInputError(`the request must be an object, got ${describeValue(raw)}`, 'request');
  }
  const names = NAMES[dialect];
  if (typeof raw.query !== 'string') throw new ScoreInputError(`query must be a string, got ${describeValue(raw.query)}`, 'query');
  if (!Array.isArray(raw.documents)) {
    throw new ScoreInputError(`${names.documents} must be an array of strings, got ${describeValue(raw.documents)}`, names.documents);
  }
  if (raw.documents.length > ctx.maxItems) {
    throw new ScoreInputError(`too many ${names.documents}: ${raw.documents.length} > ${ctx.maxItems} (the configured maximum per request)`, names.documents);
  }
  const documents = raw.documents.map((d: unknown, i: number): string => {
    if (typeof d === 'string') return d;
    if (dialect !== 'tei' && d !== null && typeof d === 'object' && typeof (d as { text?: unknown }).text === 'string') return (d as { text: string }).text;
    throw new ScoreInputError(
      `${names.documents}[${i}] must be a string${dialect === 'tei' ? '' : ' or an object with a text string'}, got ${describeValue(d)}`,
      names.documents,
    );
  });
  const topN = optionalCount(raw.topN, names.topN) ?? documents.length;
  const returnDocuments = optionalFlag(raw.returnDocuments, names.returnDocuments) ?? false;
  const rawScores = dialect === 'tei' ? (optionalFlag(raw.raw_scores, 'raw_scores') ?? false) : false;
  let instruction = template.template.defaultInstruction;
  if (raw.instruction !== undefined && raw.instruction !== null) {
    if (typeof raw.instruction !== 'string') throw new ScoreInputError(`instruction must be a string, got ${describeValue(raw.instruction)}`, names.instruction);
    instruction = raw.instruction;
  }
  checkUnicode(raw.query, 'query', 'query');
  checkUnicode(instruction, 'instruction', names.instruction);
  documents.forEach((d, i) => checkUnicode(d, `${names.documents}[${i}]`, names.documents));
  const bos = ctx.addBos && ctx.bosTokenId !== undefined ? [ctx.bosTokenId] : [];
  const score = normalizeTokenRequest(
    {
      query: [...bos, ...template.prefixTokens(raw.query, instruction)],
      items: documents.map((d) => template.documentTokens(d)),
      labels: [template.noId, template.yesId],
      applySoftmax: true,
    },
    scoreNames(names.documents),
    ctx,
  );
  return { dialect, score, documents, topN, returnDocuments, rawScores };
}

function optionalCount(value: unknown, param: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new ScoreInputError(`${param} must be a non-negative integer, got ${describeValue(value)}`, param);
  }
  return value;
}

function optionalFlag(value: unknown, param: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new ScoreInputError(`${param} must be a boolean, got ${describeValue(value)}`, param);
  return value;
}

/**
 * Scores ([no, yes] probabilities per document, softmaxed over the two) to
 * results sorted by relevance, best first (ties: request order), cut to topN.
 */
export function rerankResults(request: NormalizedRerank, scores: readonly (readonly number[])[]): RerankResult[] {
  const results = scores.map((row, index): RerankResult => {
    const [no, yes] = row;
    const relevanceScore = request.rawScores ? Math.log(yes) - Math.log(no) : yes;
    return { index, relevanceScore, ...(request.returnDocuments ? { document: request.documents[index] } : {}) };
  });
  results.sort((a, b) => b.relevanceScore - a.relevanceScore || a.index - b.index);
  return results.slice(0, request.topN);
}
