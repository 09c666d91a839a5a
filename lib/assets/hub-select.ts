/**
 * Which of a repo's files a model needs (docs/models.md, "Models by hub id"):
 * a Transformers directory's config.json, tokenizer files and safetensors, or
 * one GGUF model (all shards of a split one). The same choice runs on the
 * hub's file list and on a cached snapshot's, so a cache hit needs no request.
 */
import { PjrtScoreError } from '../util/errors';
import { HubModelId, describeHubId } from './hub-id';

/** Why a model by hub id could not be had (docs/models.md). */
export type HubErrorCode =
  'HUB_NO_WEIGHTS' | 'HUB_GATED' | 'HUB_NOT_FOUND' | 'HUB_OFFLINE' | 'HUB_SHA256' | 'HUB_DOWNLOAD';

export class HubError extends PjrtScoreError {
  declare readonly code: HubErrorCode;
  constructor(message: string, code: HubErrorCode) {
    super(message, code);
    this.name = 'HubError';
  }
}

export interface ModelFiles {
  /** Paths in the repo to fetch (the shards of an index come later: `index`). */
  readonly files: readonly string[];
  /** The path to load inside the snapshot: a GGUF file, or undefined for the snapshot folder itself. */
  readonly entry?: string;
  /** model.safetensors.index.json, whose weight_map names the remaining shards. */
  readonly index?: string;
}

const SUPPORTED_FORMS =
  'a Transformers directory (config.json, tokenizer.json, *.safetensors at the top level) or a .gguf file ' +
  '(name it: org/repo/file.gguf, or hf:org/repo:QUANT)';

const SPLIT = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i;
const isGguf = (f: string): boolean => f.toLowerCase().endsWith('.gguf');
const topLevel = (f: string): boolean => !f.includes('/');

/** The GGUF models among `files`: one entry per file, a split set as its shards in order. */
function ggufModels(files: readonly string[]): string[][] {
  const sets = new Map<string, string[]>();
  for (const f of files.filter(isGguf).sort()) {
    const split = SPLIT.exec(f);
    const key = split ? `${split[1]}\u0000${split[3]}` : f;
    sets.set(key, [...(sets.get(key) ?? []), f]);
  }
  return [...sets.values()];
}

function listing(files: readonly string[]): string {
  const shown = files.slice(0, 40).join(', ');
  return files.length > 40 ? `${shown}, ... (${files.length} files)` : shown || '(no files)';
}

function pickGguf(id: HubModelId, files: readonly string[]): ModelFiles {
  const models = ggufModels(files);
  let chosen: string[] | undefined;
  if (id.file !== undefined) {
    chosen = models.find((m) => m.includes(id.file as string));
    if (!chosen) {
      throw new HubError(
        `${describeHubId(id)}: the repo has no file ${id.file}; its GGUF files: ${listing(files.filter(isGguf))}`,
        'HUB_NO_WEIGHTS',
      );
    }
    return { files: chosen, entry: id.file };
  }
  const want = id.quant?.toLowerCase();
  const candidates =
    want === undefined
      ? models
      : models.filter((m) =>
          m[0]
            .toLowerCase()
            .replace(/\.gguf$/, '')
            .split(/[-.]/)
            .includes(want),
        );
  if (candidates.length !== 1) {
    const why =
      candidates.length === 0 ? `no GGUF file with ${id.quant} in its name` : `${candidates.length} GGUF models`;
    throw new HubError(
      `${describeHubId(id)}: the repo has ${why}; ` +
        `name one (org/repo/file.gguf or hf:org/repo:QUANT). Its GGUF files: ${listing(files.filter(isGguf))}`,
      'HUB_NO_WEIGHTS',
    );
  }
  chosen = candidates[0];
  return { files: chosen, entry: chosen[0] };
}

/** The files `id` needs out of the repo's `files` (paths relative to the repo root); HubError when it has none. */
export function selectModelFiles(id: HubModelId, files: readonly string[]): ModelFiles {
  if (id.file !== undefined || id.quant !== undefined) return pickGguf(id, files);
  const has = new Set(files);
  const safetensors = files.filter((f) => topLevel(f) && f.endsWith('.safetensors'));
  if (has.has('config.json') && (safetensors.length > 0 || has.has('model.safetensors.index.json'))) {
    if (!has.has('tokenizer.json')) {
      throw new HubError(
        `${describeHubId(id)}: the repo has config.json and safetensors but no tokenizer.json, which pjrt-score needs`,
        'HUB_NO_WEIGHTS',
      );
    }
    const base = [
      'config.json',
      'tokenizer.json',
      ...(has.has('tokenizer_config.json') ? ['tokenizer_config.json'] : []),
    ];
    if (has.has('model.safetensors.index.json'))
      return { files: [...base, 'model.safetensors.index.json'], index: 'model.safetensors.index.json' };
    return { files: [...base, ...safetensors] };
  }
  if (ggufModels(files).length > 0) return pickGguf(id, files);
  throw new HubError(
    `${describeHubId(id)}: no weights pjrt-score reads. Supported: ` +
      `${SUPPORTED_FORMS}. The repo's files: ${listing(files)}`,
    'HUB_NO_WEIGHTS',
  );
}

/** The shard files an index's weight_map names, in order. */
export function indexShards(indexJson: string, source: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(indexJson);
  } catch (err) {
    throw new HubError(`${source}: not JSON (${(err as Error).message})`, 'HUB_NO_WEIGHTS');
  }
  const map = (parsed as { weight_map?: unknown }).weight_map;
  if (typeof map !== 'object' || map === null) throw new HubError(`${source}: no weight_map`, 'HUB_NO_WEIGHTS');
  const shards = [...new Set(Object.values(map as Record<string, unknown>).map(String))].sort();
  for (const s of shards) {
    if (!/^[A-Za-z0-9._-]+\.safetensors$/.test(s))
      throw new HubError(`${source}: unexpected shard name ${JSON.stringify(s)}`, 'HUB_NO_WEIGHTS');
  }
  return shards;
}
