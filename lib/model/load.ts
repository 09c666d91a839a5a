import * as fs from 'node:fs';
import * as path from 'node:path';
import { ModelConfig, ModelConfigError, configFromGguf, configFromHf } from './config';
import { DEFAULT_MODEL, DEFAULT_MODEL_NAME, resolveModelPath } from './default-model';
import { GgufFile } from './gguf';
import { ggmlTypeName } from './gguf-types';
import { SafetensorsShards } from './safetensors';
import { Tokenizer } from './tokenizer';
import { HostWeights } from './weights';
import { loadGgufWeights, loadHfWeights } from './weights-load';
import { WeightReader, ggufWeightReader, hfWeightReader } from './weights-reader';

/** A model ready to upload: config, f32 host weights, tokenizer and the name reported to clients. */
export interface LoadedModel {
  readonly config: ModelConfig;
  readonly weights: HostWeights;
  readonly tokenizer: Tokenizer;
  /**
   * "SmolLM2-135M-Instruct" for the default model, else the file name without .gguf (and shard suffix) or the directory
   * name.
   */
  readonly name: string;
  /** Absolute path of the GGUF file or Hugging Face directory. */
  readonly path: string;
  /** The stored tensor types and how many tensors have each, most first: "Q4_K (27), F32 (109)". */
  readonly quantization: string;
  /** How the checkpoint stores its matrices (storedMatrixType): what precision 'auto' and weights 'auto' follow. */
  readonly matrixType: StoredMatrixType;
}

/**
 * How a checkpoint stores its matrices: the type that holds most of its 2-D tensors' elements,
 * 'quantized' for any block type (GGUF's Q*, IQ*). A bf16 checkpoint was published to run in bf16.
 */
export type StoredMatrixType = 'f32' | 'f16' | 'bf16' | 'quantized';

/**
 * The stored type of most matrix elements (ties: the first seen); tensors' type names as GGUF or safetensors spell
 * them.
 */
function storedMatrixType(
  tensors: Iterable<{ readonly type: string; readonly dims: readonly number[] }>,
): StoredMatrixType {
  const elements = new Map<StoredMatrixType, number>();
  for (const t of tensors) {
    if (t.dims.length < 2) continue;
    const type: StoredMatrixType =
      t.type === 'F32' ? 'f32' : t.type === 'F16' ? 'f16' : t.type === 'BF16' ? 'bf16' : 'quantized';
    elements.set(type, (elements.get(type) ?? 0) + t.dims.reduce((a, b) => a * b, 1));
  }
  let best: StoredMatrixType = 'f32';
  let most = -1;
  for (const [type, n] of elements) if (n > most) [best, most] = [type, n];
  return best;
}

/** A directory's name; for a hub cache snapshot (models--org--repo/snapshots/<commit>), the repo's. */
function hfDirName(dir: string): string {
  const snapshot = /(?:^|[\\/])models--[^\\/]+?--([^\\/]+)[\\/]snapshots[\\/][^\\/]+$/.exec(dir);
  return snapshot ? snapshot[1] : path.basename(dir);
}

