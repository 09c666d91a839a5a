/**
 * The cache layout Python's huggingface_hub writes, read and written here so
 * that a model downloaded by either is found by both (docs/models.md, "The
 * hub cache"): <HF_HUB_CACHE>/models--org--repo/{blobs/<sha256 or git
 * sha1>, snapshots/<commit>/<file> (relative symlinks to the blobs),
 * refs/<revision> (the commit)}.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HubModelId } from './hub-id';
import { ModelFiles, indexShards, selectModelFiles } from './hub-select';

/** HF_HUB_CACHE, else HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub. */
export function hubCacheDir(): string {
  if (process.env.HF_HUB_CACHE) return path.resolve(process.env.HF_HUB_CACHE);
  if (process.env.HF_HOME) return path.resolve(process.env.HF_HOME, 'hub');
  const xdg = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(xdg, 'huggingface', 'hub');
}

/** models--org--repo under the cache. */
export function repoFolder(repo: string): string {
  return path.join(hubCacheDir(), `models--${repo.split('/').join('--')}`);
}

const isCommit = (revision: string): boolean => /^[0-9a-f]{40}$/.test(revision);

/** The commit `revision` names in the cache (refs/<revision>), or the revision itself when it is a commit. */
function cachedCommit(folder: string, revision: string): string | undefined {
  if (isCommit(revision)) return revision;
  try {
    const commit = fs.readFileSync(path.join(folder, 'refs', revision), 'utf8').trim();
    return isCommit(commit) ? commit : undefined;
  } catch {
    return undefined;
  }
}

/** The files of a snapshot whose link resolves to a blob, relative, with `/`. */
function snapshotFiles(dir: string, prefix = ''): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.join(dir, prefix), { withFileTypes: true });
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const e of entries) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    let stat: fs.Stats;
    try {
      stat = fs.statSync(path.join(dir, rel));
    } catch {
      continue; // a dangling link: its blob is gone
    }
    if (stat.isDirectory()) out.push(...snapshotFiles(dir, rel));
    else if (stat.isFile()) out.push(rel);
  }
  return out;
}

/** The local path to load, when every file the model needs is in the cached snapshot. */
export function cachedModelPath(id: HubModelId): string | undefined {
  const folder = repoFolder(id.repo);
  const commit = cachedCommit(folder, id.revision);
  if (commit === undefined) return undefined;
  const snapshot = path.join(folder, 'snapshots', commit);
  const present = snapshotFiles(snapshot);
  if (present.length === 0) return undefined;
  let chosen: ModelFiles;
  try {
    chosen = selectModelFiles(id, present);
  } catch {
    return undefined; // what is cached is not this model (yet)
  }
  const have = new Set(present);
  let needed = [...chosen.files];
  if (chosen.index !== undefined) {
    try {
      needed = needed.concat(indexShards(fs.readFileSync(path.join(snapshot, chosen.index), 'utf8'), chosen.index));
    } catch {
      return undefined;
    }
  }
  if (!needed.every((f) => have.has(f))) return undefined;
  return chosen.entry === undefined ? snapshot : path.join(snapshot, ...chosen.entry.split('/'));
}

/** snapshots/<commit>/<file> -> ../../blobs/<blob> (relative, as huggingface_hub links them). */
export function linkSnapshotFile(folder: string, commit: string, file: string, blob: string): void {
  const link = path.join(folder, 'snapshots', commit, ...file.split('/'));
  fs.mkdirSync(path.dirname(link), { recursive: true });
  const target = path.relative(path.dirname(link), path.join(folder, 'blobs', blob));
  const temp = `${link}.link-${process.pid}-${Date.now()}`;
  fs.symlinkSync(target, temp);
  fs.renameSync(temp, link); // atomic: a reader sees the old link or the new one
}

/** refs/<revision> names `commit` (skipped when the revision is the commit itself). */
export function writeRef(folder: string, revision: string, commit: string): void {
  if (revision === commit) return;
  const ref = path.join(folder, 'refs', ...revision.split('/'));
  fs.mkdirSync(path.dirname(ref), { recursive: true });
  const temp = `${ref}.partial-${process.pid}`;
  fs.writeFileSync(temp, commit);
  fs.renameSync(temp, ref);
}
