import { PjrtScoreError } from '../util/errors';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import type { GgufFile } from './gguf';
import { tokenizerJsonFromGguf } from './gguf-tokenizer';

type Json = Record<string, unknown>;

export interface TokenizerOptions {
  /** Parsed tokenizer_config.json, if any (passed to @huggingface/tokenizers). */
  readonly tokenizerConfig?: Json;
  readonly bosTokenId?: number;
  readonly eosTokenId?: number;
  /** The model wants a BOS token at the start of each sequence (the caller adds it; encode never does). */
  readonly addBos?: boolean;
}

/**
 * The Hugging Face tokenizer class, required on first use: a Scorer builds
 * its tokenizer at the first text request, and a restart answering token ids
 * should not pay the module's load (~25 ms).
 */
function hfTokenizerClass(): typeof HfTokenizer {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('@huggingface/tokenizers') as typeof import('@huggingface/tokenizers')).Tokenizer;
}

/**
 * How many characters one character of a tokenizer's normalized text may
 * stand for before normalization: 1 without a Unicode normalizer; with one
 * (NFC, NFKC, ...), the longest canonical decomposition of one character,
 * 4 code points (U+1F82), which composition can fold into one.
 */
export const NORMALIZER_FOLD = 4;

export class TokenizerError extends PjrtScoreError {
  declare readonly code: 'TOKENIZER_INVALID';
  constructor(message: string) {
    super(message, 'TOKENIZER_INVALID');
    this.name = 'TokenizerError';
  }
}

/**
 * Text <-> token ids for scoring, over @huggingface/tokenizers.
 *
 * `encode` has llama.cpp's `tokenize(text, add_special=false,
 * parse_special=false)` semantics: it adds no BOS/EOS, and text that looks
 * like a special token ("<|im_start|>") is tokenized as ordinary text, so a
 * request can never inject control tokens. Special (control) tokens are
 * therefore kept out of the library's added-token list; only non-special
 * added tokens are split out of the text first, as llama.cpp and HF do.
 */
export class Tokenizer {
  /** Number of token ids the tokenizer knows (max id + 1). */
  readonly vocabSize: number;
  readonly bosTokenId: number | undefined;
  readonly eosTokenId: number | undefined;
  readonly addBos: boolean;
  /**
   * The most characters (UTF-16 code units) of input one token can cover:
   * the longest vocabulary entry in characters (a byte-level entry has one
   * character per byte; a text's UTF-16 length never exceeds its UTF-8
   * bytes) times NORMALIZER_FOLD when the tokenizer normalizes. So a text
   * of more than n x maxCharsPerToken characters has more than n tokens,
   * which is known without tokenizing it (docs/design.md "Scoring semantics").
   */
  readonly maxCharsPerToken: number;
  /** What the tokenizer was built from: a worker thread builds its own copy from it (tokenizer-pool.ts). */
  readonly source: { readonly json: Json; readonly options: TokenizerOptions };
  private readonly hf: HfTokenizer;
  /** Special tokens, decoded verbatim (they are not in the library's added tokens). */
  private readonly specialText: ReadonlyMap<number, string>;

  constructor(tokenizerJson: Json, options: TokenizerOptions = {}) {
    const added = Array.isArray(tokenizerJson.added_tokens) ? (tokenizerJson.added_tokens as Json[]) : [];
    const specialText = new Map<number, string>();
    for (const t of added) if (t.special === true) specialText.set(t.id as number, t.content as string);
    // The library insists on these keys; older tokenizer.json files may omit the ones they do not use.
    const stripped = {
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder: null,
      ...tokenizerJson,
      added_tokens: added.filter((t) => t.special !== true),
    };
    try {
      this.hf = new (hfTokenizerClass())(stripped, {
        ...(options.tokenizerConfig ?? {}),
        clean_up_tokenization_spaces: false,
      });
    } catch (err) {
      throw new TokenizerError(`cannot build the tokenizer: ${(err as Error).message}`);
    }
    this.specialText = specialText;
    this.vocabSize = vocabularySize(tokenizerJson, added);
    this.maxCharsPerToken =
      longestEntry(tokenizerJson, added) * (hasUnicodeNormalizer(tokenizerJson.normalizer) ? NORMALIZER_FOLD : 1);
    this.source = { json: tokenizerJson, options };
    this.bosTokenId = options.bosTokenId;
    this.eosTokenId = options.eosTokenId;
    this.addBos = options.addBos ?? false;
  }

  /** From a Hugging Face directory: tokenizer.json (+ tokenizer_config.json when present). */
  static fromHfDir(dir: string, options: Omit<TokenizerOptions, 'tokenizerConfig'> = {}): Tokenizer {
    const file = path.join(dir, 'tokenizer.json');
    if (!fs.existsSync(file)) throw new TokenizerError(`${path.resolve(dir)} has no tokenizer.json`);
    const configFile = path.join(dir, 'tokenizer_config.json');
    const tokenizerConfig = fs.existsSync(configFile) ? (readJson(configFile) as Json) : undefined;
    return new Tokenizer(readJson(file) as Json, { ...options, tokenizerConfig });
  }

