/**
 * The nesting limit of program text. The plugin's MLIR parser recurses once
 * per nesting level, so a deep enough program overflows the stack of the
 * thread that parses it and kills the process. compile() refuses text deeper
 * than MAX_PROGRAM_NESTING before it reaches the plugin; the addon checks the
 * same rule again (native/runtime/program_nesting.cc) and parses on a 64 MiB stack,
 * which holds well over ten times this depth.
 */
import { PjrtError } from './errors';

/** The deepest nesting of (, [, { and < that compile() accepts. Generated programs stay under 20. */
export const MAX_PROGRAM_NESTING = 1000;

/**
 * The greatest depth of (, [, { and < in `text`, outside "strings" and //
 * comments (the > of -> does not close). Stops counting once past `limit`.
 */
export function programNestingDepth(text: string, limit: number = MAX_PROGRAM_NESTING): number {
  let depth = 0;
  let deepest = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < n && text.charCodeAt(i) !== 0x22; i++) {
        if (text.charCodeAt(i) === 0x5c /* \ */) i++;
      }
    } else if (c === 0x2f /* / */ && text.charCodeAt(i + 1) === 0x2f) {
      while (i < n && text.charCodeAt(i) !== 0x0a) i++;
    } else if (c === 0x28 || c === 0x5b || c === 0x7b || c === 0x3c) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x29 || c === 0x5d || c === 0x7d || (c === 0x3e && text.charCodeAt(i - 1) !== 0x2d) /* - */) {
      if (depth > 0) depth--;
    }
  }
  return deepest;
}

/** Throws a PjrtError (INVALID_ARGUMENT) when `text` nests deeper than MAX_PROGRAM_NESTING. */
export function assertProgramNesting(text: string): void {
  if (programNestingDepth(text) > MAX_PROGRAM_NESTING) {
    throw new PjrtError(
      `compile: the program nests more than ${MAX_PROGRAM_NESTING} levels deep (counting (, [, { and <); ` +
        'deeper programs are refused before parsing, since the parser recurses once per level',
      'INVALID_ARGUMENT',
    );
  }
}
