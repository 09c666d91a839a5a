import * as path from 'node:path';
import { GgufError, GgufValue } from './gguf-types';

/*
 * Split GGUF files, as llama.cpp's gguf-split writes them: shards named
 * `<prefix>-00001-of-00003.gguf` ..., each a complete GGUF file holding some
 * of the tensors, with `split.no` (0-based), `split.count` and, in the
 * first shard, `split.tensors.count` (all shards together) and the model's
 * metadata. Here: reading those keys and naming the shards.
 */

interface SplitInfo {
  /** 0-based index of this shard. */
  readonly no: number;
  readonly count: number;
  /** Tensors in all shards together (llama.cpp writes it in every shard; required in the first). */
  readonly tensorsCount: number | undefined;
}

const SHARD_NAME = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i;

function integerKey(metadata: ReadonlyMap<string, GgufValue>, key: string, name: string): number | undefined {
  const v = metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw new GgufError(
      `${name}: metadata ${key} should be a non-negative integer, ` +
        `got ${typeof v === 'object' ? 'an array' : String(v)}`,
    );
  }
  return v;
}

/** The split.* keys of a file, or undefined when it is not part of a split model. */
export function splitInfo(metadata: ReadonlyMap<string, GgufValue>, name: string): SplitInfo | undefined {
  const count = integerKey(metadata, 'split.count', name);
  const no = integerKey(metadata, 'split.no', name);
  const tensorsCount = integerKey(metadata, 'split.tensors.count', name);
  if (count === undefined && no === undefined) return undefined;
  if (count === undefined || no === undefined) {
    throw new GgufError(
      `${name}: a split GGUF needs both split.no and split.count, ` +
        `but only ${count === undefined ? 'split.no' : 'split.count'} is set`,
    );
  }
  if (count < 1 || no >= count) throw new GgufError(`${name}: split.no ${no} is not within split.count ${count}`);
  return { no, count, tensorsCount };
}

/**
 * The paths of all shards, from the first shard's path. The name must follow
 * llama.cpp's pattern, since that is the only way to find the other shards.
 */
export function shardPaths(firstShard: string, info: SplitInfo): string[] {
  const name = path.basename(firstShard);
  const match = SHARD_NAME.exec(name);
  const expected = (prefix: string, i: number): string =>
    `${prefix}-${String(i + 1).padStart(5, '0')}-of-${String(info.count).padStart(5, '0')}.gguf`;
  if (info.no !== 0) {
    const hint = match ? `; open ${expected(match[1], 0)} instead` : '';
    throw new GgufError(
      `${name} is shard ${info.no + 1} of ${info.count} of a split GGUF: load the first shard${hint}`,
    );
  }
  if (!match) {
    throw new GgufError(
      `${name} is the first of ${info.count} shards of a split GGUF, but its name does not end in ` +
        `-00001-of-${String(info.count).padStart(5, '0')}.gguf, so the other shards cannot be found`,
    );
  }
  if (Number(match[2]) !== 1 || Number(match[3]) !== info.count) {
    throw new GgufError(
      `${name}: its name says shard ${Number(match[2])} of ${Number(match[3])}, ` +
        `but its metadata says shard 1 of ${info.count}`,
    );
  }
  const dir = path.dirname(firstShard);
  return Array.from({ length: info.count }, (_, i) => path.join(dir, expected(match[1], i)));
}
