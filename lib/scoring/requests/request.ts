/**
 * Request -> token sequences (docs/design.md "Scoring semantics"). One validator,
 * `normalizeScoreFields`, serves every spelling: the library's camelCase
 * `normalizeRequest` here, and the wire formats' bodies (lib/wire), each
 * naming its fields (FieldNames). Errors name the field the way the caller
 * spelled it. The input is never mutated and nothing is kept between calls,
 * so a rejected request changes nothing. The field readers: request-fields.ts.
 */
import { ScoreInputError, describeValue } from './errors';
import {
  asRecord,
  FieldNames,
  Piece,
  readFlag,
  readItemList,
  readItems,
  readLabels,
  readPiece,
} from './request-fields';
import { checkTextBound, checkTotalTextBound } from './text-bound';
import { cutTokens, readTruncateOption, TruncateOption, TruncationReport, TruncationSpec } from './truncate';

/** What the normalizer needs to know about the model and the service limits. */
export interface ScoreRequestContext {
  /** Token ids must lie in [0, vocabSize). */
  readonly vocabSize: number;
  /** Longest sequence (query + one item) the model accepts. */
  readonly contextLength: number;
  /** Most items one request may carry. */
  readonly maxItems: number;
  /** Most tokens one request may carry, counting the query once plus every item. */
  readonly maxRequestTokens: number;
  /** Text -> token ids, without special tokens. */
  tokenize(text: string): number[];
  /** The BOS token, required when addBos. */
  readonly bosTokenId?: number;
  /** Whether the model's tokenizer config prepends BOS to a sequence. */
  readonly addBos: boolean;
  /**
   * The tokenizer's maxCharsPerToken: text that cannot fit is refused before it is tokenized (text-bound.ts); none when
   * undefined.
   */
  readonly maxCharsPerToken?: number;
}

/** A token-id list as a caller may pass it: a plain array or an integer typed array. */
export type TokenIdList = readonly number[] | Int32Array | Uint32Array | Uint16Array;

/** The library's request (camelCase). */
export interface ScoreRequest {
  query: string | TokenIdList;
  items: string | readonly string[] | readonly TokenIdList[];
  labelTokenIds: TokenIdList;
  applySoftmax?: boolean;
  itemFirst?: boolean;
  /** Cut items whose sequence passes the context (truncate.ts); default: such a request is an error. */
  truncate?: TruncateOption;
}

/** A validated request in token space, ready for planning. */
export interface NormalizedRequest {
  /** The query's tokens; starts with BOS when the model adds one and the query comes first. */
  readonly queryTokens: number[];
  /** One token list per item in request order; each starts with BOS when the model adds one and itemFirst. */
  readonly itemTokens: number[][];
  /** Label token ids in request order (duplicates kept). */
  readonly labels: number[];
  readonly applySoftmax: boolean;
  readonly itemFirst: boolean;
  /** Whether the request came as text (tokenized here) or as token ids. */
  readonly inputKind: 'text' | 'tokens';
  /** Tokens the request runs: the query once plus every item (the usage count of the response). */
  readonly promptTokens: number;
  /** Present when the request asked for truncation: the counts before and after, and which items were cut. */
  readonly truncation?: TruncationReport;
}

const LIBRARY_NAMES: FieldNames = {
  request: 'request',
  query: 'query',
  items: 'items',
  labels: 'labelTokenIds',
  applySoftmax: 'applySoftmax',
  itemFirst: 'itemFirst',
  truncate: 'truncate',
};

/**
 * Normalizes a request already in token space (a rerank prompt built from a
 * template), checking the same limits under the caller's field names.
 */
export function normalizeTokenRequest(
  fields: {
    readonly query: readonly number[];
    readonly items: readonly (readonly number[])[];
    readonly labels: readonly number[];
    readonly applySoftmax: boolean;
    readonly truncation?: TruncationSpec;
    /** Tokens at the end of every item that truncation never cuts (a rerank template's suffix). */
    readonly tail?: number;
  },
  names: FieldNames,
  ctx: ScoreRequestContext,
): NormalizedRequest {
  return normalizeScoreFields({ ...fields, itemFirst: false }, names, ctx);
}

