/**
 * V8's view of device memory. Every DeviceBuffer reports its size to V8 as
 * external memory, so that dropped buffers are collected soon (on a CPU
 * plugin device memory is host memory). V8 starts a full collection for
 * every ~64 MB of growth: loading the default model's 540 MB of f32 weights
 * ran 7 of them, about 0.1 s of its 0.9 s. A load reports them once instead.
 */
import { binding } from './binding';

/**
 * Runs `work` with the external-memory changes of the device buffers made or
 * freed meanwhile (by any caller) summed and reported to V8 once, when it
 * ends, however it ends. Spans nest: the outermost end reports.
 */
export async function deferExternalMemoryReports<T>(work: () => Promise<T>): Promise<T> {
  const native = binding();
  native.deferExternalMemory(true);
  try {
    return await work();
  } finally {
    native.deferExternalMemory(false);
  }
}
