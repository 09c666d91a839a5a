/**
 * The one place that decides which attention forms a pass runs (the builders
 * in lib/hlo/attention build the form they are given or refuse it): the
 * platform's (or the caller's) choice, except that
 * - the fused forms (the addon's CPU kernels, `kernel`, and cuDNN's calls,
 *   `cudnn`) take no sliding window and no soft-capped scores yet: a model
 *   with either (Gemma, a windowed Mistral) runs the platform's StableHLO
 *   forms, which carry both (lib/hlo/attention/score-shaping.ts);
 * - the addon's kernels take one query: a pass of several queries (a
 *   cross-request pass) runs the platform's StableHLO forms in their place.
 * Program names, cache keys and explain() carry the forms chosen here (no
 * `ffi` or `cudnn` tag where they do not run). The fused forms' seam is
 * AttentionOptions.window/softcap: a form that takes them would be chosen
 * here again.
 */
import { causalAttentionTag, prefixAttentionTag } from '../../hlo';
import type { CausalAttention, PrefixAttention } from '../../hlo';
import type { ModelConfig } from '../../model/config';
import type { PlatformFacts } from './profiles';

/** The two attention forms of a pass. */
export interface AttentionPair {
  readonly prefixAttention: PrefixAttention;
  readonly causalAttention: CausalAttention;
}

interface ModelAttention extends AttentionPair {
  /** Why the forms differ from the ones asked for, or undefined. */
  readonly note?: string;
  /** The forms of a pass of several queries (a cross-request pass): these, less the addon's kernels. */
  readonly grouped: AttentionPair;
  /** Why the grouped forms differ from these, or undefined. */
  readonly groupedNote?: string;
}

/** What of the model's attention the kernels cannot compute: '' when nothing. */
function shapedAttention(config: ModelConfig): string {
  const parts: string[] = [];
  const w = config.slidingWindow;
  if (w)
    parts.push(`a sliding window of ${w.window} on ${w.layers.filter(Boolean).length} of ${config.numLayers} layers`);
  if (config.gemma?.attentionSoftcap !== undefined)
    parts.push(`attention scores soft-capped at ${config.gemma.attentionSoftcap}`);
  return parts.join(' and ');
}

/**
 * The forms `config` runs, given the ones asked for (or the platform's defaults) and the platform's StableHLO forms.
 */
export function modelAttention(config: ModelConfig, asked: AttentionPair, facts: PlatformFacts): ModelAttention {
  const shaped = shapedAttention(config);
  const fused = (kind: string): boolean => kind === 'kernel' || kind === 'cudnn';
  const forms: AttentionPair & { note?: string } =
    !shaped || !(fused(asked.prefixAttention.kind) || fused(asked.causalAttention.kind))
      ? asked
      : {
          prefixAttention: fused(asked.prefixAttention.kind) ? facts.prefixAttention : asked.prefixAttention,
          causalAttention: fused(asked.causalAttention.kind) ? facts.causalAttention : asked.causalAttention,
          note:
            `the model has ${shaped}, which the fused attention forms do not take yet: ` +
            `its layers run the StableHLO forms`,
        };
  const grouped: AttentionPair = {
    prefixAttention: forms.prefixAttention.kind === 'kernel' ? facts.prefixAttention : forms.prefixAttention,
    causalAttention: forms.causalAttention.kind === 'kernel' ? facts.causalAttention : forms.causalAttention,
  };
  const same = grouped.prefixAttention === forms.prefixAttention && grouped.causalAttention === forms.causalAttention;
  const groupedNote = same
    ? undefined
    : `a pass shared by several requests runs ${prefixAttentionTag(grouped.prefixAttention)} ` +
      `and ${causalAttentionTag(grouped.causalAttention)}: the addon's kernels take one query`;
  return { ...forms, grouped, ...(groupedNote ? { groupedNote } : {}) };
}

/** The forms a pass of `groups` queries runs (1: one request's pass). */
export function passAttention(
  forms: AttentionPair & { readonly grouped?: AttentionPair },
  groups: number,
): AttentionPair {
  return groups > 1 && forms.grouped ? forms.grouped : forms;
}

/** The tags explain() shows for a pass's forms. */
export function attentionTags(forms: AttentionPair): { prefixAttention: string; causalAttention: string } {
  return {
    prefixAttention: prefixAttentionTag(forms.prefixAttention),
    causalAttention: causalAttentionTag(forms.causalAttention),
  };
}
