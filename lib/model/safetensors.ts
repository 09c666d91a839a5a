import { PjrtScoreError } from '../util/errors';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { dequantize } from './dequantize';
import { GgmlType } from './gguf-types';

/*
 * safetensors (https://huggingface.co/docs/safetensors): u64 LE header
 * length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]},
 * "__metadata__": {...}}, then the data; offsets are relative to 8 + N.
 * Tensors are read one at a time with pread.
 */

export class SafetensorsError extends PjrtScoreError {
  declare readonly code: 'SAFETENSORS_INVALID';
  constructor(message: string) {
    super(message, 'SAFETENSORS_INVALID');
    this.name = 'SafetensorsError';
  }
}

export interface SafetensorsTensorInfo {
  readonly name: string;
  readonly dtype: string;
  /** Row-major, slowest-varying first (PyTorch order). */
  readonly shape: readonly number[];
  /** Absolute file offsets of the data. */
  readonly begin: number;
  readonly end: number;
}

const DTYPE_BYTES: Readonly<Record<string, number>> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
  U16: 2,
  U32: 4,
  U64: 8,
  F8_E4M3: 1,
  F8_E5M2: 1,
};
const FLOAT_DTYPES: Readonly<Record<string, GgmlType>> = { F32: GgmlType.F32, F16: GgmlType.F16, BF16: GgmlType.BF16 };
/** A header larger than this is corrupt, not a model (the format itself caps it at 100 MB). */
const MAX_HEADER_BYTES = 100_000_000;

export class SafetensorsFile implements Disposable {
  private fd: number | undefined;

  private constructor(
    readonly path: string,
    fd: number,
    readonly tensors: ReadonlyMap<string, SafetensorsTensorInfo>,
    readonly metadata: Readonly<Record<string, string>>,
  ) {
    this.fd = fd;
  }

  static open(file: string): SafetensorsFile {
    const resolved = path.resolve(file);
    const fd = fs.openSync(resolved, 'r');
    try {
      const { tensors, metadata } = parseHeader(fd, path.basename(resolved));
      return new SafetensorsFile(resolved, fd, tensors, metadata);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
  }

  tensor(name: string): SafetensorsTensorInfo {
    const info = this.tensors.get(name);
    if (!info) throw new SafetensorsError(`${path.basename(this.path)} has no tensor named ${name}`);
    return info;
  }

  /** Values of an F32/F16/BF16 tensor as f32, row-major. */
  readTensorFloat32(name: string): Float32Array {
    const info = this.tensor(name);
    const type = FLOAT_DTYPES[info.dtype];
    if (type === undefined) {
      throw new SafetensorsError(
        `safetensors tensor ${name} in ${path.basename(this.path)} has dtype ${info.dtype}, ` +
          `which pjrt-score cannot load (supported: F32, F16, BF16)`,
      );
    }
    const bytes = this.readBytes(info, Buffer.allocUnsafe(info.end - info.begin));
    return dequantize(type, bytes, bytes.length / DTYPE_BYTES[info.dtype], `safetensors tensor ${name}`);
  }

  /** A BF16 tensor's raw bits (no f32 copy); undefined for any other dtype. */
  readTensorBf16Bits(name: string): Uint16Array | undefined {
    const info = this.tensor(name);
    if (info.dtype !== 'BF16') return undefined;
    const out = new Uint16Array((info.end - info.begin) / 2);
    this.readBytes(info, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
    return out;
  }

  private readBytes(info: SafetensorsTensorInfo, bytes: Buffer): Buffer {
    if (this.fd === undefined) throw new SafetensorsError(`${path.basename(this.path)} is closed`);
    let filled = 0;
    while (filled < bytes.length) {
      const got = fs.readSync(this.fd, bytes, filled, bytes.length - filled, info.begin + filled);
      if (got === 0) throw new SafetensorsError(`${path.basename(this.path)}: short read in tensor ${info.name}`);
      filled += got;
    }
    return bytes;
  }

  close(): void {
    if (this.fd !== undefined) {
      fs.closeSync(this.fd);
      this.fd = undefined;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

function parseHeader(
  fd: number,
  name: string,
): { tensors: Map<string, SafetensorsTensorInfo>; metadata: Record<string, string> } {
  const fileSize = fs.fstatSync(fd).size;
  const fail = (msg: string): never => {
    throw new SafetensorsError(`${name} is not a valid safetensors file: ${msg}`);
  };
  if (fileSize < 8) fail(`it has only ${fileSize} bytes`);
  const lengthBytes = Buffer.alloc(8);
  fs.readSync(fd, lengthBytes, 0, 8, 0);
  const headerLength = Number(lengthBytes.readBigUInt64LE(0));
  if (headerLength > MAX_HEADER_BYTES) fail(`the header length ${headerLength} is implausible`);
  if (8 + headerLength > fileSize)
    fail(`truncated: the header needs ${8 + headerLength} bytes, the file has ${fileSize}`);
  const headerBytes = Buffer.alloc(headerLength);
  fs.readSync(fd, headerBytes, 0, headerLength, 8);
  let header: unknown;
  try {
    header = JSON.parse(headerBytes.toString('utf8'));
  } catch (err) {
    return fail(`the header is not JSON (${(err as Error).message})`);
  }
  if (!header || typeof header !== 'object' || Array.isArray(header)) return fail('the header is not a JSON object');
  const dataStart = 8 + headerLength;
  const tensors = new Map<string, SafetensorsTensorInfo>();
  let metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(header as Record<string, unknown>)) {
    if (key === '__metadata__') {
      metadata = (value ?? {}) as Record<string, string>;
      continue;
    }
    const entry = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const { dtype, shape, data_offsets: offsets } = entry ?? {};
    if (typeof dtype !== 'string' || DTYPE_BYTES[dtype] === undefined)
      fail(`tensor ${key} has unknown dtype ${JSON.stringify(dtype)}`);
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0))
      fail(`tensor ${key} has a bad shape ${JSON.stringify(shape)}`);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isInteger(o) && o >= 0)) {
      fail(`tensor ${key} has bad data_offsets ${JSON.stringify(offsets)}`);
    }
    const [b, e] = offsets as [number, number];
    const count = (shape as number[]).reduce((x, y) => x * y, 1);
    const expected = count * DTYPE_BYTES[dtype as string];
    if (e - b !== expected)
      fail(`tensor ${key} (${dtype} ${JSON.stringify(shape)}) needs ${expected} bytes but data_offsets span ${e - b}`);
    if (dataStart + e > fileSize)
      fail(`truncated: tensor ${key} ends at byte ${dataStart + e}, the file has ${fileSize}`);
    tensors.set(key, {
      name: key,
      dtype: dtype as string,
      shape: shape as number[],
      begin: dataStart + b,
      end: dataStart + e,
    });
  }
  return { tensors, metadata };
}

