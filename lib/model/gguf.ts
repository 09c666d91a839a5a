import * as fs from 'node:fs';
import * as path from 'node:path';
import { dequantize, tensorByteLength } from './dequantize';
import { FileCursor } from './gguf-cursor';
import { GgufMetadata } from './gguf-metadata';
import { shardPaths, splitInfo } from './gguf-split';
import {
  GgmlType,
  GgufArray,
  GgufError,
  GgufTensorInfo,
  GgufValue,
  GgufValueType,
  ggmlTypeLayout,
  ggmlTypeName,
} from './gguf-types';

/*
 * GGUF v2/v3 reader (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
 *   magic "GGUF", u32 version, u64 tensor count, u64 metadata count,
 *   metadata (string key, u32 type, value), tensor infos (string name,
 *   u32 n_dims, u64 dims[n_dims], u32 ggml type, u64 offset), padding to
 *   general.alignment, tensor data.
 * The header is parsed once; tensor data is read on request with pread,
 * so a 100 MB model never sits in memory twice. A split model
 * (`*-00001-of-0000N.gguf`, gguf-split.ts) opens as one file: its first
 * shard's metadata and the tensors of every shard.
 */

const MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const DEFAULT_ALIGNMENT = 32;
const MAX_DIMS = 4; // GGML_MAX_DIMS

/** One parsed file: the whole model, or one shard of a split model. */
interface ParsedShard {
  readonly path: string;
  readonly fd: number;
  readonly version: number;
  readonly metadata: ReadonlyMap<string, GgufValue>;
  readonly metadataTypes: ReadonlyMap<string, GgufValueType>;
  readonly tensors: ReadonlyMap<string, GgufTensorInfo>;
  readonly alignment: number;
  readonly dataOffset: number;
  readonly fileSize: number;
}

export class GgufFile implements Disposable {
  /** Open descriptors, one per shard (index 0: the file opened); undefined once closed. */
  private fds: number[] | undefined;
  private scratch: Buffer | undefined;
  /** Typed, checked access to `metadata`. */
  readonly meta: GgufMetadata;
  /** Absolute path of the file (the first shard of a split model). */
  readonly path: string;
  readonly version: number;
  readonly metadata: ReadonlyMap<string, GgufValue>;
  /** The stored type of each metadata value (numbers alone do not say whether a key was u32 or f32). */
  readonly metadataTypes: ReadonlyMap<string, GgufValueType>;
  /** Every tensor, of every shard. */
  readonly tensors: ReadonlyMap<string, GgufTensorInfo>;
  readonly alignment: number;
  /** File offset where the tensor data section of the (first) file starts. */
  readonly dataOffset: number;
  readonly fileSize: number;
  /** Absolute paths of the shards: just `path` for an unsplit file. */
  readonly shardPaths: readonly string[];
  private readonly shards: readonly ParsedShard[];
  /** Tensor name -> index into `shards`. */
  private readonly shardOf: ReadonlyMap<string, number>;

  private constructor(shards: readonly ParsedShard[], index: TensorIndex) {
    const first = shards[0];
    this.shards = shards;
    this.fds = shards.map((s) => s.fd);
    this.path = first.path;
    this.version = first.version;
    this.metadata = first.metadata;
    this.metadataTypes = first.metadataTypes;
    this.alignment = first.alignment;
    this.dataOffset = first.dataOffset;
    this.fileSize = first.fileSize;
    this.shardPaths = shards.map((s) => s.path);
    this.tensors = index.tensors;
    this.shardOf = index.shardOf;
    this.meta = new GgufMetadata(this.metadata, displayName(this.path));
  }

