/**
 * lib/scoring/platform: what differs by platform, decided without a device.
 * One profile per platform, the CPU's by class (profiles.ts): budgets, cost
 * constants, default attention forms, ladder rungs, bf16 typing, XLA
 * options, and the precision rule (precision-choice.ts). PJRT_SCORE_PLATFORM_FACTS overrides some
 * facts (override.ts); the cuDNN forms are pinned to one CUDA plugin
 * (cudnn-pin.ts). The weights rule lives in lib/device-weights/choose.ts
 * (device-weights may not import scoring).
 * May import: no sibling.
 */
export {
  budgetForMemory,
  defaultCausalAttention,
  defaultPrefixAttention,
  platformFacts,
  SCORE_SHARE_OF_DEVICE_MEMORY,
} from './profiles';
export { attentionKernelChoice, choosePrecision } from './precision-choice';
export { platformFactsOverride, withOverride, PLATFORM_FACTS_ENV } from './override';
export { isCudnnPinnedPlugin, unpinnedPluginNote } from './cudnn-pin';