/**
 * All tensors of a Hugging Face checkpoint directory: the shards named by
 * model.safetensors.index.json, else every *.safetensors file.
 */
export class SafetensorsShards implements Disposable {
  private constructor(
    private readonly files: readonly SafetensorsFile[],
    private readonly byName: ReadonlyMap<string, SafetensorsFile>,
    readonly dir: string,
  ) {}

  static open(dir: string): SafetensorsShards {
    const resolved = path.resolve(dir);
    const indexPath = path.join(resolved, 'model.safetensors.index.json');
    let names: string[];
    if (fs.existsSync(indexPath)) {
      const index = JSON.parse(fs.readFileSync(indexPath, 'utf8')) as { weight_map?: Record<string, string> };
      names = [...new Set(Object.values(index.weight_map ?? {}))].sort();
    } else {
      names = fs
        .readdirSync(resolved)
        .filter((f) => f.endsWith('.safetensors'))
        .sort();
    }
    if (names.length === 0) throw new SafetensorsError(`${resolved} contains no *.safetensors files`);
    const files: SafetensorsFile[] = [];
    const byName = new Map<string, SafetensorsFile>();
    try {
      for (const n of names) {
        const file = SafetensorsFile.open(path.join(resolved, n));
        files.push(file);
        for (const t of file.tensors.keys()) {
          if (byName.has(t))
            throw new SafetensorsError(`tensor ${t} appears in both ${path.basename(byName.get(t)!.path)} and ${n}`);
          byName.set(t, file);
        }
      }
    } catch (err) {
      for (const f of files) f.close();
      throw err;
    }
    return new SafetensorsShards(files, byName, resolved);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  tensor(name: string): SafetensorsTensorInfo {
    const file = this.byName.get(name);
    if (!file) throw new SafetensorsError(`no safetensors file in ${this.dir} has a tensor named ${name}`);
    return file.tensor(name);
  }

  readTensorFloat32(name: string): Float32Array {
    this.tensor(name);
    return this.byName.get(name)!.readTensorFloat32(name);
  }

  readTensorBf16Bits(name: string): Uint16Array | undefined {
    this.tensor(name);
    return this.byName.get(name)!.readTensorBf16Bits(name);
  }

  get tensorNames(): string[] {
    return [...this.byName.keys()];
  }

  close(): void {
    for (const f of this.files) f.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
