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
  type Budget,
  type CostConstants,
  type FormsAvailable,
  type PlatformFacts,
} from './profiles';
export { attentionKernelChoice, choosePrecision, DOT_OPTIONS, PRECISIONS, type AttentionKernelChoice, type Precision, type PrecisionChoice, type PrecisionOption } from './precision-choice';
export { platformFactsOverride, withOverride, PLATFORM_FACTS_ENV, type PlatformFactsOverride } from './override';
export { isCudnnPinnedPlugin, pinCudnnForm, unpinnedPluginNote } from './cudnn-pin';
export { attentionTags, modelAttention, passAttention, shapedAttention, type AttentionPair, type ModelAttention } from './attention-forms';
