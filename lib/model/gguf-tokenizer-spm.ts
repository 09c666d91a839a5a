import type { GgufMetadata } from './gguf-metadata';
import { GgufError } from './gguf-types';

/*
 * SentencePiece GGUF vocabularies (`tokenizer.ggml.model = "llama"`: Llama 2,
 * Mistral 7B, TinyLlama, Gemma) as the tokenizer.json Hugging Face writes
 * for them: spaces become U+2581 "▁" (with one prepended when
 * add_space_prefix), then BPE over characters where the merge whose result
 * has the highest score wins, and characters outside the vocabulary fall
 * back to <0xNN> byte tokens. This is llama.cpp's llm_tokenizer_spm; the
 * score order is expressed as a ranked merge list, as HF's converter does.
 */

/** llama_token_type values stored in tokenizer.ggml.token_type. */
export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

interface SpmModelParts {
  readonly normalizer: Record<string, unknown>;
  readonly preTokenizer: Record<string, unknown> | null;
  readonly decoder: Record<string, unknown>;
  readonly model: Record<string, unknown>;
}

/**
 * The normalizer, decoder and BPE model of a SentencePiece vocabulary.
 * `types` may be undefined (every token normal), as llama.cpp allows.
 */
export function spmModelParts(
  meta: GgufMetadata,
  tokens: readonly string[],
  types: readonly number[] | undefined,
  source: string,
): SpmModelParts {
  const scores = meta.numberArray('tokenizer.ggml.scores', 'optional');
  if (!scores) {
    throw new GgufError(
      `GGUF file ${source}: a SentencePiece vocabulary needs tokenizer.ggml.scores (the merge order), which is missing`,
    );
  }
  if (scores.length !== tokens.length) {
    throw new GgufError(
      `GGUF file ${source}: ` +
        `tokenizer.ggml.scores has ${scores.length} entries but tokenizer.ggml.tokens has ${tokens.length}`,
    );
  }
  const addSpacePrefix = meta.boolean('tokenizer.ggml.add_space_prefix', 'optional') ?? true;

  const vocab: Record<string, number> = Object.create(null) as Record<string, number>;
  tokens.forEach((t, id) => (vocab[t] = id));
  const unkId = types?.indexOf(TOKEN_TYPE.UNKNOWN) ?? -1;
  const hasByteTokens = types ? types.includes(TOKEN_TYPE.BYTE) : tokens.includes('<0x00>');

  const normalizers: Array<Record<string, unknown>> = [];
  if (addSpacePrefix) normalizers.push({ type: 'Prepend', prepend: '\u2581' });
  normalizers.push({ type: 'Replace', pattern: { String: ' ' }, content: '\u2581' });
  const decoders: Array<Record<string, unknown>> = [
    { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
    { type: 'ByteFallback' },
    { type: 'Fuse' },
  ];
  // Undo the prepended space, so decode(encode(text)) is text.
  if (addSpacePrefix) decoders.push({ type: 'Strip', content: ' ', start: 1, stop: 0 });

  return {
    normalizer: { type: 'Sequence', normalizers },
    preTokenizer: wordsNeverSpanSpaces(tokens, types) ? SPLIT_BEFORE_SPACE : null,
    decoder: { type: 'Sequence', decoders },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: unkId >= 0 ? tokens[unkId] : null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: hasByteTokens,
      ignore_merges: false,
      vocab,
      merges: mergesByScore(tokens, types, scores, vocab),
    },
  };
}

/**
 * Text cut before each "▁" that follows another character: "▁▁ab▁c" ->
 * "▁▁ab", "▁c". Only an optimization: BPE then runs word by word (and caches
 * words) instead of over the whole text, which costs ~25 us per character.
 */
const SPLIT_BEFORE_SPACE = {
  type: 'Split',
  pattern: { Regex: '\u2581*[^\u2581]+|\u2581+' },
  behavior: 'Isolated',
  invert: false,
};

/**
 * Whether no piece text can form contains "▁" after another character. Then
 * no symbol ever spans such a place, merges on either side are independent,
 * and cutting the text there gives llama.cpp's result exactly. SentencePiece
 * trained with split_by_whitespace (the default) has this property.
 */
function wordsNeverSpanSpaces(tokens: readonly string[], types: readonly number[] | undefined): boolean {
  return tokens.every((piece, id) => {
    const type = types?.[id] ?? TOKEN_TYPE.NORMAL;
    return (type !== TOKEN_TYPE.NORMAL && type !== TOKEN_TYPE.USER_DEFINED) || !/[^\u2581]\u2581/u.test(piece);
  });
}

/**
 * Every split of a vocabulary piece into two parts that can meet as symbols
 * (each a single character or a vocabulary piece), ranked by the
 * score of the piece they form (highest first). llama.cpp merges the adjacent
 * pair whose concatenation scores highest; a BPE merge list in this order
 * does the same. Control, unknown, byte and unused entries are never formed
 * from text (SentencePiece never produces them), so they are not targets.
 */
function mergesByScore(
  tokens: readonly string[],
  types: readonly number[] | undefined,
  scores: readonly number[],
  vocab: Readonly<Record<string, number>>,
): Array<[string, string]> {
  interface Candidate {
    readonly left: string;
    readonly right: string;
    readonly score: number;
    readonly id: number;
    readonly leftId: number;
  }
  const candidates: Candidate[] = [];
  tokens.forEach((piece, id) => {
    const type = types?.[id] ?? TOKEN_TYPE.NORMAL;
    if (type !== TOKEN_TYPE.NORMAL && type !== TOKEN_TYPE.USER_DEFINED) return;
    if (vocab[piece] !== id) return; // a duplicate: the later entry owns the text
    const chars = Array.from(piece);
    for (let i = 1; i < chars.length; i++) {
      const left = chars.slice(0, i).join('');
      const right = chars.slice(i).join('');
      // llama.cpp's symbols are single characters or pieces already formed, so only those pairs can meet.
      if (!(i === 1 || left in vocab) || !(i === chars.length - 1 || right in vocab)) continue;
      candidates.push({ left, right, score: scores[id], id, leftId: vocab[left] ?? -1 });
    }
  });
  // Ties (rare: two splits of one piece) go to the lower id, as in HF's converter.
  candidates.sort((a, b) => b.score - a.score || a.id - b.id || a.leftId - b.leftId);
  return candidates.map((c) => [c.left, c.right]);
}
