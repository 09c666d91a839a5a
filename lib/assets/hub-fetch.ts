/**
 * A model by hub id, as a local path (docs/models.md, "Models by hub id"):
 * from the cache when every file it needs is there (no request), else asked
 * of the hub through @huggingface/hub's API calls (modelInfo for the commit,
 * listFiles for sizes and hashes, downloadFile for the bytes) and written into
 * huggingface_hub's cache layout by hub-cache.ts and hub-download.ts.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type * as HubClient from '@huggingface/hub';
import { FetchOptions, Log, defaultLog } from './cached-file';
import { cachedModelPath, linkSnapshotFile, repoFolder, writeRef } from './hub-cache';
import { BlobSource, ensureBlob } from './hub-download';
import { HubModelId, describeHubId } from './hub-id';
import { HubError, indexShards, selectModelFiles } from './hub-select';
import { isOffline } from './wheel-fetch';

export interface HubFetchOptions extends FetchOptions {
  /**
   * Ask the hub which commit the revision names even when a snapshot is
   * cached, and hash the cached blobs too (`pjrt-score fetch`).
   */
  readonly refresh?: boolean;
}

/** HF_HUB_OFFLINE (1/true/yes/on, as huggingface_hub reads it) or PJRT_SCORE_OFFLINE=1. */
export function isHubOffline(): boolean {
  return ['1', 'true', 'yes', 'on'].includes((process.env.HF_HUB_OFFLINE ?? '').toLowerCase()) || isOffline();
}

export function hubEndpoint(): string {
  return (process.env.HF_ENDPOINT || 'https://huggingface.co').replace(/\/+$/, '');
}