  /**
   * Open a file and parse its header; tensor data stays on disk until asked
   * for. The first shard of a split model opens every shard, each checked
   * as a file on its own and against the others (numbering, count, no
   * tensor twice, the announced total).
   */
  static open(file: string): GgufFile {
    const first = GgufFile.openShard(path.resolve(file));
    const shards: ParsedShard[] = [first];
    try {
      const info = splitInfo(first.metadata, displayName(first.path));
      if (info && info.count > 1) {
        const paths = shardPaths(first.path, info);
        for (let i = 1; i < paths.length; i++) {
          if (!fs.existsSync(paths[i])) {
            throw new GgufError(
              `split GGUF ${displayName(first.path)}: shard ${i + 1} of ${info.count} (${paths[i]}) is missing`,
            );
          }
          const shard = GgufFile.openShard(paths[i]);
          shards.push(shard);
          const own = splitInfo(shard.metadata, displayName(shard.path));
          if (!own || own.no !== i || own.count !== info.count) {
            const says = own ? `shard ${own.no + 1} of ${own.count}` : 'not a shard (no split.no / split.count)';
            throw new GgufError(
              `split GGUF: ${displayName(shard.path)} should be shard ${i + 1} of ${info.count}, ` +
                `but its metadata says ${says}`,
            );
          }
        }
      }
      const index = indexTensors(shards);
      if (info && info.count > 1 && info.tensorsCount !== undefined && index.tensors.size !== info.tensorsCount) {
        throw new GgufError(
          `split GGUF ${displayName(first.path)}: split.tensors.count is ${info.tensorsCount}, ` +
            `but its ${info.count} shards hold ${index.tensors.size} tensors`,
        );
      }
      return new GgufFile(shards, index);
    } catch (err) {
      for (const shard of shards) fs.closeSync(shard.fd);
      throw err;
    }
  }

