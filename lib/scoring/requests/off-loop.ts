/**
 * Normalizing a request with its long texts tokenized elsewhere (a worker
 * thread: lib/model/tokenizer-pool.ts), so the event loop never spends a
 * long stretch tokenizing (docs/design.md "The service"). The normalizer
 * stays one synchronous function: it runs with a tokenizer that answers
 * short texts at once and long ones from a memo; a pass that met a long
 * text not yet in the memo is discarded, the texts it met are tokenized
 * off the loop, and it runs again. The pass that meets none is the answer
 * (or the error), exactly what the synchronous normalizer gives. Each pass
 * adds at least one text to the memo, so the passes end.
 */

/** Texts of at most this many characters are tokenized in place: shorter than a message to the worker is worth. */
export const INLINE_TOKENIZE_CHARS = 4096;

/** Text -> token ids, in place. */
export type Encode = (text: string) => number[];

export async function normalizeOffLoop<T>(
  normalize: (encode: Encode) => T,
  encode: Encode,
  encodeMany: (texts: readonly string[]) => Promise<number[][]>,
): Promise<T> {
  const memo = new Map<string, number[]>();
  for (;;) {
    const missing = new Set<string>();
    const lookup: Encode = (text) => {
      const known = memo.get(text);
      if (known !== undefined) return known.slice();
      if (text.length <= INLINE_TOKENIZE_CHARS) return encode(text);
      missing.add(text);
      return [];
    };
    let result: T | undefined;
    let failure: { readonly error: unknown } | null = null;
    try {
      result = normalize(lookup);
    } catch (error) {
      failure = { error };
    }
    if (missing.size === 0) {
      if (failure) throw failure.error;
      return result as T;
    }
    const texts = [...missing];
    const ids = await encodeMany(texts);
    texts.forEach((text, i) => memo.set(text, ids[i]));
  }
}
