/**
 * One blob of the hub cache, downloaded once however many processes ask
 * (docs/models.md, "The hub cache"): a lock under <cache>/.locks, the bytes
 * appended to blobs/<name>.incomplete (huggingface_hub's name for the same
 * partial file), resumed with a Range request after a dropped connection or
 * an earlier interrupted run, verified against the hub's sha256 (LFS files)
 * or git blob sha1 (small files), then renamed into place.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Log } from './cached-file';
import { withFileLock } from './file-lock';
import { hubCacheDir } from './hub-cache';
import { HubError } from './hub-select';

export interface BlobSource {
  /** `org/repo/file` for messages. */
  readonly label: string;
  /** models--org--repo. */
  readonly folder: string;
  /** The name under blobs/: the LFS sha256, or the git blob sha1. */
  readonly blob: string;
  readonly size: number;
  /** Which hash `blob` is. */
  readonly hash: 'sha256' | 'git-sha1';
  /** The file's bytes from `offset` on (a Range request when offset > 0). */
  readonly open: (offset: number) => Promise<ReadableStream<Uint8Array>>;
}

const ATTEMPTS = 5;

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

async function hashOf(file: string, kind: BlobSource['hash'], size: number): Promise<string> {
  const hash = createHash(kind === 'sha256' ? 'sha256' : 'sha1');
  if (kind === 'git-sha1') hash.update(`blob ${size}\0`);
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const megabytes = (n: number): string => `${(n / 1e6).toFixed(1)} MB`;

/** Progress: a line redrawn in place on a terminal, else a line at the start and one at the end. */
function progress(source: BlobSource, tty: boolean): (done: number) => void {
  let last = 0;
  return (done: number): void => {
    if (!tty) return;
    const now = Date.now();
    if (now - last < 250 && done < source.size) return;
    last = now;
    const percent = source.size > 0 ? Math.floor((100 * done) / source.size) : 100;
    process.stderr.write(
      `\r[pjrt-score] ${source.label}: ${percent}% of ${megabytes(source.size)}${done >= source.size ? '\n' : ''}`,
    );
  };
}

async function appendFrom(
  source: BlobSource,
  incomplete: string,
  offset: number,
  onBytes: (done: number) => void,
): Promise<void> {
  const stream = await source.open(offset);
  const out = fs.openSync(incomplete, offset > 0 ? 'a' : 'w');
  let done = offset;
  try {
    const reader = stream.getReader();
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      fs.writeSync(out, value);
      done += value.byteLength;
      if (done > source.size)
        throw new HubError(
          `${source.label}: the hub sent more than the ${source.size} bytes it listed`,
          'HUB_DOWNLOAD',
        );
      onBytes(done);
    }
  } finally {
    fs.closeSync(out);
  }
  if (done < source.size) throw new Error(`the connection closed after ${done} of ${source.size} bytes`);
}

const permanent = (err: unknown): boolean => err instanceof HubError;

async function download(source: BlobSource, blobPath: string, log: Log, tty: boolean): Promise<void> {
  const incomplete = `${blobPath}.incomplete`;
  if (fileSize(incomplete) > source.size) fs.rmSync(incomplete, { force: true });
  const start = fileSize(incomplete);
  log(
    `[pjrt-score] ${source.label}: ` +
      `downloading ${megabytes(source.size)}${start > 0 ? `, resuming at ${megabytes(start)}` : ''}`,
  );
  const onBytes = progress(source, tty);
  for (let attempt = 1; ; attempt++) {
    const have = fileSize(incomplete);
    if (have >= source.size) break;
    try {
      await appendFrom(source, incomplete, have, onBytes);
      break;
    } catch (err) {
      if (permanent(err) || attempt === ATTEMPTS) {
        if (permanent(err)) throw err;
        throw new HubError(
          `${source.label}: download failed after ${ATTEMPTS} attempts (${(err as Error).message}); ` +
            `run again to resume`,
          'HUB_DOWNLOAD',
        );
      }
      if (tty) process.stderr.write('\n');
      log(
        `[pjrt-score] ${source.label}: ` +
          `interrupted at ${megabytes(fileSize(incomplete))} (${(err as Error).message}); resuming`,
      );
    }
  }
  const actual = await hashOf(incomplete, source.hash, source.size);
  if (actual !== source.blob) {
    fs.rmSync(incomplete, { force: true });
    throw new HubError(
      `${source.label}: ${source.hash} mismatch: the hub lists ${source.blob}, ` +
        `the download has ${actual}; nothing was cached`,
      'HUB_SHA256',
    );
  }
  fs.renameSync(incomplete, blobPath);
  log(`[pjrt-score] ${source.label}: ${source.hash} verified`);
}

/**
 * Puts blobs/<blob> in place unless it is there; safe when several processes
 * call it at once. With `verifyCached` a blob already there is hashed too, and
 * one that does not match (a corrupted cache) is downloaded again.
 */
export async function ensureBlob(source: BlobSource, log: Log, tty: boolean, verifyCached = false): Promise<string> {
  const blobPath = path.join(source.folder, 'blobs', source.blob);
  const good = async (): Promise<boolean> =>
    fs.existsSync(blobPath) && (!verifyCached || (await hashOf(blobPath, source.hash, source.size)) === source.blob);
  if (await good()) return blobPath;
  fs.mkdirSync(path.dirname(blobPath), { recursive: true });
  const locks = path.join(hubCacheDir(), '.locks', path.basename(source.folder));
  fs.mkdirSync(locks, { recursive: true });
  return withFileLock(
    path.join(locks, `${source.blob}.pjrt-score.lock`),
    async () => {
      if (await good()) return blobPath;
      if (fs.existsSync(blobPath)) {
        log(`[pjrt-score] ${source.label}: the cached blob does not match its ${source.hash}; downloading it again`);
        fs.rmSync(blobPath, { force: true });
      }
      await download(source, blobPath, log, tty);
      return blobPath;
    },
    () => log(`[pjrt-score] ${source.label}: another process is downloading it; waiting`),
  );
}
