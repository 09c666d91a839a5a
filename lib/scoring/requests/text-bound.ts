/**
 * Text that cannot fit, refused before it is tokenized (docs/design.md
 * "Scoring semantics"): a text of more than n x maxCharsPerToken
 * characters has more than n tokens (the tokenizer's maxCharsPerToken,
 * lib/model/tokenizer.ts), so a 7.5 MB item is a 400 at once, not after
 * seconds of tokenizing. The bound is loose (a real text has several
 * characters a token, not the longest token's count), so it never refuses
 * what would fit: what passes it is tokenized and checked exactly.
 */
import { ScoreInputError } from './errors';

/** What the bound needs from the request context. */
interface TextBoundContext {
  readonly contextLength: number;
  readonly maxRequestTokens: number;
  /** The tokenizer's maxCharsPerToken; no bound when undefined (a context without one). */
  readonly maxCharsPerToken?: number;
}

/** The most characters a text of at most `tokens` tokens can have; Infinity without a bound. */
export function charsFor(tokens: number, ctx: TextBoundContext): number {
  return ctx.maxCharsPerToken === undefined ? Infinity : tokens * ctx.maxCharsPerToken;
}

/**
 * Throws the 400 when `text` (named `where`, reported under `param`) has
 * more characters than `tokens` tokens can hold; `fix` names the field that
 * would make it fit (truncation), when there is one.
 */
export function checkTextBound(
  text: string,
  tokens: number,
  limit: string,
  where: string,
  param: string,
  ctx: TextBoundContext,
  fix?: string,
): void {
  const chars = charsFor(tokens, ctx);
  if (text.length <= chars) return;
  throw new ScoreInputError(
    `${where} is ${text.length} characters: more than ${limit} of ${tokens} tokens can hold ` +
      `(at most ${chars} characters: ${tokens} x ${ctx.maxCharsPerToken}, ` +
      `the tokenizer's longest token), refused before tokenizing` +
      (fix ? `; set ${fix} to cut it` : ''),
    param,
  );
}

/** Throws the 400 when the texts together pass what the request's token limit can hold. */
export function checkTotalTextBound(texts: readonly string[], param: string, ctx: TextBoundContext): void {
  const chars = charsFor(ctx.maxRequestTokens, ctx);
  if (chars === Infinity) return;
  let total = 0;
  for (const text of texts) total += text.length;
  if (total <= chars) return;
  throw new ScoreInputError(
    `the request's texts are ${total} characters: ` +
      `more than the limit of ${ctx.maxRequestTokens} tokens per request can hold ` +
      `(at most ${chars} characters: ${ctx.maxRequestTokens} x ${ctx.maxCharsPerToken}, ` +
      `the tokenizer's longest token), refused before tokenizing`,
    param,
  );
}

/** What a rerank request's bounds need: its texts, and the names its errors use. */
interface RerankTexts {
  readonly query: string;
  readonly instruction: string;
  readonly documents: readonly string[];
  /** max_chunks_per_doc: a document may be that many contexts long. */
  readonly maxChunks: number | undefined;
  /** The request truncates, which fits a document of any length. */
  readonly truncates: boolean;
  readonly names: { readonly documents: string; readonly instruction: string; readonly truncate: string };
}

/**
 * A rerank's text that cannot fit, refused before the template tokenizes
 * it: the query and instruction within the context; each document within
 * the context (max_chunks_per_doc contexts), unless the request truncates.
 */
export function checkRerankTextBounds(r: RerankTexts, ctx: TextBoundContext): void {
  const context = "the model's context";
  checkTextBound(r.query, ctx.contextLength, context, 'query', 'query', ctx);
  checkTextBound(r.instruction, ctx.contextLength, context, 'instruction', r.names.instruction, ctx);
  if (r.truncates) return;
  const tokens = ctx.contextLength * (r.maxChunks ?? 1);
  const limit = r.maxChunks === undefined ? context : `${r.maxChunks} chunks (max_chunks_per_doc)`;
  r.documents.forEach((d, i) =>
    checkTextBound(d, tokens, limit, `${r.names.documents}[${i}]`, r.names.documents, ctx, r.names.truncate),
  );
  if (r.maxChunks === undefined) checkTotalTextBound([r.query, ...r.documents], r.names.documents, ctx);
}