/** "Q5_0 (81), F32 (...)": tensor types by count, most first (ties by name). */
function tensorTypeSummary(types: Iterable<string>): string {
  const counts = new Map<string, number>();
  for (const t of types) counts.set(t, (counts.get(t) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([t, n]) => `${t} (${n})`)
    .join(', ');
}

/** What a file says of its storage: the type summary and the matrices' type. */
type Storage = Pick<LoadedModel, 'quantization' | 'matrixType'>;

function storage(tensors: readonly { readonly type: string; readonly dims: readonly number[] }[]): Storage {
  return { quantization: tensorTypeSummary(tensors.map((t) => t.type)), matrixType: storedMatrixType(tensors) };
}

function ggufStorage(gguf: GgufFile): Storage {
  return storage([...gguf.tensors.values()].map((t) => ({ type: ggmlTypeName(t.type), dims: t.dims })));
}

function hfStorage(dir: string): Storage {
  const shards = SafetensorsShards.open(dir);
  try {
    return storage(shards.tensorNames.map((n) => ({ type: shards.tensor(n).dtype, dims: shards.tensor(n).shape })));
  } finally {
    shards.close();
  }
}

/**
 * Load a model from a .gguf file or a Hugging Face directory (config.json,
 * tokenizer.json, *.safetensors). Without an argument: `PJRT_SCORE_MODEL`,
 * else the cached default model. Synchronous and CPU-bound (about a second
 * for the default model): call it at startup, not per request.
 */
export function loadModel(pathOrDir?: string): LoadedModel {
  const resolved = resolveModelPath(pathOrDir);
  if (fs.statSync(resolved).isDirectory()) return loadHfModel(resolved);
  return loadGgufModel(resolved);
}

/**
 * A model opened for a streaming upload: its weights are read one tensor at
 * a time. From a GGUF file the tokenizer is built on first access (a 49k
 * vocabulary takes a few hundred ms), so a load can build it while the
 * device decodes the weights; a bad tokenizer throws there.
 */
export interface OpenedModel extends Omit<LoadedModel, 'weights'> {
  /** Reads the weights from the file; close it when the upload is done. */
  readonly weights: WeightReader;
}

/**
 * Config, tokenizer and a weight reader over the open file: nothing of the
 * weights is read yet, so an upload can convert and drop one tensor at a
 * time (peak host memory about one tensor plus the device arrays).
 */
export function openModel(pathOrDir?: string): OpenedModel {
  const resolved = resolveModelPath(pathOrDir);
  if (fs.statSync(resolved).isDirectory()) {
    const { config, tokenizer } = readHfConfigAndTokenizer(resolved);
    return {
      config,
      tokenizer,
      name: hfDirName(resolved),
      path: resolved,
      ...hfStorage(resolved),
      weights: hfWeightReader(resolved, config),
    };
  }
  const gguf = GgufFile.open(resolved);
  try {
    const config = configFromGguf(gguf);
    let tokenizer: Tokenizer | undefined;
    return {
      config,
      // From the metadata parsed at open: closing the file (the weight reader) does not affect it.
      get tokenizer(): Tokenizer {
        return (tokenizer ??= ggufTokenizer(gguf, config));
      },
      name: ggufName(resolved),
      path: resolved,
      ...ggufStorage(gguf),
      weights: ggufWeightReader(gguf, config, true),
    };
  } catch (err) {
    gguf.close();
    throw err;
  }
}

/** Config and tokenizer only (no weights): what the request side needs, in ~0.2 s. */
export function loadModelInfo(pathOrDir?: string): Omit<LoadedModel, 'weights'> {
  const resolved = resolveModelPath(pathOrDir);
  if (fs.statSync(resolved).isDirectory()) {
    const { config, tokenizer } = readHfConfigAndTokenizer(resolved);
    return { config, tokenizer, name: hfDirName(resolved), path: resolved, ...hfStorage(resolved) };
  }
  const gguf = GgufFile.open(resolved);
  try {
    const config = configFromGguf(gguf);
    return {
      config,
      tokenizer: ggufTokenizer(gguf, config),
      name: ggufName(resolved),
      path: resolved,
      ...ggufStorage(gguf),
    };
  } finally {
    gguf.close();
  }
}

function loadGgufModel(file: string): LoadedModel {
  const gguf = GgufFile.open(file);
  try {
    const config = configFromGguf(gguf);
    const tokenizer = ggufTokenizer(gguf, config);
    const weights = loadGgufWeights(gguf, config);
    return { config, weights, tokenizer, name: ggufName(file), path: file, ...ggufStorage(gguf) };
  } finally {
    gguf.close();
  }
}

function loadHfModel(dir: string): LoadedModel {
  const { config, tokenizer } = readHfConfigAndTokenizer(dir);
  const weights = loadHfWeights(dir, config);
  return { config, weights, tokenizer, name: path.basename(dir), path: dir, ...hfStorage(dir) };
}

function ggufTokenizer(gguf: GgufFile, config: ModelConfig): Tokenizer {
  return Tokenizer.fromGguf(gguf, {
    bosTokenId: config.bosTokenId,
    eosTokenId: config.eosTokenId,
    addBos: config.addBos,
  });
}

function ggufName(file: string): string {
  if (path.resolve(file) === path.resolve(DEFAULT_MODEL.destination)) return DEFAULT_MODEL_NAME;
  // A split model is named after its prefix: model-00001-of-00003.gguf -> model.
  return path.basename(file).replace(/(-\d{5}-of-\d{5})?\.gguf$/i, '');
}

/**
 * The stored dtype of a Gemma directory's embedding (its sqrt(hidden) factor is rounded to it); undefined for other
 * families.
 */
function hfEmbeddingDtype(dir: string, config: Record<string, unknown>): string | undefined {
  if (typeof config.model_type !== 'string' || !config.model_type.startsWith('gemma')) return undefined;
  const shards = SafetensorsShards.open(dir);
  try {
    const name = 'model.embed_tokens.weight';
    return shards.has(name) ? shards.tensor(name).dtype : undefined;
  } finally {
    shards.close();
  }
}

function readHfConfigAndTokenizer(dir: string): { config: ModelConfig; tokenizer: Tokenizer } {
  const configFile = path.join(dir, 'config.json');
  if (!fs.existsSync(configFile)) {
    throw new ModelConfigError(`${dir} is not a Hugging Face model directory: it has no config.json`);
  }
  const readJson = (file: string): Record<string, unknown> | undefined => {
    if (!fs.existsSync(file)) return undefined;
    try {
      return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new ModelConfigError(`cannot parse ${file}: ${(err as Error).message}`);
    }
  };
  const tokenizerFile = path.join(dir, 'tokenizer.json');
  const tokenizerJson = readJson(tokenizerFile);
  if (!tokenizerJson) throw new ModelConfigError(`${dir} has no tokenizer.json`);
  const tokenizerConfig = readJson(path.join(dir, 'tokenizer_config.json'));
  const configJson = readJson(configFile)!;
  const config = configFromHf(configJson, tokenizerConfig, tokenizerJson, configFile, {
    embeddingDtype: hfEmbeddingDtype(dir, configJson),
  });
  const tokenizer = new Tokenizer(tokenizerJson, {
    tokenizerConfig,
    bosTokenId: config.bosTokenId,
    eosTokenId: config.eosTokenId,
    addBos: config.addBos,
  });
  return { config, tokenizer };
}
