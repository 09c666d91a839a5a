// Executable: a compiled program; checks arguments against its signature, runs, serializes.
import { sameDims } from '../util/dims';
import { NativeExecutable } from './binding';
import { DeviceBuffer } from './device-buffer';
import { DType, isDType } from './dtype';
import { packEnvelope } from './envelope';
import { DisposedError, fromNative } from './errors';
import { formatSpec, Signature, TensorSpec } from './signature';

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
    return packEnvelope(
      { platform: this.platform.name, platformVersion: this.platform.version, signature: this.signature },
      payload,
    );
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
