/*
 * The byte-level BPE pre-tokenizers named by `tokenizer.ggml.pre`, as
 * llama.cpp defines them (llama-vocab.cpp: the name -> pre-type mapping in
 * llama_vocab::impl::load and the regexes of llm_tokenizer_bpe): a sequence
 * of regex splits whose matches and gaps both become pieces, then GPT-2
 * byte-level BPE. Only the families this project runs are listed; any other
 * name is refused by the caller with the list below.
 */

/** What a `tokenizer.ggml.pre` name means for tokenization. */
export interface PreTokenizerRecipe {
  /** Regexes applied in order, each splitting the pieces left by the previous one. */
  readonly splits: readonly string[];
  /** A piece found whole in the vocabulary skips the merges (llama.cpp's ignore_merges). */
  readonly ignoreMerges: boolean;
  /**
   * Unicode normalization of the family's tokenizer.json. llama.cpp does not
   * apply it, but the model was trained on normalized text, so we do: for
   * Qwen, decomposed accents then tokenize as Qwen's own tokenizer does.
   */
  readonly normalizer?: 'NFC';
}

/**
 * GPT-2's split. llama.cpp lists it without the final `|\s+`, but its hand-written matcher behaves as if it were there.
 */
const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
/** English contractions, case-insensitive: tokenizer.json's (?i:...) spelled out as llama.cpp does. */
const CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const QWEN2 =
  `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ` +
  `?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
/** Qwen 3.5: marks (\p{M}) stay with their letters. */
const QWEN35 =
  `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ` +
  `?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const LLAMA3 =
  `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ` +
  `?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
/**
 * Mistral's tekken (Nemo, Pixtral-era models), as written in its
 * tokenizer.json. llama.cpp approximates the letter classes with lookaheads
 * because its regex engine lacks \p{Lu} and friends; the JS engine has them,
 * so the original is used. Not verified against a real tekken vocabulary.
 */
const TEKKEN =
  '[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|' +
  '[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|' +
  '\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';

const DIGITS_THEN_GPT2: PreTokenizerRecipe = { splits: ['\\p{N}', GPT2], ignoreMerges: false };
const GPT2_ONLY: PreTokenizerRecipe = { splits: [GPT2], ignoreMerges: false };
const QWEN2_RECIPE: PreTokenizerRecipe = { splits: [QWEN2], ignoreMerges: false, normalizer: 'NFC' };
const QWEN35_RECIPE: PreTokenizerRecipe = { splits: [QWEN35], ignoreMerges: false };
const LLAMA3_RECIPE: PreTokenizerRecipe = { splits: [LLAMA3], ignoreMerges: true };
const TEKKEN_RECIPE: PreTokenizerRecipe = { splits: [TEKKEN], ignoreMerges: true };

/**
 * tokenizer.ggml.pre -> recipe, grouped as llama.cpp groups the names.
 * Verified against an independent tokenizer: smollm (llama.cpp goldens),
 * deepseek-r1-qwen and qwen2 (Qwen3's tokenizer.json), llama-bpe (Hugging
 * Face's output in llama.cpp's vocabulary tests); see docs/models.md.
 */
export const PRE_TOKENIZERS: Readonly<Record<string, PreTokenizerRecipe>> = {
  // SmolLM, StarCoder and relatives: every digit alone, then GPT-2.
  smollm: DIGITS_THEN_GPT2,
  starcoder: DIGITS_THEN_GPT2,
  refact: DIGITS_THEN_GPT2,
  'command-r': DIGITS_THEN_GPT2,
  codeshell: DIGITS_THEN_GPT2,
  exaone: DIGITS_THEN_GPT2,
  'minerva-7b': DIGITS_THEN_GPT2,
  // GPT-2 and the files converted with its split.
  'gpt-2': GPT2_ONLY,
  'phi-2': GPT2_ONLY,
  mpt: GPT2_ONLY,
  olmo: GPT2_ONLY,
  // Qwen2, Qwen2.5, Qwen3 and their distillations.
  qwen2: QWEN2_RECIPE,
  'deepseek-r1-qwen': QWEN2_RECIPE,
  megrez: QWEN2_RECIPE,
  stablelm2: QWEN2_RECIPE,
  qwen35: QWEN35_RECIPE,
  // Llama 3 and the models that reuse its tokenizer.
  'llama-bpe': LLAMA3_RECIPE,
  'llama-v3': LLAMA3_RECIPE,
  llama3: LLAMA3_RECIPE,
  falcon3: LLAMA3_RECIPE,
  pixtral: LLAMA3_RECIPE,
  // Mistral Nemo-style tekken.
  tekken: TEKKEN_RECIPE,
};
