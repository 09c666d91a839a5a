/**
 * The cuDNN attention forms (lib/hlo/attention/cudnn-call.ts) emit a
 * backend_config pinned to one release of the CUDA plugin. At load the
 * Scorer reads the loaded plugin's wheel version (beside the plugin file)
 * and writes it into the form, so the builder can refuse a plugin it was not
 * pinned for; a mismatch is refused here, before the weights upload.
 */
import { cudaPluginWheelVersion } from '../../runtime/plugin-path';
import { CUDNN_PINNED_PLUGIN, CudnnAttention } from '../../hlo';

/** Whether the loaded plugin is the CUDA plugin release the cuDNN forms are pinned to. */
export function isCudnnPinnedPlugin(pluginPath: string, platformName: string): boolean {
  return platformName.toLowerCase() === 'cuda' && cudaPluginWheelVersion(pluginPath) === CUDNN_PINNED_PLUGIN.version;
}

/**
 * Why a platform whose default is cuDNN's attention runs the StableHLO forms with this plugin: for the load log and
 * explain().
 */
export function unpinnedPluginNote(pluginPath: string): string {
  const version = cudaPluginWheelVersion(pluginPath);
  return (
    `cuDNN's fused attention, the default here under bf16 dots, ` +
    `is pinned to ${CUDNN_PINNED_PLUGIN.wheel} ${CUDNN_PINNED_PLUGIN.version}; ` +
    `the loaded plugin is ${version === undefined ? 'of unknown version' : `version ${version}`}: ` +
    `the StableHLO forms run (docs/gpu.md)`
  );
}

/**
 * `form` with the plugin's version written in when it is a cuDNN form (not the stand-in); throws on a version it was
 * not pinned for.
 */
export function pinCudnnForm<T extends { readonly kind: string }>(
  form: T,
  option: string,
  pluginPath: string,
  platformName: string,
): T {
  if (form.kind !== 'cudnn' || (form as unknown as CudnnAttention).standIn) return form;
  const version = cudaPluginWheelVersion(pluginPath);
  if (!isCudnnPinnedPlugin(pluginPath, platformName)) {
    throw new TypeError(
      `${option} 'cudnn' is pinned to the CUDA plugin of ` +
        `${CUDNN_PINNED_PLUGIN.wheel} ${CUDNN_PINNED_PLUGIN.version}; ` +
        `the loaded plugin (${pluginPath}, platform ${platformName}) ` +
        `is ${version === undefined ? 'of unknown version' : `version ${version}`}`,
    );
  }
  return { ...form, pluginVersion: version };
}
