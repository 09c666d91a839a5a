/**
 * Rerank requests (docs/design.md "Rerank"): a query and documents in, documents
 * sorted by relevance out. A request is validated here, turned into one
 * multi-item score request by its template (the prompt up to the document
 * is the shared query; each document with the template's suffix is an
 * item; the labels are the template's "no" and "yes"), and its scores
 * become relevances: softmax([no, yes])[yes], Qwen3-Reranker's recipe, or
 * for a template whose relevance is 'yes-logit' (FlagEmbedding's) the raw
 * logit of "yes", read with the LM head's log-normalizer label
 * (lib/hlo/nn/lm-head.ts), and its sigmoid.
 *
 * One validator, `normalizeRerankFields`, serves every spelling: the
 * library's camelCase `normalizeRerank` here, and the wire formats' bodies
 * (lib/wire: the common one, Cohere v2, TEI, SGLang; docs/rerank.md has the
 * table), each naming its fields and saying what it allows (RerankSpelling).
 */
import { ScoreInputError, describeValue } from './errors';
import { NormalizedRequest, normalizeTokenRequest, ScoreRequestContext } from './request';
import { checkUnicode, FieldNames } from './request-fields';
import { LOG_NORMALIZER_LABEL } from '../../hlo';
import { RelevanceScale, ResolvedTemplate } from './rerank-template';
import { checkRerankTextBounds } from './text-bound';
import { positiveCount, readTruncateOption, TruncateOption, TruncationSpec } from './truncate';

/** The library's rerank request. */
export interface RerankRequest {
  readonly query: string;
  /** Strings, or objects whose `rankFields` (default `text`) are ranked. */
  readonly documents: readonly (string | Readonly<Record<string, unknown>>)[];
  /** Keep only the best N results; default all. */
  readonly topN?: number;
  /** The task instruction; default the template's. */
  readonly instruction?: string;
  /** Put each document in its result; default false. */
  readonly returnDocuments?: boolean;
  /** Fields of object documents ranked, in order (their values joined by newlines); default ['text']. */
  readonly rankFields?: readonly string[];
  /** Cut documents past the context (truncate.ts); default: such a document is an error. */
  readonly truncate?: TruncateOption;
  /**
   * The template's raw score instead of a probability; default false. Most
   * templates: the log-odds of yes against no (the logit difference, what
   * mxbai-rerank reports); bge-reranker-v2-gemma: the logit of "Yes" (what
   * FlagEmbedding's compute_score reports; the default is its sigmoid).
   */
  readonly rawScores?: boolean;
}

/** A validated rerank request: the score request it runs, and how to shape its answer. */
export interface NormalizedRerank {
  readonly score: NormalizedRequest;
  /** The text ranked for each document. */
  readonly documents: readonly string[];
  /** Each document as the caller sent it (a string or its whole object). */
  readonly originals: readonly unknown[];
  /** For each item of `score`, the document it belongs to (several with max_chunks_per_doc). */
  readonly itemDocument: readonly number[];
  readonly topN: number;
  readonly returnDocuments: boolean;
  /** TEI's raw_scores (the library's rawScores): the template's raw score instead of a probability. */
  readonly rawScores: boolean;
  /** How the scores become relevances (the template's). */
  readonly relevance: RelevanceScale;
  /** Documents split into chunks by max_chunks_per_doc (their indices). */
  readonly chunkedDocuments: readonly number[];
}

export interface RerankResult {
  /** Index of the document in the request. */
  readonly index: number;
  /**
   * P(yes) / (P(yes) + P(no)) at the answer position (the best chunk's); log-odds when rawScores (the template's scale:
   * RelevanceScale).
   */
  readonly relevanceScore: number;
  /** The ranked text. */
  readonly document?: string;
  /** The document as the caller sent it. */
  readonly original?: unknown;
}

/** How one spelling names a rerank request's fields, used in `.param` and messages. */
export interface RerankNames {
  readonly documents: string;
  readonly topN: string;
  readonly returnDocuments: string;
  readonly instruction: string;
  /** The field that makes a document past the context fit, named in that 400. */
  readonly truncate: string;
  readonly rankFields: string;
  readonly rawScores: string;
}

/** One spelling of a rerank request: its names, and what it allows. */
export interface RerankSpelling {
  readonly names: RerankNames;
  /** Documents may be objects ranked through rank fields; else strings only (and rank fields are refused). */
  readonly objectDocuments: boolean;
  /** The spelling has a raw-scores flag; else it is never read. */
  readonly rawScores: boolean;
}

