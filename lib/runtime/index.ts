export { Client, ClientOptions, DeviceInfo } from './client';
export { Executable } from './executable';
export { DeviceBuffer } from './device-buffer';
export { DType, HostArray, HostArrayOf } from './dtype';
export { PjrtError, PjrtErrorCode, DisposedError } from './errors';
export { Signature, TensorSpec, parseMainSignature } from './signature';
export { CPU_PLUGIN, PluginNotFoundError, resolvePluginPath, fetchCpuPlugin, FETCH_PLUGIN_COMMAND } from './plugin-path';
export { MAX_PROGRAM_NESTING, programNestingDepth } from './nesting';
