/**
 * The CUDA PJRT plugin release pjrt-score pins (docs/gpu.md): the wheel
 * `pjrt-score fetch --plugin cuda` installs (lib/assets/cuda-plugin-wheels.ts)
 * and the release whose backend_config the cuDNN attention form writes
 * (lib/hlo/attention/cudnn-call.ts). Written here once, below both rooms.
 */
export const CUDA_PLUGIN_PIN: Readonly<{ wheel: string; version: string }> = Object.freeze({
  wheel: 'jax-cuda13-pjrt',
  version: '0.11.2',
});
