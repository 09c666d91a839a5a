/**
 * Debug dump: with env PJRT_SCORE_DUMP_HLO=dir, every program built is written
 * to dir/<name>-<hash>.mlir (the hash keeps variants apart and repeats cheap).
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

export const DUMP_ENV = 'PJRT_SCORE_DUMP_HLO';

/** Writes the program if dumping is on; returns the file written, if any. Never throws. */
export function maybeDumpProgram(name: string, hash: string, text: string): string | undefined {
  const dir = process.env[DUMP_ENV];
  if (!dir) return undefined;
  const file = path.join(dir, `${name}-${hash.slice(0, 16)}.mlir`);
  try {
    fs.mkdirSync(dir, { recursive: true });
    if (!fs.existsSync(file)) fs.writeFileSync(file, text);
    return file;
  } catch (err) {
    process.emitWarning(`${DUMP_ENV}: could not write ${file}: ${(err as Error).message}`);
    return undefined;
  }
}