/** HF_TOKEN, else the token file huggingface_hub's login writes (HF_TOKEN_PATH, HF_HOME/token). */
function hubToken(): string | undefined {
  if (process.env.HF_TOKEN) return process.env.HF_TOKEN.trim();
  const home =
    process.env.HF_HOME || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'huggingface');
  const file = process.env.HF_TOKEN_PATH || path.join(home, 'token');
  try {
    return fs.readFileSync(file, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** fetch for @huggingface/hub: refusals that name the problem, and a Range that the server ignored caught. */
function hubFetch(id: HubModelId, token: string | undefined): typeof fetch {
  const name = describeHubId(id);
  return async (input, init) => {
    let response: Response;
    try {
      response = await fetch(input, init);
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
      throw new Error(
        `could not reach ${hubEndpoint()} (${cause}); HF_ENDPOINT names a mirror, HF_HUB_OFFLINE=1 uses the cache only`,
        { cause: err },
      );
    }
    const code = response.headers.get('x-error-code');
    if (
      code === 'GatedRepo' ||
      ((response.status === 401 || response.status === 403) && token === undefined && code !== 'RepoNotFound')
    ) {
      throw new HubError(
        token === undefined
          ? `${name}: ${id.repo} is gated: ` +
              `accept its terms on ${hubEndpoint()}/${id.repo} and set HF_TOKEN to a token of that account`
          : `${name}: ${id.repo} is gated and the token in HF_TOKEN has no access: ` +
              `accept its terms on ${hubEndpoint()}/${id.repo}`,
        'HUB_GATED',
      );
    }
    if (
      code === 'RepoNotFound' ||
      code === 'RevisionNotFound' ||
      (response.status === 404 && code !== 'EntryNotFound')
    ) {
      throw new HubError(
        `${name}: no such ${
          code === 'RevisionNotFound' ? `revision ${id.revision} in ${id.repo}` : `model repo ` + `${id.repo}`
        } on ${hubEndpoint()}${token === undefined ? ' (a private repo needs HF_TOKEN)' : ''}`,
        'HUB_NOT_FOUND',
      );
    }
    const range = new Headers(init?.headers).get('range');
    if (range !== null && !range.startsWith('bytes=0-') && response.status === 200) {
      await response.body?.cancel();
      throw new Error('the server ignored the Range request');
    }
    return response;
  };
}

/** Loaded on the first hub request, not with the package (it is ~40 ms of require). */
function hubClient(): typeof HubClient {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('@huggingface/hub') as typeof HubClient;
}

interface TreeFile {
  readonly path: string;
  readonly size: number;
  readonly oid: string;
  readonly lfs?: { readonly oid: string; readonly size: number };
}

/** Asks the hub: the commit, the files, and each needed file into the cache. */
async function download(id: HubModelId, log: Log, tty: boolean, verifyCached: boolean): Promise<string> {
  const { downloadFile, listFiles, modelInfo } = hubClient();
  const token = hubToken();
  const hub = { hubUrl: hubEndpoint(), accessToken: token, fetch: hubFetch(id, token) };
  const info = await modelInfo({ ...hub, name: id.repo, revision: id.revision, additionalFields: ['sha'] });
  const commit = (info as { sha?: unknown }).sha;
  if (typeof commit !== 'string' || !/^[0-9a-f]{40}$/.test(commit)) {
    throw new HubError(`${describeHubId(id)}: the hub did not say which commit ${id.revision} is`, 'HUB_DOWNLOAD');
  }
  const tree = new Map<string, TreeFile>();
  for await (const entry of listFiles({ ...hub, repo: id.repo, revision: commit, recursive: true })) {
    if (entry.type === 'file') tree.set(entry.path, entry as unknown as TreeFile);
  }
  const chosen = selectModelFiles(id, [...tree.keys()]);
  const folder = repoFolder(id.repo);
  const fetchOne = async (file: string): Promise<string> => {
    const entry = tree.get(file);
    if (!entry) throw new HubError(`${describeHubId(id)}: ${file} is named but not in the repo`, 'HUB_NO_WEIGHTS');
    const source: BlobSource = {
      label: `${id.repo}/${file}`,
      folder,
      blob: entry.lfs ? entry.lfs.oid : entry.oid,
      size: entry.lfs ? entry.lfs.size : entry.size,
      hash: entry.lfs ? 'sha256' : 'git-sha1',
      open: async (offset) => {
        const blob = await downloadFile({ ...hub, repo: id.repo, path: file, revision: commit, xet: false });
        if (!blob) throw new HubError(`${describeHubId(id)}: ${file} vanished from ${commit}`, 'HUB_NOT_FOUND');
        return (offset > 0 ? blob.slice(offset) : blob).stream();
      },
    };
    const blobPath = await ensureBlob(source, log, tty, verifyCached);
    linkSnapshotFile(folder, commit, file, source.blob);
    return blobPath;
  };
  for (const file of chosen.files) await fetchOne(file);
  if (chosen.index !== undefined) {
    const index = fs.readFileSync(path.join(folder, 'snapshots', commit, chosen.index), 'utf8');
    for (const shard of indexShards(index, `${id.repo}/${chosen.index}`)) await fetchOne(shard);
  }
  writeRef(folder, id.revision, commit);
  const snapshot = path.join(folder, 'snapshots', commit);
  return chosen.entry === undefined ? snapshot : path.join(snapshot, ...chosen.entry.split('/'));
}

/**
 * The local path of the model `id` names: the cached snapshot when complete
 * (no request; `refresh` asks the hub anyway), else downloaded now. With
 * HF_HUB_OFFLINE=1 only the cache is read.
 */
export async function fetchHubModel(id: HubModelId, options: HubFetchOptions = {}): Promise<string> {
  const log = options.log ?? defaultLog;
  const cached = cachedModelPath(id);
  if (cached !== undefined && (!options.refresh || isHubOffline())) return cached;
  if (isHubOffline()) {
    throw new HubError(
      `${describeHubId(id)} is not in the hub cache (${repoFolder(id.repo)}) ` +
        `and HF_HUB_OFFLINE=1 forbids downloading it: ` +
        `run \`pjrt-score fetch --model ${id.text}\` where the hub is reachable, or unset HF_HUB_OFFLINE`,
      'HUB_OFFLINE',
    );
  }
  const tty = options.log === undefined && process.stderr.isTTY === true;
  try {
    return await download(id, log, tty, options.refresh === true);
  } catch (err) {
    if (err instanceof HubError) throw err;
    throw new HubError(`${describeHubId(id)}: ${(err as Error).message}`, 'HUB_DOWNLOAD');
  }
}
