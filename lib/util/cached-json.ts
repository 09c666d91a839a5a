import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * A versioned JSON record kept in the cache directory (the kernel probe's
 * verdict, what 'auto' measured): read back only at its own version, written
 * whole or not at all (a rename), so a reader in another process never sees
 * half a file. Neither throws: a record that cannot be read is absent, one
 * that cannot be written is simply not kept (it is made again next time).
 */
export function readCachedJson<T>(file: string, version: number): T | null {
  try {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: number; value?: T };
    return saved.version === version && saved.value !== undefined ? saved.value : null;
  } catch {
    return null;
  }
}

export function writeCachedJson<T>(file: string, version: number, value: T): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ version, value }, null, 2));
    fs.renameSync(tmp, file);
  } catch {
    // not kept
  }
}
