/**
 * RoPE frequencies: the inverse frequency of each rotary pair and the factor
 * the cos/sin tables are multiplied by, for the base and the scaling a model
 * declares (docs/models.md, "RoPE"). The formulas are those of transformers'
 * RoPE initialisation functions (default, linear, llama3, yarn), computed in
 * float64; the model room reads the scaling from config.json or GGUF, the
 * program builder turns the frequencies into tables.
 */

/** RoPE scaling a model declares; absent: plain RoPE. */
export type RopeScaling =
  /** Positions divided by `factor` (every frequency divided by it). */
  | { readonly type: 'linear'; readonly factor: number }
  /** Llama 3.1/3.2: low frequencies divided by `factor`, high ones kept, a smooth ramp between. */
  | {
      readonly type: 'llama3';
      readonly factor: number;
      readonly lowFreqFactor: number;
      readonly highFreqFactor: number;
      readonly originalContext: number;
    }
  /**
   * YaRN (Qwen2.5/Qwen3 long context): a ramp between interpolated and original frequencies, tables times
   * attentionFactor.
   */
  | {
      readonly type: 'yarn';
      readonly factor: number;
      readonly originalContext: number;
      readonly betaFast: number;
      readonly betaSlow: number;
      readonly attentionFactor: number;
      /** Round the correction range to whole dimensions (transformers' default). */
      readonly truncate: boolean;
    }
  /** One divisor per rotary pair (GGUF's rope_freqs.weight, written from Llama 3's scaling). */
  | { readonly type: 'frequency-factors'; readonly factors: readonly number[] };

export interface RopeFrequencies {
  /** headDim / 2 inverse frequencies (radians per position). */
  readonly inverse: readonly number[];
  /** cos and sin are multiplied by it (YaRN's attention factor; 1 otherwise). */
  readonly attentionScale: number;
}

/** YaRN's attention factor when the config gives none: 0.1 * mscale * ln(factor) + 1 (1 for factor <= 1). */
export function yarnMscale(factor: number, mscale = 1): number {
  return factor <= 1 ? 1 : 0.1 * mscale * Math.log(factor) + 1;
}

/** The inverse frequencies and table scale for `theta` over `headDim`, with `scaling` applied. */
export function ropeFrequencies(theta: number, headDim: number, scaling?: RopeScaling): RopeFrequencies {
  if (!(theta > 0)) throw new RangeError(`RoPE base must be positive, got ${theta}`);
  if (!(Number.isInteger(headDim) && headDim > 0 && headDim % 2 === 0))
    throw new RangeError(`RoPE head dim must be even and positive, got ${headDim}`);
  const half = headDim / 2;
  const plain = Array.from({ length: half }, (_, i) => 1 / theta ** ((2 * i) / headDim));
  if (!scaling) return { inverse: plain, attentionScale: 1 };
  switch (scaling.type) {
    case 'linear':
      return { inverse: plain.map((f) => f / scaling.factor), attentionScale: 1 };
    case 'frequency-factors':
      if (scaling.factors.length !== half)
        throw new RangeError(`RoPE frequency factors: ${scaling.factors.length} given, the head needs ${half}`);
      return { inverse: plain.map((f, i) => f / scaling.factors[i]), attentionScale: 1 };
    case 'llama3': {
      const { factor, lowFreqFactor, highFreqFactor, originalContext } = scaling;
      const lowWavelen = originalContext / lowFreqFactor;
      const highWavelen = originalContext / highFreqFactor;
      const inverse = plain.map((f) => {
        const wavelen = (2 * Math.PI) / f;
        if (wavelen < highWavelen) return f;
        if (wavelen > lowWavelen) return f / factor;
        const smooth = (originalContext / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
        return ((1 - smooth) * f) / factor + smooth * f;
      });
      return { inverse, attentionScale: 1 };
    }
    case 'yarn': {
      const { factor, originalContext, betaFast, betaSlow, truncate } = scaling;
      const correctionDim = (rotations: number): number =>
        (headDim * Math.log(originalContext / (rotations * 2 * Math.PI))) / (2 * Math.log(theta));
      let low = correctionDim(betaFast);
      let high = correctionDim(betaSlow);
      if (truncate) {
        low = Math.floor(low);
        high = Math.ceil(high);
      }
      low = Math.max(low, 0);
      high = Math.min(high, headDim - 1);
      if (low === high) high += 0.001;
      const inverse = plain.map((f, i) => {
        const ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
        const extrapolation = 1 - ramp;
        return (f / factor) * (1 - extrapolation) + f * extrapolation;
      });
      return { inverse, attentionScale: scaling.attentionFactor };
    }
  }
}
