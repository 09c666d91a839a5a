// Executable: a compiled program; checks arguments against its signature, runs, serializes.
import { sameDims } from '../util/dims';
import { NativeExecutable } from './binding';
import { DeviceBuffer } from './device-buffer';
import { DType, isDType } from './dtype';
import { DisposedError, fromNative } from './errors';
import { formatSpec, Signature, TensorSpec } from './signature';

const ENVELOPE_MAGIC = 'PJRTSCX1';

/** What travels with serialized plugin bytes, so a loaded executable is checked like a compiled one. */
interface EnvelopeHeader {
  readonly platform: string;
  readonly platformVersion: string;
  readonly signature?: Signature;
}

export function packEnvelope(header: EnvelopeHeader, payload: Uint8Array): Uint8Array {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const out = Buffer.allocUnsafe(8 + 4 + json.length + payload.length);
  out.write(ENVELOPE_MAGIC, 0, 'latin1');
  out.writeUInt32LE(json.length, 8);
  json.copy(out, 12);
  Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).copy(out, 12 + json.length);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

export function unpackEnvelope(bytes: Uint8Array): { header: EnvelopeHeader; payload: Uint8Array } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 12 || buf.toString('latin1', 0, 8) !== ENVELOPE_MAGIC) {
    throw new TypeError('not a serialized pjrt-score executable (bad magic): use bytes from executable.serialize()');
  }
  const length = buf.readUInt32LE(8);
  if (12 + length > buf.length) throw new TypeError('serialized executable is truncated');
  let header: EnvelopeHeader;
  try {
    header = JSON.parse(buf.toString('utf8', 12, 12 + length)) as EnvelopeHeader;
  } catch {
    throw new TypeError('serialized executable has a corrupt header');
  }
  return { header, payload: new Uint8Array(buf.buffer, buf.byteOffset + 12 + length, buf.length - 12 - length) };
}

/** A compiled program, ready to run on the client's device. */
export class Executable implements Disposable {
  /** @internal */
  readonly native: NativeExecutable;
  /** Parameter and result types of `main`, when they could be read from the program. */
  readonly signature: Signature | undefined;
  private readonly platform: { name: string; version: string };

  /** @internal Use client.compile() or client.deserialize(). */
  constructor(native: NativeExecutable, signature: Signature | undefined, platform: { name: string; version: string }) {
    this.native = native;
    this.signature = signature;
    this.platform = platform;
  }

  get disposed(): boolean {
    return this.native.disposed;
  }

  get numOutputs(): number {
    this.assertLive();
    return this.native.numOutputs;
  }

  get outputTypes(): DType[] {
    this.assertLive();
    return this.native.outputTypes.filter(isDType);
  }

  get outputDims(): number[][] {
    this.assertLive();
    return this.native.outputDims;
  }

  /**
   * Runs the program (off the JS thread). Arguments are checked against the
   * program's parameter types first; each output is a new DeviceBuffer that
   * the caller owns.
   */
  async execute(args: readonly DeviceBuffer[]): Promise<DeviceBuffer[]> {
    this.assertLive();
    if (!Array.isArray(args)) throw new TypeError('execute() takes an array of DeviceBuffers');
    args.forEach((arg, i) => {
      if (!(arg instanceof DeviceBuffer)) throw new TypeError(`argument ${i} is not a DeviceBuffer`);
      if (arg.disposed) throw new DisposedError(`argument ${i} (DeviceBuffer)`);
    });
    if (this.signature) checkArguments(this.signature.inputs, args);
    const outputs = await fromNative('execute', this.native.execute(args.map((a) => a.native)));
    return outputs.map((o) => new DeviceBuffer(o));
  }

  /** Bytes that `client.deserialize()` turns back into this executable (same plugin version). */
  async serialize(): Promise<Uint8Array> {
    this.assertLive();
    const payload = await fromNative('serialize', this.native.serialize());
    return packEnvelope({ platform: this.platform.name, platformVersion: this.platform.version, signature: this.signature }, payload);
  }

  /** Frees the compiled program. Idempotent. */
  dispose(): void {
    this.native.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  private assertLive(): void {
    if (this.native.disposed) throw new DisposedError('Executable');
  }
}

function checkArguments(inputs: readonly TensorSpec[], args: readonly DeviceBuffer[]): void {
  if (args.length !== inputs.length) {
    throw new RangeError(`execute() expected ${inputs.length} argument(s), got ${args.length}`);
  }
  args.forEach((arg, i) => {
    const expected = inputs[i];
    const got: TensorSpec = { dtype: arg.dtype, dims: arg.dims };
    if (got.dtype !== expected.dtype || !sameDims(got.dims, expected.dims)) {
      throw new TypeError(`argument ${i}: expected ${formatSpec(expected)}, got ${formatSpec(got)}`);
    }
  });
}
