/**
 * lib/runtime: the typed facade over the native addon: Client (a PJRT client
 * on one plugin), Executable, DeviceBuffer, element types, PJRT errors, and
 * where the PJRT plugin lives.
 * May import: util, and assets (to fetch the default CPU plugin on first use);
 * it knows nothing of programs, models or scoring.
 */
export { Client, ClientOptions, CompileOptions, DeviceInfo } from './client';
export { XlaOptions, XlaOptionValue, checkXlaOptions, xlaOptionsProblem, xlaOptionsLine } from './xla-options';
export { Executable } from './executable';
export { DeviceBuffer } from './device-buffer';
export { DType, HostArray, HostArrayOf } from './dtype';
export { PjrtError, PjrtErrorCode, DisposedError } from './errors';
export { Signature, TensorSpec, parseMainSignature } from './signature';
export {
  CPU_PLUGIN,
  PluginNotFoundError,
  resolvePluginPath,
  ensurePluginPath,
  fetchCpuPlugin,
  FETCH_PLUGIN_COMMAND,
} from './plugin-path';
export { MAX_PROGRAM_NESTING, programNestingDepth } from './nesting';
export { releaseFreeHostMemory } from './host-memory';
export { deferExternalMemoryReports } from './external-memory';
export {
  attentionKernelPaths,
  kernelThreads,
  KernelPaths,
  KernelIsa,
  KernelThreads,
  KERNEL_ISAS,
} from './kernel-paths';
