/**
 * The on-disk half of the JIT cache: serialized executables, one file per
 * program, so a restart does not recompile (docs/design.md "Static shapes, buckets, the JIT cache").
 *
 * - Files live in <cacheDir>/executables/<namespace>/, the namespace naming
 *   the plugin (platform + version): another plugin never sees them.
 * - A file is named by sha256(namespace, program text), so a changed program
 *   is a different file and stale entries are simply never read.
 * - Writes are atomic (temporary file + rename): a crash mid-write leaves no
 *   half file under the real name.
 * - Each file carries a magic tag and the sha256 of its payload. Handing a
 *   truncated or corrupt blob to a PJRT plugin may abort the process, so a
 *   file that fails the check is removed with a warning and treated as a
 *   miss. No disk problem is ever fatal: the cache degrades to compiling.
 */
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { cacheDir } from '../../util/cache-dir';

const MAGIC = Buffer.from('PJSCEXE1', 'ascii');
const DIGEST_BYTES = 32;
const HEADER_BYTES = MAGIC.length + DIGEST_BYTES;

/** Where serialized executables of one plugin live by default. */
export function defaultExecutableDir(namespace: string): string {
  return path.join(cacheDir(), 'executables', namespaceDirName(namespace));
}

/** A namespace made safe as one directory name (the full namespace still goes into every file's hash). */
function namespaceDirName(namespace: string): string {
  const safe = namespace.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '_');
  return safe === '' ? 'default' : safe.slice(0, 100);
}

/** The file key of a program: hex sha256 over the namespace and the program text. */
export function executableKey(namespace: string, programText: string): string {
  // The NUL separator keeps ("ab", "c") and ("a", "bc") apart.
  return createHash('sha256').update(namespace).update('\0').update(programText).digest('hex');
}

export class ExecutableDiskCache {
  readonly directory: string;
  private readonly warn: (message: string) => void;

  constructor(directory: string, warn: (message: string) => void) {
    this.directory = directory;
    this.warn = warn;
  }

  pathFor(key: string): string {
    return path.join(this.directory, `${key}.exe`);
  }

  /** The stored bytes, or null when absent, unreadable or corrupt (the last two are removed with a warning). */
  async read(key: string): Promise<Uint8Array | null> {
    const file = this.pathFor(key);
    let data: Buffer;
    try {
      data = await fs.readFile(file);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return null;
      this.warn(`ignoring unreadable cached executable ${file}: ${errorMessage(error)}`);
      await this.remove(key);
      return null;
    }
    const payload = verified(data);
    if (payload === null) {
      this.warn(`removing corrupt cached executable ${file} (bad header or checksum)`);
      await this.remove(key);
      return null;
    }
    return payload;
  }

  /** Stores bytes atomically; true when written. Failures only warn. */
  async write(key: string, bytes: Uint8Array): Promise<boolean> {
    const file = this.pathFor(key);
    const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await fs.mkdir(this.directory, { recursive: true });
      const digest = createHash('sha256').update(bytes).digest();
      await fs.writeFile(temporary, Buffer.concat([MAGIC, digest, bytes]));
      await fs.rename(temporary, file);
      return true;
    } catch (error) {
      this.warn(`could not write cached executable ${file}: ${errorMessage(error)}`);
      await fs.rm(temporary, { force: true }).catch(() => undefined);
      return false;
    }
  }

  /** Removes one entry; a missing file or a failure to remove is not an error. */
  async remove(key: string): Promise<void> {
    await fs.rm(this.pathFor(key), { force: true }).catch((error: unknown) => {
      this.warn(`could not remove cached executable ${this.pathFor(key)}: ${errorMessage(error)}`);
    });
  }
}

function verified(data: Buffer): Uint8Array | null {
  if (data.length < HEADER_BYTES || !data.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const payload = data.subarray(HEADER_BYTES);
  const digest = createHash('sha256').update(payload).digest();
  if (!digest.equals(data.subarray(MAGIC.length, HEADER_BYTES))) return null;
  // A copy with its own ArrayBuffer: Buffers may share a pooled one, which a native deserializer must not see.
  return new Uint8Array(payload);
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error
    ? String((error as { code: unknown }).code)
    : undefined;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