  private static openShard(resolved: string): ParsedShard {
    const fd = fs.openSync(resolved, 'r');
    try {
      return GgufFile.parse(resolved, fd);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
  }

  private static parse(file: string, fd: number): ParsedShard {
    const fileSize = fs.fstatSync(fd).size;
    const name = path.basename(file);
    const cursor = new FileCursor(fd, fileSize, name);
    if (fileSize < 4) throw new GgufError(`${name} is not a GGUF file: it has only ${fileSize} bytes`);
    const magic = cursor.u32('the magic number');
    if (magic !== MAGIC) {
      const seen = Buffer.alloc(4);
      seen.writeUInt32LE(magic);
      throw new GgufError(
        `${name} is not a GGUF file: it starts with ${JSON.stringify(seen.toString('latin1'))}, not "GGUF"`,
      );
    }
    const version = cursor.u32('the version');
    if (version !== 2 && version !== 3) {
      // A big-endian v3 file reads as 0x03000000 here.
      const hint = version === 0x03000000 || version === 0x02000000 ? ' (a big-endian GGUF file, not supported)' : '';
      throw new GgufError(
        `${name}: GGUF version ${version}${hint} is not supported (supported: 2, 3)`,
        'GGUF_UNSUPPORTED',
      );
    }
    const tensorCount = cursor.size('the tensor count');
    const metadataCount = cursor.size('the metadata count');

    const metadata = new Map<string, GgufValue>();
    const metadataTypes = new Map<string, GgufValueType>();
    for (let i = 0; i < metadataCount; i++) {
      const key = cursor.string(`metadata key #${i}`);
      const type = cursor.u32(`the type of metadata ${key}`);
      metadata.set(key, readValue(cursor, type, key, 0));
      metadataTypes.set(key, type);
    }

    const alignmentValue = metadata.get('general.alignment') ?? DEFAULT_ALIGNMENT;
    if (typeof alignmentValue !== 'number' || alignmentValue <= 0 || alignmentValue % 8 !== 0) {
      throw new GgufError(`${name}: general.alignment must be a positive multiple of 8, got ${String(alignmentValue)}`);
    }
    const alignment = alignmentValue;

    const infos: Array<Omit<GgufTensorInfo, 'byteLength' | 'elementCount'>> = [];
    for (let i = 0; i < tensorCount; i++) {
      const tensorName = cursor.string(`the name of tensor #${i}`);
      const nDims = cursor.u32(`the dimension count of tensor ${tensorName}`);
      if (nDims < 1 || nDims > MAX_DIMS)
        throw new GgufError(`${name}: tensor ${tensorName} has ${nDims} dimensions (expected 1..${MAX_DIMS})`);
      const dims: number[] = [];
      for (let d = 0; d < nDims; d++) dims.push(cursor.size(`dimension ${d} of tensor ${tensorName}`));
      const type = cursor.u32(`the type of tensor ${tensorName}`) as GgmlType;
      const offset = cursor.size(`the offset of tensor ${tensorName}`);
      infos.push({ name: tensorName, dims, type, offset });
    }
    const dataOffset = alignUp(cursor.position, alignment);

    const tensors = new Map<string, GgufTensorInfo>();
    for (const info of infos) {
      if (tensors.has(info.name)) throw new GgufError(`${name}: tensor ${info.name} appears twice`);
      const elementCount = info.dims.reduce((a, b) => a * b, 1);
      const byteLength = tensorByteLength(info.type, elementCount, `GGUF tensor ${info.name}`);
      // Quantized blocks never straddle rows in ggml.
      const blockSize = ggmlTypeLayout(info.type)!.blockSize;
      if (info.dims[0] % blockSize !== 0) {
        throw new GgufError(
          `${name}: tensor ${info.name} has rows of ${info.dims[0]}, ` +
            `not a multiple of the ${ggmlTypeName(info.type)} block size ${blockSize}`,
        );
      }
      if (info.offset % alignment !== 0) {
        throw new GgufError(
          `${name}: tensor ${info.name} starts at offset ${info.offset}, not a multiple of the alignment ${alignment}`,
        );
      }
      const end = dataOffset + info.offset + byteLength;
      if (end > fileSize) {
        throw new GgufError(
          `GGUF file ${name} is truncated: tensor ${info.name} needs bytes up to ${end}, ` +
            `but the file has ${fileSize} bytes`,
        );
      }
      tensors.set(info.name, { ...info, elementCount, byteLength });
    }
    return { path: file, fd, version, metadata, metadataTypes, tensors, alignment, dataOffset, fileSize };
  }

  /** The tensor's entry, or a clear error naming the file. */
  tensor(name: string): GgufTensorInfo {
    const info = this.tensors.get(name);
    if (!info) throw new GgufError(`GGUF file ${path.basename(this.path)} has no tensor named ${name}`);
    return info;
  }

  /** The raw bytes of a tensor as stored (quantized blocks included), in a new Buffer. */
  readTensorBytes(name: string): Buffer {
    return this.readInto(name, Buffer.allocUnsafe(this.tensor(name).byteLength));
  }

  /**
   * Reads a tensor's stored bytes (its blocks, as in the file) into `target`, which must be exactly its byte length.
   */
  readTensorBytesInto(name: string, target: Uint8Array): void {
    const length = this.tensor(name).byteLength;
    if (target.byteLength !== length)
      throw new RangeError(`GGUF tensor ${name} has ${length} bytes; the target has ${target.byteLength}`);
    this.readInto(name, Buffer.from(target.buffer, target.byteOffset, target.byteLength));
  }

  /** A tensor's values as f32, in storage order (row-major with dims[0] fastest). */
  readTensorFloat32(name: string): Float32Array {
    const info = this.tensor(name);
    // Reuse one scratch buffer for the raw bytes: fresh memory costs page faults, and loading touches ~100 MB.
    if (!this.scratch || this.scratch.length < info.byteLength) this.scratch = Buffer.allocUnsafe(info.byteLength);
    const bytes = this.readInto(name, this.scratch.subarray(0, info.byteLength));
    return dequantize(info.type, bytes, info.elementCount, `GGUF tensor ${name}`);
  }

  private readInto(name: string, bytes: Buffer): Buffer {
    const info = this.tensor(name);
    const shard = this.shardOf.get(name)!;
    const fd = this.openFd(shard);
    const start = this.shards[shard].dataOffset + info.offset;
    let filled = 0;
    while (filled < bytes.length) {
      const got = fs.readSync(fd, bytes, filled, bytes.length - filled, start + filled);
      if (got === 0)
        throw new GgufError(`GGUF file ${path.basename(this.shards[shard].path)}: short read in tensor ${name}`);
      filled += got;
    }
    return bytes;
  }

  /** Close the file descriptors (every shard's); idempotent. Reading tensors afterwards throws. */
  close(): void {
    if (this.fds !== undefined) {
      for (const fd of this.fds) fs.closeSync(fd);
      this.fds = undefined;
    }
    this.scratch = undefined;
  }

  [Symbol.dispose](): void {
    this.close();
  }

  private openFd(shard: number): number {
    if (this.fds === undefined) throw new GgufError(`GGUF file ${path.basename(this.path)} is closed`);
    return this.fds[shard];
  }
}

interface TensorIndex {
  readonly tensors: ReadonlyMap<string, GgufTensorInfo>;
  /** Tensor name -> index of the shard that holds it. */
  readonly shardOf: ReadonlyMap<string, number>;
}

/** All shards' tensors in one map; a name in two shards is an error. */
function indexTensors(shards: readonly ParsedShard[]): TensorIndex {
  const tensors = new Map<string, GgufTensorInfo>();
  const shardOf = new Map<string, number>();
  shards.forEach((shard, i) => {
    for (const [name, info] of shard.tensors) {
      const seen = shardOf.get(name);
      if (seen !== undefined) {
        throw new GgufError(
          `split GGUF ${displayName(shards[0].path)}: tensor ${name} appears in shard ${seen + 1} and shard ${i + 1}`,
        );
      }
      tensors.set(name, info);
      shardOf.set(name, i);
    }
  });
  return { tensors, shardOf };
}

function displayName(file: string): string {
  return path.basename(file);
}

function alignUp(offset: number, alignment: number): number {
  return Math.ceil(offset / alignment) * alignment;
}

function readValues(cursor: FileCursor, type: number, count: number, key: string, depth: number): GgufValue[] {
  const values: GgufValue[] = new Array(count);
  for (let i = 0; i < count; i++) values[i] = readValue(cursor, type, key, depth);
  return values;
}

function readValue(cursor: FileCursor, type: number, key: string, depth: number): GgufValue {
  switch (type) {
    case GgufValueType.UINT8:
      return cursor.u8(key);
    case GgufValueType.INT8:
      return cursor.i8(key);
    case GgufValueType.UINT16:
      return cursor.u16(key);
    case GgufValueType.INT16:
      return cursor.i16(key);
    case GgufValueType.UINT32:
      return cursor.u32(key);
    case GgufValueType.INT32:
      return cursor.i32(key);
    case GgufValueType.FLOAT32:
      return cursor.f32(key);
    case GgufValueType.FLOAT64:
      return cursor.f64(key);
    case GgufValueType.UINT64:
      return cursor.u64(key);
    case GgufValueType.INT64:
      return cursor.i64(key);
    case GgufValueType.BOOL: {
      const b = cursor.u8(key);
      if (b > 1) throw new GgufError(`GGUF metadata ${key}: boolean byte is ${b}, expected 0 or 1`);
      return b === 1;
    }
    case GgufValueType.STRING:
      return cursor.string(key);
    case GgufValueType.ARRAY: {
      // Nested arrays are legal but never used in practice; bound the depth so a corrupt file cannot recurse forever.
      if (depth > 4) throw new GgufError(`GGUF metadata ${key}: arrays nested deeper than 4 levels`);
      const elementType = cursor.u32(`the element type of ${key}`);
      const count = cursor.size(`the length of ${key}`);
      // Every element takes at least one byte: a larger count means a corrupt or truncated file.
      if (count > cursor.fileSize - cursor.position) {
        throw new GgufError(`GGUF metadata ${key}: array of ${count} elements cannot fit in the rest of the file`);
      }
      // A vocabulary is ~50k strings: read them in one loop, not one readValue() each.
      const values: GgufValue[] =
        elementType === GgufValueType.STRING
          ? cursor.strings(count, key)
          : readValues(cursor, elementType, count, key, depth + 1);
      const array: GgufArray = { kind: 'array', elementType, values };
      return array;
    }
    default:
      throw new GgufError(`GGUF metadata ${key} has unknown value type ${type}`);
  }
}
