import type { GgufFile } from './gguf';
import { GgufError } from './gguf-types';

/*
 * Turn the tokenizer stored in GGUF metadata (tokenizer.ggml.*) into a
 * tokenizer.json-shaped object that @huggingface/tokenizers can run, with
 * the pre-tokenizer llama.cpp uses for the file's `tokenizer.ggml.pre`
 * (llama-vocab.cpp, llm_tokenizer_bpe): a sequence of regex splits whose
 * matches and gaps both become pieces, then GPT-2 byte-level BPE.
 */

/** GPT-2's split. llama.cpp lists it without the final `|\s+`, but its hand-written matcher behaves as if it were there. */
const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
/** Qwen2's split, with (?i:...) spelled out as llama.cpp does. */
const QWEN2 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const LLAMA3 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/**
 * tokenizer.ggml.pre -> the regexes llama.cpp applies in order, and whether
 * a piece found whole in the vocabulary skips the merges (llama3 does).
 * Taken from llama-vocab.cpp; only `smollm` (the default model) is verified
 * against llama.cpp's output (test/fixtures/tokenizer-golden.json). The
 * library runs the patterns with \s as \p{White_Space}, which is also
 * llama.cpp's whitespace class.
 */
interface PreTokenizerRecipe {
  readonly splits: readonly string[];
  readonly ignoreMerges: boolean;
}
const DIGITS_THEN_GPT2: PreTokenizerRecipe = { splits: ['\\p{N}', GPT2], ignoreMerges: false };
const GPT2_ONLY: PreTokenizerRecipe = { splits: [GPT2], ignoreMerges: false };
const QWEN2_RECIPE: PreTokenizerRecipe = { splits: [QWEN2], ignoreMerges: false };
const LLAMA3_RECIPE: PreTokenizerRecipe = { splits: [LLAMA3], ignoreMerges: true };
const PRE_TOKENIZERS: Readonly<Record<string, PreTokenizerRecipe>> = {
  smollm: DIGITS_THEN_GPT2,
  starcoder: DIGITS_THEN_GPT2,
  refact: DIGITS_THEN_GPT2,
  'command-r': DIGITS_THEN_GPT2,
  codeshell: DIGITS_THEN_GPT2,
  'gpt-2': GPT2_ONLY,
  mpt: GPT2_ONLY,
  olmo: GPT2_ONLY,
  qwen2: QWEN2_RECIPE,
  stablelm2: QWEN2_RECIPE,
  'llama-bpe': LLAMA3_RECIPE,
  'llama-v3': LLAMA3_RECIPE,
  llama3: LLAMA3_RECIPE,
};

/** llama_token_type values stored in tokenizer.ggml.token_type. */
const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

export interface TokenizerJsonAddedToken {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

/**
 * Build a tokenizer.json object from GGUF metadata. Control and unknown
 * tokens are marked special and user-defined tokens non-special: with
 * parse_special=false llama.cpp still splits user-defined tokens out of the
 * text first, but treats control tokens as ordinary text.
 */
export function tokenizerJsonFromGguf(file: GgufFile): Record<string, unknown> {
  const meta = file.meta;
  const model = meta.string('tokenizer.ggml.model');
  if (model !== 'gpt2') {
    throw new GgufError(
      `GGUF tokenizer model "${model}" is not supported yet (supported: gpt2, i.e. byte-level BPE); ` +
        'use a Hugging Face directory with tokenizer.json instead',
      'GGUF_UNSUPPORTED',
    );
  }
  const pre = meta.string('tokenizer.ggml.pre', 'optional') ?? 'default';
  const recipe = PRE_TOKENIZERS[pre];
  if (!recipe) {
    throw new GgufError(
      `GGUF tokenizer.ggml.pre "${pre}" is not supported yet (supported: ${Object.keys(PRE_TOKENIZERS).join(', ')})`,
      'GGUF_UNSUPPORTED',
    );
  }
  const tokens = meta.stringArray('tokenizer.ggml.tokens');
  const types = meta.numberArray('tokenizer.ggml.token_type', 'optional');
  if (types && types.length !== tokens.length) {
    throw new GgufError(`GGUF tokenizer.ggml.token_type has ${types.length} entries but tokenizer.ggml.tokens has ${tokens.length}`);
  }
  const merges = meta.stringArray('tokenizer.ggml.merges');

  // Later duplicates win, as in llama.cpp's token_to_id map.
  const vocab: Record<string, number> = Object.create(null) as Record<string, number>;
  tokens.forEach((t, id) => (vocab[t] = id));
  const addedTokens: TokenizerJsonAddedToken[] = [];
  types?.forEach((type, id) => {
    const special = type === TOKEN_TYPE.CONTROL || type === TOKEN_TYPE.UNKNOWN;
    if (!special && type !== TOKEN_TYPE.USER_DEFINED) return;
    addedTokens.push({ id, content: tokens[id], single_word: false, lstrip: false, rstrip: false, normalized: false, special });
  });

  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        ...recipe.splits.map((regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false })),
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: recipe.ignoreMerges,
      vocab,
      merges,
    },
  };
}