/** Normalizes a library request (camelCase fields). Throws ScoreInputError on bad input. */
export function normalizeRequest(request: ScoreRequest, ctx: ScoreRequestContext): NormalizedRequest {
  const raw = asRecord(request, LIBRARY_NAMES);
  const truncation = readTruncateOption(raw.truncate, 'truncate');
  const fields: ScoreFields = {
    query: raw.query,
    items: raw.items,
    labels: raw.labelTokenIds,
    applySoftmax: raw.applySoftmax,
    itemFirst: raw.itemFirst,
    ...(truncation ? { truncation } : {}),
  };
  return normalizeScoreFields(fields, LIBRARY_NAMES, ctx);
}

/**
 * A score request's fields as read from one spelling, not yet checked (a wire format's body reads into this: lib/wire).
 */
export interface ScoreFields {
  readonly query: unknown;
  readonly items: unknown;
  readonly labels: unknown;
  readonly applySoftmax: unknown;
  readonly itemFirst: unknown;
  readonly truncation?: TruncationSpec;
  readonly tail?: number;
}

/**
 * Checks and tokenizes a score request's fields, errors naming them as `names` spells them. Throws ScoreInputError on
 * bad input.
 */
export function normalizeScoreFields(raw: ScoreFields, names: FieldNames, ctx: ScoreRequestContext): NormalizedRequest {
  checkContext(ctx);
  const vocab = ctx.vocabSize;

  // Cheap structural checks first, in field order, so the first error reported is the first field at fault.
  if (raw.query === undefined) {
    throw new ScoreInputError(`${names.query} is required: a string or an array of token ids`, names.query);
  }
  const query = readPiece(raw.query, names.query, names.query, vocab);

  if (raw.items === undefined) {
    throw new ScoreInputError(
      `${names.items} is required: a string, an array of strings or an array of token-id arrays`,
      names.items,
    );
  }
  const rawItems = readItemList(raw.items, names.items);
  // Before looking inside the items: a huge list is rejected without walking it.
  if (rawItems.length > ctx.maxItems) {
    throw new ScoreInputError(
      `too many items: ${rawItems.length} > ${ctx.maxItems} (the configured maximum per request)`,
      names.items,
    );
  }
  const items = readItems(rawItems, query.kind, names, vocab);

  const labels = readLabels(raw.labels, names.labels, vocab);
  const applySoftmax = readFlag(raw.applySoftmax, names.applySoftmax);
  const itemFirst = readFlag(raw.itemFirst, names.itemFirst);

  // Text that cannot fit is refused before anything is tokenized (text-bound.ts).
  const tokenLimit = Math.min(ctx.contextLength, ctx.maxRequestTokens);
  const limitName = ctx.contextLength <= ctx.maxRequestTokens ? "the model's context" : 'the per-request limit';
  if (query.kind === 'text') checkTextBound(query.text, tokenLimit, limitName, names.query, names.query, ctx);
  if (raw.truncation === undefined) {
    items.forEach((item, i) => {
      if (item.kind === 'text')
        checkTextBound(item.text, tokenLimit, limitName, `${names.items}[${i}]`, names.items, ctx, names.truncate);
    });
    if (query.kind === 'text')
      checkTotalTextBound(
        [query, ...items].map((p) => (p.kind === 'text' ? p.text : '')),
        names.items,
        ctx,
      );
  }

  const inputKind = query.kind;
  // BOS belongs at the start of the whole sequence: query ++ item, or item ++ query when itemFirst.
  // Token-id requests are taken as the exact sequence the caller wants, so BOS is added to text only.
  const bos = inputKind === 'text' && ctx.addBos ? [bosOf(ctx)] : [];
  const queryTokens = [...(itemFirst ? [] : bos), ...tokensOf(query, ctx, names.query)];
  // An empty query (SGLang allows one) makes each item its own sequence: the
  // plans run it serial, like item_first. An item must then bring a token to score at.
  const emptyQuery = queryTokens.length === 0 && bos.length === 0;
  if (queryTokens.length > ctx.contextLength) {
    throw new ScoreInputError(
      `${names.query} is ${queryTokens.length} tokens, longer than the model's context of ${ctx.contextLength} tokens`,
      names.query,
    );
  }
  if (queryTokens.length > ctx.maxRequestTokens) {
    throw new ScoreInputError(
      `${names.query} is ${queryTokens.length} tokens, ` +
        `more than the limit of ${ctx.maxRequestTokens} tokens per request`,
      names.query,
    );
  }

  let promptTokens = queryTokens.length;
  let tokensBefore = queryTokens.length;
  const truncatedItems: number[] = [];
  const spec = raw.truncation;
  const tail = raw.tail ?? 0;
  // Room for an item's own tokens in one sequence (its BOS, when it leads, counted).
  const room =
    Math.min(spec?.maxSequenceTokens ?? ctx.contextLength, ctx.contextLength) -
    queryTokens.length -
    (itemFirst ? bos.length : 0);
  const itemTokens: number[][] = [];
  for (let i = 0; i < items.length; i++) {
    let own = tokensOf(items[i], ctx, `${names.items}[${i}]`);
    tokensBefore += own.length + (itemFirst ? bos.length : 0);
    if (spec) {
      const limit = Math.min(
        spec.maxItemTokens !== undefined ? spec.maxItemTokens + tail : Infinity,
        spec.toContext ? room : Infinity,
      );
      // A cut must leave at least one of the item's own tokens.
      if (own.length > limit && limit < tail + 1) {
        throw new ScoreInputError(
          `${names.query} is ${queryTokens.length} tokens: it leaves no room for ${names.items}[${i}] ` +
            `within ${Math.min(spec.maxSequenceTokens ?? ctx.contextLength, ctx.contextLength)} tokens`,
          names.query,
        );
      }
      if (own.length > limit) {
        const body = own.slice(0, own.length - tail);
        own = [...cutTokens(body, limit - tail, spec.keep), ...own.slice(own.length - tail)];
        truncatedItems.push(i);
      }
    }
    const tokens = [...(itemFirst ? bos : []), ...own];
    if (emptyQuery && tokens.length === 0) {
      throw new ScoreInputError(
        `${names.items}[${i}] is empty and so is ${names.query}: the sequence has no token to score at`,
        names.items,
      );
    }
    const sequenceLength = queryTokens.length + tokens.length;
    if (sequenceLength > ctx.contextLength) {
      throw new ScoreInputError(
        `${names.query} + ${names.items}[${i}] is ${sequenceLength} tokens, ` +
          `longer than the model's context of ${ctx.contextLength} tokens: ` +
          `set ${names.truncate} to cut it`,
        names.items,
      );
    }
    promptTokens += tokens.length;
    // Stop tokenizing as soon as the budget is blown: the rest would be wasted work.
    if (promptTokens > ctx.maxRequestTokens) {
      throw new ScoreInputError(
        `the request has at least ${promptTokens} tokens (the query once plus every item), ` +
          `more than the limit of ${ctx.maxRequestTokens}`,
        names.items,
      );
    }
    itemTokens.push(tokens);
  }

  const truncation: TruncationReport | undefined = spec
    ? { tokensBefore, tokensAfter: promptTokens, truncatedItems }
    : undefined;
  return {
    queryTokens,
    itemTokens,
    labels,
    applySoftmax,
    itemFirst,
    inputKind,
    promptTokens,
    ...(truncation ? { truncation } : {}),
  };
}

