// DeviceBuffer: the typed facade over a native device buffer.
import { NativeBuffer, binding } from './binding';
import { DType, HostArray, hostArray, isDType } from './dtype';
import { DisposedError, fromNative } from './errors';

/**
 * An array on the device. Made by `client.upload()` or returned by
 * `executable.execute()`; read back with `toHost()`.
 */
export class DeviceBuffer implements Disposable {
  /** @internal */
  readonly native: NativeBuffer;

  /** @internal Use client.upload() or executable.execute(). */
  constructor(native: NativeBuffer) {
    this.native = native;
  }

  get disposed(): boolean {
    return this.native.disposed;
  }

  get dims(): number[] {
    this.assertLive();
    return this.native.dims;
  }

  get dtype(): DType {
    this.assertLive();
    const dtype = this.native.dtype;
    if (!isDType(dtype))
      throw new TypeError(`DeviceBuffer has element type ${dtype}, which pjrt-score does not handle`);
    return dtype;
  }

  /** Size of the dense host copy, in bytes. */
  get byteLength(): number {
    this.assertLive();
    return this.native.byteLength;
  }

  /** Copies the array to the host (off the JS thread). */
  async toHost(): Promise<HostArray> {
    const dtype = this.dtype;
    const bytes = await fromNative('toHost', this.native.toHost());
    return hostArray(dtype, bytes);
  }

  /** Frees the device memory now. Idempotent. */
  dispose(): void {
    this.native.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /**
   * Bytes of live device buffers (in this thread) reported to V8 as external
   * memory; V8's own total is not visible in process.memoryUsage().
   */
  static externalBytes(): number {
    return binding().externalBytes();
  }

  private assertLive(): void {
    if (this.native.disposed) throw new DisposedError('DeviceBuffer');
  }
}
