/**
 * The attention forms a model runs: the platform's (or the caller's) choice,
 * except that the fused forms (the addon's CPU kernels, `kernel`, and cuDNN's
 * calls, `cudnn`) take no sliding window and no soft-capped scores yet. A
 * model with either (Gemma, a windowed Mistral) runs the platform's StableHLO
 * forms instead, which carry both (lib/hlo/attention-window.ts); its program
 * names say so (no `ffi` or `cudnn` tag). The fused forms' seam is
 * AttentionOptions.window/softcap: a form that takes them would be chosen
 * here again.
 */
import type { PrefixAttention } from '../hlo/prefix-attention';
import type { CausalAttention } from '../hlo/attention-causal-chunks';
import type { ModelConfig } from '../model/config';
import type { PlatformFacts } from './platform';

export interface ModelAttention {
  readonly prefixAttention: PrefixAttention;
  readonly causalAttention: CausalAttention;
  /** Why the forms differ from the ones asked for, or undefined. */
  readonly note?: string;
}

/** What of the model's attention the kernels cannot compute: '' when nothing. */
export function shapedAttention(config: ModelConfig): string {
  const parts: string[] = [];
  const w = config.slidingWindow;
  if (w) parts.push(`a sliding window of ${w.window} on ${w.layers.filter(Boolean).length} of ${config.numLayers} layers`);
  if (config.gemma?.attentionSoftcap !== undefined) parts.push(`attention scores soft-capped at ${config.gemma.attentionSoftcap}`);
  return parts.join(' and ');
}

/** The forms `config` runs, given the ones asked for (or the platform's defaults) and the platform's StableHLO forms. */
export function modelAttention(config: ModelConfig, asked: { prefixAttention: PrefixAttention; causalAttention: CausalAttention }, facts: PlatformFacts): ModelAttention {
  const shaped = shapedAttention(config);
  const fused = (kind: string): boolean => kind === 'kernel' || kind === 'cudnn';
  if (!shaped || !(fused(asked.prefixAttention.kind) || fused(asked.causalAttention.kind))) return asked;
  return {
    prefixAttention: fused(asked.prefixAttention.kind) ? facts.prefixAttention : asked.prefixAttention,
    causalAttention: fused(asked.causalAttention.kind) ? facts.causalAttention : asked.causalAttention,
    note: `the model has ${shaped}, which the fused attention forms do not take yet: its layers run the StableHLO forms`,
  };
}