function tokensOf(piece: Piece, ctx: ScoreRequestContext, where: string): number[] {
  if (piece.kind === 'tokens') return piece.ids;
  const ids = ctx.tokenize(piece.text);
  // A tokenizer that disagrees with the model's vocabulary is a server fault (500), not bad input.
  if (!Array.isArray(ids)) throw new Error(`tokenizer returned ${describeValue(ids)} for ${where}, expected an array`);
  for (let j = 0; j < ids.length; j++) {
    const id = ids[j];
    if (!Number.isInteger(id) || id < 0 || id >= ctx.vocabSize) {
      throw new Error(
        `tokenizer produced token id ${id} for ${where}, outside the model's vocabulary [0, ${ctx.vocabSize})`,
      );
    }
  }
  return ids.slice();
}

function bosOf(ctx: ScoreRequestContext): number {
  const bos = ctx.bosTokenId;
  if (bos === undefined || !Number.isInteger(bos) || bos < 0 || bos >= ctx.vocabSize) {
    throw new Error(`the model adds BOS but its BOS token id (${String(bos)}) is not in the vocabulary`);
  }
  return bos;
}

function checkContext(ctx: ScoreRequestContext): void {
  for (const field of ['vocabSize', 'contextLength', 'maxItems', 'maxRequestTokens'] as const) {
    const value = ctx[field];
    if (!Number.isInteger(value) || value < 0) {
      throw new TypeError(`ScoreRequestContext.${field} must be a non-negative integer, got ${String(value)}`);
    }
  }
  if (typeof ctx.tokenize !== 'function') throw new TypeError('ScoreRequestContext.tokenize must be a function');
}