  /** From the tokenizer.ggml.* metadata of a GGUF file. */
  static fromGguf(file: GgufFile, options: Omit<TokenizerOptions, 'tokenizerConfig'> = {}): Tokenizer {
    return new Tokenizer(tokenizerJsonFromGguf(file), options);
  }

  /** Token ids of `text`: no special tokens added, none parsed from the text. */
  encode(text: string): number[] {
    if (typeof text !== 'string') throw new TypeError(`Tokenizer.encode expects a string, got ${typeof text}`);
    if (text === '') return [];
    const ids = this.hf.encode(text, { add_special_tokens: false }).ids;
    // The library returns undefined for pieces its vocabulary
    // lacks (found by fuzzing): refuse rather than pass them on.
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
        throw new TokenizerError(
          `the tokenizer has no valid token id for part of the text (got ${id}): its vocabulary is incomplete`,
        );
      }
    }
    return ids;
  }

  /** The text of `ids`, special tokens included verbatim, without any space clean-up. */
  decode(ids: readonly number[]): string {
    let text = '';
    let run: number[] = [];
    const flush = (): void => {
      if (run.length) text += this.hf.decode(run, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
      run = [];
    };
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
        throw new RangeError(`token id ${id} is outside the vocabulary [0, ${this.vocabSize})`);
      }
      const special = this.specialText.get(id);
      if (special === undefined) {
        run.push(id);
      } else {
        flush();
        text += special;
      }
    }
    flush();
    return text;
  }

  /** The vocabulary entry of an id (byte-level form for BPE), or undefined. */
  idToToken(id: number): string | undefined {
    return this.specialText.get(id) ?? this.hf.id_to_token(id);
  }

  /** The id of a vocabulary entry, or undefined. */
  tokenToId(token: string): number | undefined {
    for (const [id, text] of this.specialText) if (text === token) return id;
    return this.hf.token_to_id(token);
  }
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new TokenizerError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

/** Largest vocabulary accepted (2^24 ids; real ones are under 2^18). */
const MAX_VOCABULARY = 1 << 24;

/** Max id + 1 over the model vocabulary (object or Unigram-style array) and the added tokens. */
function vocabularySize(tokenizerJson: Json, added: readonly Json[]): number {
  const model = (tokenizerJson.model ?? {}) as Json;
  let size = 0;
  // Ids must be small non-negative integers: a junk id (null, -1, 1e400) would otherwise reach the scorer
  // (found by fuzzing). `where` is a function: naming each of ~50k tokens up front cost ~0.1 s of every load.
  const checkId = (id: unknown, where: () => string): number => {
    if (!Number.isSafeInteger(id) || (id as number) < 0 || (id as number) >= MAX_VOCABULARY) {
      throw new TokenizerError(
        `tokenizer.json ${where()} has token id ${JSON.stringify(id)}; ids are integers in [0, ${MAX_VOCABULARY})`,
      );
    }
    return id as number;
  };
  if (Array.isArray(model.vocab)) size = model.vocab.length;
  else if (model.vocab && typeof model.vocab === 'object') {
    for (const [token, id] of Object.entries(model.vocab as Record<string, unknown>))
      size = Math.max(size, checkId(id, () => `model.vocab[${JSON.stringify(token).slice(0, 40)}]`) + 1);
  }
  for (const t of added) size = Math.max(size, checkId(t.id, () => 'added_tokens') + 1);
  if (size === 0) throw new TokenizerError('the tokenizer has an empty vocabulary');
  return size;
}

/** The longest vocabulary entry (model vocabulary and added tokens), in UTF-16 code units; at least 1. */
function longestEntry(tokenizerJson: Json, added: readonly Json[]): number {
  const model = (tokenizerJson.model ?? {}) as Json;
  let longest = 1;
  const see = (entry: unknown): void => {
    if (typeof entry === 'string' && entry.length > longest) longest = entry.length;
  };
  if (Array.isArray(model.vocab)) for (const e of model.vocab as unknown[]) see(Array.isArray(e) ? e[0] : e);
  else if (model.vocab && typeof model.vocab === 'object')
    for (const token of Object.keys(model.vocab as Json)) see(token);
  for (const t of added) see(t.content);
  return longest;
}

/** Whether a tokenizer.json normalizer (or one in its Sequence) is a Unicode normalization form. */
function hasUnicodeNormalizer(normalizer: unknown): boolean {
  if (normalizer === null || typeof normalizer !== 'object') return false;
  const n = normalizer as Json;
  if (typeof n.type === 'string' && /^NF(K?)[CD]$/.test(n.type)) return true;
  if (n.type === 'BertNormalizer' || n.type === 'Precompiled') return true;
  return Array.isArray(n.normalizers) && n.normalizers.some(hasUnicodeNormalizer);
}