/** The library's spelling (camelCase). */
const LIBRARY_SPELLING: RerankSpelling = {
  names: {
    documents: 'documents',
    topN: 'topN',
    returnDocuments: 'returnDocuments',
    instruction: 'instruction',
    truncate: 'truncate',
    rankFields: 'rankFields',
    rawScores: 'rawScores',
  },
  objectDocuments: true,
  rawScores: true,
};

function scoreNames(names: RerankNames): FieldNames {
  return {
    request: 'request',
    query: 'query',
    items: names.documents,
    labels: 'labels',
    applySoftmax: 'apply_softmax',
    itemFirst: 'item_first',
    truncate: names.truncate,
  };
}

/** The fields every spelling is read into (a wire format's body reads into this: lib/wire). */
export interface RerankFields {
  readonly query: unknown;
  readonly documents: unknown;
  readonly topN: unknown;
  readonly returnDocuments: unknown;
  readonly instruction: unknown;
  readonly rankFields?: unknown;
  readonly rawScores?: unknown;
  readonly maxChunks?: unknown;
  readonly truncation?: TruncationSpec;
}

/** Validates a library rerank request. */
export function normalizeRerank(
  request: RerankRequest,
  template: ResolvedTemplate,
  ctx: ScoreRequestContext,
): NormalizedRerank {
  const raw = asObject(request, 'request');
  const truncation = readTruncateOption(raw.truncate, 'truncate');
  return normalizeRerankFields(
    {
      query: raw.query,
      documents: raw.documents,
      topN: raw.topN,
      returnDocuments: raw.returnDocuments,
      instruction: raw.instruction,
      rankFields: raw.rankFields,
      rawScores: raw.rawScores,
      ...(truncation ? { truncation } : {}),
    },
    LIBRARY_SPELLING,
    template,
    ctx,
  );
}

/** `value` as an object, else a ScoreInputError naming `param` ('request', 'body'). */
export function asObject(value: unknown, param: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ScoreInputError(`the ${param} must be an object, got ${describeValue(value)}`, param);
  }
  return value as Record<string, unknown>;
}

/**
 * Checks a rerank request's fields and builds its score request through the template. Throws ScoreInputError on bad
 * input.
 */
export function normalizeRerankFields(
  raw: RerankFields,
  spelling: RerankSpelling,
  template: ResolvedTemplate,
  ctx: ScoreRequestContext,
): NormalizedRerank {
  const names = spelling.names;
  if (typeof raw.query !== 'string')
    throw new ScoreInputError(`query must be a string, got ${describeValue(raw.query)}`, 'query');
  // Nothing to judge relevance to: every document would score alike.
  if (raw.query.trim() === '')
    throw new ScoreInputError('query is empty: a rerank needs a query to rank the documents against', 'query');
  if (!Array.isArray(raw.documents)) {
    throw new ScoreInputError(
      `${names.documents} must be an array of strings, got ${describeValue(raw.documents)}`,
      names.documents,
    );
  }
  if (raw.documents.length > ctx.maxItems) {
    throw new ScoreInputError(
      `too many ${names.documents}: ${raw.documents.length} > ${ctx.maxItems} (the configured maximum per request)`,
      names.documents,
    );
  }
  const rankFields = readRankFields(raw.rankFields, spelling);
  const originals: unknown[] = raw.documents;
  const documents = originals.map((d, i) => documentText(d, i, spelling.objectDocuments, names.documents, rankFields));
  const topN = optionalCount(raw.topN, names.topN) ?? documents.length;
  const returnDocuments = optionalFlag(raw.returnDocuments, names.returnDocuments) ?? false;
  const rawScores = spelling.rawScores ? (optionalFlag(raw.rawScores, names.rawScores) ?? false) : false;
  const maxChunks =
    raw.maxChunks === undefined || raw.maxChunks === null
      ? undefined
      : positiveCount(raw.maxChunks, 'max_chunks_per_doc', 'max_chunks_per_doc');
  let instruction = template.template.defaultInstruction;
  if (raw.instruction !== undefined && raw.instruction !== null) {
    if (typeof raw.instruction !== 'string')
      throw new ScoreInputError(
        `instruction must be a string, got ${describeValue(raw.instruction)}`,
        names.instruction,
      );
    instruction = raw.instruction;
  }
  checkUnicode(raw.query, 'query', 'query');
  checkUnicode(instruction, 'instruction', names.instruction);
  documents.forEach((d, i) => checkUnicode(d, `${names.documents}[${i}]`, names.documents));
  checkRerankTextBounds(
    { query: raw.query, instruction, documents, maxChunks, truncates: raw.truncation !== undefined, names },
    ctx,
  );
  const bos = ctx.addBos && ctx.bosTokenId !== undefined ? [ctx.bosTokenId] : [];
  const query = [...bos, ...template.prefixTokens(raw.query, instruction)];
  let items = documents.map((d) => template.documentTokens(d, instruction));
  let itemDocument = documents.map((_, i) => i);
  const chunkedDocuments: number[] = [];
  const tail = template.suffixLength(instruction);
  if (maxChunks !== undefined)
    ({ items, itemDocument } = chunkItems(items, query.length, tail, maxChunks, ctx.contextLength, chunkedDocuments));
  const relevance = template.template.relevance ?? 'yes-vs-no';
  const yesNo = normalizeTokenRequest(
    {
      query,
      items,
      labels: [template.noId, template.yesId],
      applySoftmax: relevance === 'yes-vs-no',
      tail,
      ...(raw.truncation ? { truncation: raw.truncation } : {}),
    },
    scoreNames(names),
    ctx,
  );
  // 'yes-logit': a third column, the log-normalizer (its "probability" exp(-logsumexp)), not a token.
  const score = relevance === 'yes-logit' ? { ...yesNo, labels: [...yesNo.labels, LOG_NORMALIZER_LABEL] } : yesNo;
  return { score, documents, originals, itemDocument, topN, returnDocuments, rawScores, relevance, chunkedDocuments };
}

