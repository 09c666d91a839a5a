/**
 * RoPE as a config.json declares it (docs/models.md, "RoPE"): transformers 5
 * writes `rope_parameters` ({rope_theta, rope_type, ...}, or one such object
 * per layer type for Gemma 3), transformers 4 writes `rope_theta` and
 * `rope_scaling`. Read the way transformers reads them: `rope_scaling` wins
 * over `rope_parameters`, a base inside the parameters over a top-level
 * `rope_theta`. A base or scaling length the config leaves out takes the
 * value transformers takes, and says so (a process warning): both change
 * every score.
 */
import { RopeScaling, yarnMscale } from '../util/rope';

type Json = Record<string, unknown>;

interface HfRope {
  readonly theta: number;
  readonly scaling?: RopeScaling;
}

interface HfRopeOptions {
  /** The config class's default base (transformers' default_theta), used with a warning when the config gives none. */
  readonly defaultTheta: number;
  /** Which nested parameters to read when rope_parameters is per layer type (Gemma 3). */
  readonly layerType?: 'full_attention' | 'sliding_attention';
  /** max_position_embeddings: YaRN's and Llama 3's original context when the config gives none. */
  readonly contextLength: number;
  readonly source: string;
}

/** The warning's code, for `process.on('warning')`. */
const ROPE_DEFAULT_WARNING = 'PJRT_SCORE_ROPE_DEFAULT';

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The RoPE base and scaling of one config (or one layer type of it); `fail` throws. */
export function ropeFromHf(config: Json, opts: HfRopeOptions, fail: (message: string) => never): HfRope {
  const { source } = opts;
  const legacy = config.rope_scaling;
  let params: Json | undefined;
  let where: string;
  if (isObject(legacy)) {
    params = legacy;
    where = 'rope_scaling';
  } else {
    const p = config.rope_parameters;
    where = 'rope_parameters';
    if (p !== undefined && p !== null && !isObject(p))
      fail(`${source}: rope_parameters should be an object, got ${JSON.stringify(p)}`);
    params = p as Json | undefined;
    if (params && opts.layerType !== undefined && isObject(params[opts.layerType])) {
      params = params[opts.layerType] as Json;
      where = `rope_parameters.${opts.layerType}`;
    } else if (params && Object.values(params).some(isObject)) {
      const nested = Object.keys(params).filter((k) => isObject(params?.[k]));
      fail(`${source}: rope_parameters per layer type (${nested.join(', ')}) is not supported for this model`);
    }
  }
  const p: Json = params ?? {};
  const number = (key: string, value: unknown): number => {
    if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value))
      fail(`${source}: ${key} should be a positive number, got ${JSON.stringify(value)}`);
    return value as number;
  };
  const warnDefault = (what: string, value: number, why: string): void => {
    process.emitWarning(
      `${source}: ${what} is not set; using ${value} (${why}). Scores depend on it: ` +
        `set it in config.json if the model was trained otherwise.`,
      {
        code: ROPE_DEFAULT_WARNING,
      },
    );
  };

  let theta: number;
  if (p.rope_theta !== undefined && p.rope_theta !== null) theta = number(`${where}.rope_theta`, p.rope_theta);
  else if (config.rope_theta !== undefined && config.rope_theta !== null)
    theta = number('rope_theta', config.rope_theta);
  else {
    theta = opts.defaultTheta;
    warnDefault(
      'the RoPE base (rope_parameters.rope_theta or rope_theta)',
      theta,
      "the model type's default in transformers",
    );
  }
  const partial = p.partial_rotary_factor ?? config.partial_rotary_factor;
  if (partial !== undefined && partial !== null && partial !== 1)
    fail(`${source}: partial_rotary_factor ${JSON.stringify(partial)} is not supported`);

  const type = p.rope_type ?? p.type ?? 'default';
  const required = (key: string): number => {
    if (p[key] === undefined || p[key] === null)
      fail(`${source}: ${where}.${key} is required for rope_type ${JSON.stringify(type)}`);
    return number(`${where}.${key}`, p[key]);
  };
  const originalContext = (): number => {
    const v = p.original_max_position_embeddings ?? config.original_max_position_embeddings;
    if (v !== undefined && v !== null) return number(`${where}.original_max_position_embeddings`, v);
    warnDefault(
      `${where}.original_max_position_embeddings`,
      opts.contextLength,
      'max_position_embeddings, as transformers does',
    );
    return opts.contextLength;
  };
  switch (type) {
    case 'default':
      return { theta };
    case 'linear':
      return { theta, scaling: { type: 'linear', factor: required('factor') } };
    case 'llama3':
      return {
        theta,
        scaling: {
          type: 'llama3',
          factor: required('factor'),
          lowFreqFactor: required('low_freq_factor'),
          highFreqFactor: required('high_freq_factor'),
          originalContext: originalContext(),
        },
      };
    case 'yarn': {
      const original = originalContext();
      // transformers 5: an absent factor is the ratio of the two context lengths.
      const factor =
        p.factor === undefined || p.factor === null
          ? opts.contextLength / original
          : number(`${where}.factor`, p.factor);
      const opt = (key: string): number | undefined =>
        p[key] === undefined || p[key] === null ? undefined : number(`${where}.${key}`, p[key]);
      const mscale = opt('mscale');
      const mscaleAllDim = opt('mscale_all_dim');
      const attentionFactor =
        opt('attention_factor') ??
        (mscale && mscaleAllDim ? yarnMscale(factor, mscale) / yarnMscale(factor, mscaleAllDim) : yarnMscale(factor));
      const truncate = p.truncate ?? true;
      if (typeof truncate !== 'boolean')
        fail(`${source}: ${where}.truncate should be true or false, got ${JSON.stringify(truncate)}`);
      return {
        theta,
        scaling: {
          type: 'yarn',
          factor,
          originalContext: original,
          betaFast: opt('beta_fast') ?? 32,
          betaSlow: opt('beta_slow') ?? 1,
          attentionFactor,
          truncate: truncate as boolean,
        },
      };
    }
    case 'dynamic':
      return fail(
        `${source}: ${where}.rope_type "dynamic" (dynamic NTK scaling) ` +
          `is not supported: its frequencies change with each sequence's length, ` +
          'so one multi-item pass cannot match it; supported: default, linear, llama3, yarn',
      );
    default:
      return fail(
        `${source}: ${where}.rope_type ${JSON.stringify(type)} is not supported (supported: ` +
          `default, linear, llama3, yarn)`,
      );
  }
}

/** A GGUF's RoPE base (`<arch>.rope.freq_base`); absent: llama.cpp's default of 10,000, with a warning. */
export function ggufRopeBase(
  meta: { number(key: string, optional: 'optional'): number | undefined },
  key: string,
  file: string,
): number {
  const v = meta.number(key, 'optional');
  if (v !== undefined) {
    if (!(v > 0) || !Number.isFinite(v))
      throw new RangeError(`GGUF file ${file}: ${key} should be a positive number, got ${v}`);
    return v;
  }
  process.emitWarning(`GGUF file ${file}: ${key} is not set; using 10000 (llama.cpp's default). Scores depend on it.`, {
    code: ROPE_DEFAULT_WARNING,
  });
  return 10000;
}
