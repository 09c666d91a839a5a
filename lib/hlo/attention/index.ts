/**
 * lib/hlo/attention: the attention forms and the two dispatchers that build
 * the chosen one (docs/design.md "Rooms", "Platforms and precision").
 *
 * - prefix.ts: items over a prefix (PrefixAttention) and its forms:
 *   prefix-joint.ts, prefix-rows.ts (`ones_own`), prefix-kernel.ts (`ffi`);
 * - causal.ts: the prefill's causal attention (CausalAttention) and its
 *   forms: causal-square.ts, causal-chunks.ts (`qc<n>`), causal-kernel.ts (`ffi`);
 * - query-items-kernel.ts: both as the kernel, in one call (a packed pass);
 * - cudnn-call.ts, cudnn-forms.ts: cuDNN's fused call and its forms of both;
 * - dense-and-factored.ts: the whole-request layouts (public programs);
 * - layout.ts, joint-softmax.ts, score-shaping.ts (MASKED_SCORE, windows,
 *   soft caps), pass-rows.ts: what the forms share.
 *
 * A dispatcher builds the form it is given or refuses it (HloBuildError):
 * which form a pass runs is decided once, by lib/scoring/platform/attention-forms.ts.
 * May import: builder.
 */

export type { AttentionOptions, ItemsOverPrefixInputs } from './layout';
export { MASKED_SCORE, NO_WINDOW } from './score-shaping';
export { denseSegmentMask, maskedAttentionDense, maskedAttentionFactored } from './dense-and-factored';
export type { FactoredAttentionInputs } from './dense-and-factored';
export { causalPrefixAttention } from './causal-square';
export { itemsOverPrefixAttention } from './prefix-joint';
export { itemsOverPrefixAttentionRows } from './prefix-rows';
export type { RowsForm } from './prefix-rows';
export { itemsOverPrefixAttentionKernel } from './prefix-kernel';
export {
  JOINT_PREFIX_ATTENTION,
  checkPrefixAttention,
  itemsOverPrefix,
  parsePrefixAttentionTag,
  prefixAttentionTag,
} from './prefix';
export type { PrefixAttention } from './prefix';
export { causalPrefixAttentionChunked } from './causal-chunks';
export { causalPrefixAttentionKernel } from './causal-kernel';
export {
  QUERY_ITEMS_ATTENTION_BF16_TARGET,
  QUERY_ITEMS_ATTENTION_ROPE_BF16_TARGET,
  QUERY_ITEMS_ATTENTION_ROPE_TARGET,
  QUERY_ITEMS_ATTENTION_TARGET,
  queryAndItemsAttentionKernel,
  queryAndItemsAttentionOnProjection,
} from './query-items-kernel';
export type { QueryAndItemsInputs, QueryAndItemsProjectionInputs } from './query-items-kernel';
export {
  SQUARE_CAUSAL_ATTENTION,
  causalAttentionNameTag,
  causalAttentionTag,
  causalPrefix,
  checkCausalAttention,
  parseCausalAttentionTag,
} from './causal';
export type { CausalAttention } from './causal';
export { CUDNN_PINNED_PLUGIN, fusedAttention } from './cudnn-call';
export type { CudnnAttention } from './cudnn-call';
export { queryAndItemsAttentionCudnn } from './cudnn-forms';
export { PassRows } from './pass-rows';