/**
 * Cohere v1's max_chunks_per_doc: a document whose sequence passes the
 * context is cut into consecutive chunks that fit (each followed by the
 * template's suffix), at most `maxChunks` of them (the rest of the document
 * is dropped); the document scores as its best chunk.
 */
function chunkItems(
  items: readonly number[][],
  queryLength: number,
  tail: number,
  maxChunks: number,
  contextLength: number,
  chunked: number[],
): { items: number[][]; itemDocument: number[] } {
  const room = contextLength - queryLength - tail;
  if (room < 1)
    throw new ScoreInputError(
      `query is ${queryLength} tokens: it leaves no room for a document within the context of ${contextLength} tokens`,
      'query',
    );
  const out: number[][] = [];
  const itemDocument: number[] = [];
  items.forEach((item, d) => {
    const body = item.slice(0, item.length - tail);
    const suffix = item.slice(item.length - tail);
    if (body.length <= room) {
      out.push(item);
      itemDocument.push(d);
      return;
    }
    chunked.push(d);
    for (let c = 0; c < maxChunks && c * room < body.length; c++) {
      out.push([...body.slice(c * room, (c + 1) * room), ...suffix]);
      itemDocument.push(d);
    }
  });
  return { items: out, itemDocument };
}

function readRankFields(value: unknown, spelling: RerankSpelling): readonly string[] {
  if (value === undefined || value === null) return ['text'];
  const param = spelling.names.rankFields;
  if (!spelling.objectDocuments) throw new ScoreInputError(`${param} is Cohere v1's (POST /v1/rerank)`, param);
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    !value.every((f): f is string => typeof f === 'string' && f !== '')
  ) {
    throw new ScoreInputError(`${param} must be a non-empty array of field names, got ${describeValue(value)}`, param);
  }
  return value;
}

/** The text ranked for one document: a string, or the values of `rankFields` in order, joined by newlines. */
function documentText(
  d: unknown,
  i: number,
  objectDocuments: boolean,
  param: string,
  rankFields: readonly string[],
): string {
  if (typeof d === 'string') return d;
  const stringsOnly = !objectDocuments;
  if (stringsOnly || d === null || typeof d !== 'object' || Array.isArray(d)) {
    const objects = stringsOnly ? '' : ' or an object with the ranked fields';
    throw new ScoreInputError(`${param}[${i}] must be a string${objects}, got ${describeValue(d)}`, param);
  }
  const record = d as Record<string, unknown>;
  const values: string[] = [];
  for (const field of rankFields) {
    const v = record[field];
    if (v === undefined || v === null) continue;
    if (typeof v === 'string') values.push(v);
    else if (typeof v === 'number' || typeof v === 'boolean') values.push(String(v));
    else
      throw new ScoreInputError(
        `${param}[${i}].${field} must be a string, number or boolean to be ranked, got ${describeValue(v)}`,
        param,
      );
  }
  if (values.length === 0) {
    throw new ScoreInputError(
      `${param}[${i}] has none of the ranked fields (${rankFields.join(', ')}): name them in rank_fields`,
      param,
    );
  }
  return values.join('\n');
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
  if (typeof value !== 'boolean')
    throw new ScoreInputError(`${param} must be a boolean, got ${describeValue(value)}`, param);
  return value;
}
