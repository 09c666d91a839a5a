/**
 * The Scorer's request context, and its normalizer that tokenizes long
 * texts on a worker thread (requests/off-loop.ts, model/tokenizer-pool.ts)
 * so the event loop stays free (docs/design.md "The service"). What it
 * normalizes is a RequestReader: a wire format's body reader (lib/wire)
 * over the Scorer's context and template. The worker starts at the first
 * long text and ends with close() (the Scorer's dispose()).
 */
import type { Tokenizer } from '../model/tokenizer';
import { TokenizerPool } from '../model/tokenizer-pool';
import { Encode, normalizeOffLoop } from './requests/off-loop';
import { ScoreRequestContext } from './requests/request';
import { RerankTemplate, resolveTemplate, ResolvedTemplate } from './requests/rerank-template';

/**
 * What a request reader gets from its Scorer: the request context, and the rerank template bound to the same tokenizer.
 */
export interface RequestSource {
  readonly context: ScoreRequestContext;
  /** The rerank template (TemplateError when none fits): a rerank reader reads it first, a score reader never. */
  template(): ResolvedTemplate;
}

/**
 * Reads a request in some spelling (a wire format's body: lib/wire) into the Scorer's own types; ScoreInputError on bad
 * input.
 */
export type RequestReader<T> = (source: RequestSource) => T;

/** The model's and the settings' part of a request context. */
interface ContextFacts {
  readonly vocabSize: number;
  readonly contextLength: number;
  readonly bosTokenId?: number;
  readonly addBos: boolean;
  readonly maxItems: number;
  readonly maxRequestTokens: number;
}

/** What the normalizers read from their Scorer. */
interface OffLoopSource {
  /** The model's tokenizer, built at its first call. */
  readonly tokenizer: () => Tokenizer;
  /** The rerank template (TemplateError when none fits). */
  readonly template: () => RerankTemplate;
  /** Throws when the Scorer takes no more calls. */
  readonly assertOpen: () => void;
}

export class OffLoopTokenizer {
  private pool: TokenizerPool | null = null;
  private closed = false;
  /** The request context that tokenizes in place. */
  readonly context: ScoreRequestContext;

  private readonly tokenizer: () => Tokenizer;

  constructor(
    private readonly facts: ContextFacts,
    private readonly source: OffLoopSource,
  ) {
    this.tokenizer = source.tokenizer;
    this.context = this.contextWith((text) => source.tokenizer().encode(text));
  }

  /** The request context with another tokenize. */
  contextWith(tokenize: Encode): ScoreRequestContext {
    const tokenizer = this.tokenizer;
    return {
      ...this.facts,
      tokenize,
      // Read when a text is checked (requests/text-bound.ts): a token-id request never builds the tokenizer.
      get maxCharsPerToken() {
        return tokenizer().maxCharsPerToken;
      },
    };
  }

  /** Texts tokenized on the worker thread so far. */
  get textsSent(): number {
    return this.pool?.textsSent ?? 0;
  }

  /** The Scorer's normalizeWith with long texts tokenized off the loop: the same answer or error. */
  async normalizeWith<T>(read: RequestReader<T>): Promise<T> {
    this.source.assertOpen();
    const tokenToId = (token: string): number | undefined => this.tokenizer().tokenToId(token);
    return normalizeOffLoop(
      (encode) =>
        read({
          context: this.contextWith(encode),
          template: () => resolveTemplate(this.source.template(), { encode, tokenToId }),
        }),
      this.context.tokenize,
      (texts) => this.encodeMany(texts),
    );
  }

  /** Ends the worker thread; later long texts are refused. Idempotent. */
  close(): Promise<void> {
    this.closed = true;
    return this.pool?.close() ?? Promise.resolve();
  }

  private encodeMany(texts: readonly string[]): Promise<number[][]> {
    if (this.closed) return Promise.reject(new Error('the Scorer is disposed'));
    this.pool ??= new TokenizerPool(this.tokenizer().source);
    return this.pool.encodeMany(texts);
  }
}
