import type { GgufFile } from './gguf';
import { PRE_TOKENIZERS, PreTokenizerRecipe } from './gguf-pretokenizers';
import { TOKEN_TYPE, spmModelParts } from './gguf-tokenizer-spm';
import { GgufError } from './gguf-types';

/*
 * Turn the tokenizer stored in GGUF metadata (tokenizer.ggml.*) into a
 * tokenizer.json-shaped object that @huggingface/tokenizers can run:
 * `gpt2` files as byte-level BPE behind the pre-tokenizer llama.cpp uses for
 * their `tokenizer.ggml.pre` (gguf-pretokenizers.ts), `llama` files as
 * SentencePiece BPE (gguf-tokenizer-spm.ts).
 */

interface TokenizerJsonAddedToken {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

const SUPPORTED_MODELS = 'gpt2, i.e. byte-level BPE; llama, i.e. SentencePiece';

/**
 * Build a tokenizer.json object from GGUF metadata. Control and unknown
 * tokens are marked special and user-defined tokens non-special: with
 * parse_special=false llama.cpp still splits user-defined tokens out of the
 * text first, but treats control tokens as ordinary text.
 */
export function tokenizerJsonFromGguf(file: GgufFile): Record<string, unknown> {
  const meta = file.meta;
  const source = file.path.split(/[\\/]/).pop() ?? file.path;
  const model = meta.string('tokenizer.ggml.model');
  if (model !== 'gpt2' && model !== 'llama') {
    throw new GgufError(
      `GGUF tokenizer model "${model}" is not supported yet (supported: ${SUPPORTED_MODELS}); ` +
        'use a Hugging Face directory with tokenizer.json instead',
      'GGUF_UNSUPPORTED',
    );
  }
  const tokens = meta.stringArray('tokenizer.ggml.tokens');
  const types = meta.numberArray('tokenizer.ggml.token_type', 'optional');
  if (types && types.length !== tokens.length) {
    throw new GgufError(
      `GGUF tokenizer.ggml.token_type has ${types.length} entries but tokenizer.ggml.tokens has ${tokens.length}`,
    );
  }
  const addedTokens: TokenizerJsonAddedToken[] = [];
  types?.forEach((type, id) => {
    const special = type === TOKEN_TYPE.CONTROL || type === TOKEN_TYPE.UNKNOWN;
    if (!special && type !== TOKEN_TYPE.USER_DEFINED) return;
    addedTokens.push({
      id,
      content: tokens[id],
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special,
    });
  });
  const common = { version: '1.0', truncation: null, padding: null, added_tokens: addedTokens, post_processor: null };

  if (model === 'llama') {
    const spm = spmModelParts(meta, tokens, types, source);
    return {
      ...common,
      normalizer: spm.normalizer,
      pre_tokenizer: spm.preTokenizer,
      decoder: spm.decoder,
      model: spm.model,
    };
  }

  const pre = meta.string('tokenizer.ggml.pre', 'optional') ?? 'default';
  const recipe: PreTokenizerRecipe | undefined = PRE_TOKENIZERS[pre];
  if (!recipe) {
    throw new GgufError(
      `GGUF tokenizer.ggml.pre "${pre}" is not supported yet (supported: ${Object.keys(PRE_TOKENIZERS).join(', ')})`,
      'GGUF_UNSUPPORTED',
    );
  }
  const merges = meta.stringArray('tokenizer.ggml.merges');
  // Later duplicates win, as in llama.cpp's token_to_id map.
  const vocab: Record<string, number> = Object.create(null) as Record<string, number>;
  tokens.forEach((t, id) => (vocab[t] = id));

  return {
    ...common,
    normalizer: recipe.normalizer ? { type: recipe.normalizer } : null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        ...recipe.splits.map((regex) => ({
          type: 'Split',
          pattern: { Regex: regex },
          behavior: 'Isolated',
          invert: false,
        })),
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
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
