/**
 * lib/hlo/nn: the network pieces built of builder ops: softmax, logsumexp,
 * RMSNorm, SiLU, RoPE (functions.ts), and the LM head's label logprobs and
 * gather (lm-head.ts).
 * May import: builder.
 */

export * as nn from './functions';
export { LOG_NORMALIZER_LABEL, lmHeadGather, lmHeadLabelLogprobs } from './lm-head';
export type { LabelLogprobInputs, LmHeadGatherInputs, LmHeadOptions } from './lm-head';
