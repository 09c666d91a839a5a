/**
 * The field readers of a score request (request.ts): each checks one field's
 * type and range and throws a ScoreInputError naming the field as the caller
 * spelled it (FieldNames). Text is checked for valid Unicode here; it is
 * tokenized in request.ts.
 */
import { ScoreInputError, describeValue } from './errors';

/** How one entry point spells each field, used in `.param` and messages. */
export interface FieldNames {
  readonly request: string;
  readonly query: string;
  readonly items: string;
  readonly labels: string;
  readonly applySoftmax: string;
  readonly itemFirst: string;
  /** The field a caller sets to have an item past the context cut, named in that 400. */
  readonly truncate: string;
}

/** A query or item after type checks: text still to tokenize, or validated token ids. */
export type Piece =
  { readonly kind: 'text'; readonly text: string } | { readonly kind: 'tokens'; readonly ids: number[] };

export function asRecord(value: unknown, names: FieldNames): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ScoreInputError(`the ${names.request} must be an object, got ${describeValue(value)}`, names.request);
  }
  return value as Record<string, unknown>;
}

export function readItemList(value: unknown, param: string): readonly unknown[] {
  if (typeof value === 'string') return [value]; // a bare string is one item
  if (Array.isArray(value)) return value;
  throw new ScoreInputError(
    `${param} must be a string, an array of strings or an array of token-id arrays, got ${describeValue(value)}`,
    param,
  );
}

export function readItems(
  list: readonly unknown[],
  queryKind: Piece['kind'],
  names: FieldNames,
  vocab: number,
): Piece[] {
  const pieces: Piece[] = [];
  for (let i = 0; i < list.length; i++) {
    const piece = readPiece(list[i], `${names.items}[${i}]`, names.items, vocab);
    if (piece.kind !== queryKind) {
      throw new ScoreInputError(
        `${names.items}[${i}] is ${kindWords(piece.kind)} but ${names.query} is ${kindWords(queryKind)}: ` +
          'text and token ids cannot be mixed in one request',
        names.items,
      );
    }
    pieces.push(piece);
  }
  return pieces;
}

function kindWords(kind: Piece['kind']): string {
  return kind === 'text' ? 'text' : 'token ids';
}

/** A query or one item: a string, or a token-id array checked against the vocabulary. */
export function readPiece(value: unknown, where: string, param: string, vocab: number): Piece {
  if (typeof value === 'string') {
    checkUnicode(value, where, param);
    return { kind: 'text', text: value };
  }
  const ids = readTokenIds(value, where, param, vocab);
  if (ids === null) {
    throw new ScoreInputError(`${where} must be a string or an array of token ids, got ${describeValue(value)}`, param);
  }
  return { kind: 'tokens', ids };
}

/** Copies and checks a token-id list; null when the value is not a list at all. */
function readTokenIds(value: unknown, where: string, param: string, vocab: number): number[] | null {
  let list: ArrayLike<unknown>;
  if (Array.isArray(value)) list = value;
  else if (value instanceof Int32Array || value instanceof Uint32Array || value instanceof Uint16Array) list = value;
  else return null;
  const ids = new Array<number>(list.length);
  for (let j = 0; j < list.length; j++) {
    const id = list[j];
    if (typeof id !== 'number') {
      throw new ScoreInputError(`${where}[${j}] must be a token id (an integer), got ${describeValue(id)}`, param);
    }
    if (!Number.isInteger(id)) {
      throw new ScoreInputError(`${where}[${j}] = ${id} is not an integer token id`, param);
    }
    if (id < 0 || id >= vocab) {
      throw new ScoreInputError(`${where}[${j}] = ${id} is out of the vocabulary [0, ${vocab})`, param);
    }
    ids[j] = id;
  }
  return ids;
}

export function readLabels(value: unknown, param: string, vocab: number): number[] {
  if (value === undefined) {
    throw new ScoreInputError(`${param} is required: a non-empty array of token ids`, param);
  }
  const ids = readTokenIds(value, param, param, vocab);
  if (ids === null) {
    throw new ScoreInputError(`${param} must be a non-empty array of token ids, got ${describeValue(value)}`, param);
  }
  if (ids.length === 0) throw new ScoreInputError(`${param} must not be empty`, param);
  return ids;
}

/** Optional boolean: absent means false; anything else than a boolean (null, 0, "true") is an error. */
export function readFlag(value: unknown, param: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new ScoreInputError(`${param} must be a boolean, got ${describeValue(value)}`, param);
  }
  return value;
}

// A lone surrogate cannot be encoded as UTF-8, so it is the JS-side form of "invalid UTF-8".
// With the u flag, a surrogate class matches only unpaired surrogates.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Throws ScoreInputError when `text` holds a lone UTF-16 surrogate (not valid Unicode). */
export function checkUnicode(text: string, where: string, param: string): void {
  const match = LONE_SURROGATE.exec(text);
  if (match) {
    throw new ScoreInputError(`${where} is not valid Unicode: lone UTF-16 surrogate at index ${match.index}`, param);
  }
}
