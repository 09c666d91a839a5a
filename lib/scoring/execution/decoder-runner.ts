/**
 * Runs decoder programs on the device: compiles through the JIT cache, uploads
 * the per-request inputs, appends the resident weights, executes, and frees
 * the inputs. Plans (planning/plan.ts) decide what to run; this file only runs it.
 */
import {
  Bf16Matrices,
  CausalAttention,
  causalAttentionNameTag,
  DecoderDims,
  decoderExtend,
  decoderFused,
  DecoderOptions,
  decoderPrefill,
  HloProgram,
  JOINT_PREFIX_ATTENTION,
  packedForm,
  PrefixAttention,
  prefixAttentionTag,
  SQUARE_CAUSAL_ATTENTION,
  WeightType,
} from '../../hlo';
import { ModelConfig } from '../../model/config';
import { DeviceWeights } from '../../device-weights/upload';
import { Client } from '../../runtime/client';
import { DeviceBuffer } from '../../runtime/device-buffer';
import { DType } from '../../runtime/dtype';
import { Executable } from '../../runtime/executable';
import type { XlaOptions } from '../../runtime/xla-options';
import { DOT_OPTIONS, Precision } from '../platform/precision-choice';
import { clientCompiler, JitKey } from './compiler';
import { DEFAULT_JIT_CACHE_ENTRIES, JitCache, JitCacheOptions } from './jit-cache';
import { ProgramKey } from '../planning/plan';
import { passAttention } from '../platform/attention-forms';

/** One device pass, in performance.now() milliseconds: its inputs' upload and its execution (not a compile). */
export interface DevicePassTiming {
  /** The program's kind (prefill, packed, ...). */
  readonly program: string;
  readonly startMs: number;
  readonly endMs: number;
}

/** Told of each pass of a call that ends (ScoreCallOptions.onPass). */
export type PassObserver = (pass: DevicePassTiming) => void;

/** A host array to upload as one program input. */
export interface HostInput {
  readonly data: Int32Array | Float32Array;
  readonly dims: readonly number[];
  readonly dtype: DType;
}

type ProgramArg = HostInput | DeviceBuffer;

export function s32(data: Int32Array | readonly number[], dims?: readonly number[]): HostInput {
  const array = data instanceof Int32Array ? data : Int32Array.from(data);
  return { data: array, dims: dims ?? [array.length], dtype: 's32' };
}

export function s32Scalar(value: number): HostInput {
  return { data: Int32Array.of(value), dims: [], dtype: 's32' };
}

/** The attention forms of a runner; the defaults (joint, square) are what every plugin runs. */
interface AttentionForms {
  readonly prefixAttention: PrefixAttention;
  readonly causalAttention: CausalAttention;
}

const DEFAULT_ATTENTION_FORMS: AttentionForms = Object.freeze({
  prefixAttention: JOINT_PREFIX_ATTENTION,
  causalAttention: SQUARE_CAUSAL_ATTENTION,
});

/**
 * The attention forms (and those of a pass of several queries, where they differ: attention-forms.ts),
 * whether bf16 dots give bf16 q|k|v and gate|up products (a platform fact; default no), and the XLA
 * options the programs compile with (default none; in the JIT cache's namespace, compiler.ts).
 */
interface ProgramForms extends AttentionForms {
  readonly grouped?: AttentionForms;
  readonly bf16Products?: boolean;
  /** Under bf16 dots, the projections through the addon's matmul kernel (a platform fact; default no). */
  readonly matmulKernel?: boolean;
  /**
   * Under f32 dots, the projections of f32 weights through the addon's f32 matmul kernel (a platform fact; default no).
   */
  readonly matmulKernelF32?: boolean;
  readonly xlaOptions?: XlaOptions;
}

/** How a pass's program computes beyond its shape. */
interface ProgramChoices extends AttentionForms {
  readonly precision: Precision;
  readonly weights: WeightType;
  /** How bf16 matrices are typed on the device: the weights' own (DeviceWeights.bf16Matrices). */
  readonly bf16Matrices: Bf16Matrices;
  readonly bf16Products: boolean;
  readonly matmulKernel: boolean;
  readonly matmulKernelF32: boolean;
  /** The layer matrices the weights hold packed for the matmul kernel (DeviceWeights.packed). */
  readonly packedMatrices: DeviceWeights['packed'];
}

function buildProgram(config: DecoderDims, key: ProgramKey, c: ProgramChoices): HloProgram {
  const options: DecoderOptions = {
    ...DOT_OPTIONS[c.precision],
    ...(c.weights !== 'f32' ? { weights: c.weights } : {}),
    ...(c.weights === 'bf16' && c.bf16Matrices !== 'u16' ? { bf16Matrices: c.bf16Matrices } : {}),
    ...(c.precision === 'bf16' && c.bf16Products ? { bf16Products: true } : {}),
    ...(c.precision === 'bf16' && c.matmulKernel ? { matmulKernel: true } : {}),
    ...(c.precision !== 'bf16' && c.matmulKernelF32 ? { matmulKernelF32: true } : {}),
    ...(c.packedMatrices.length ? { packedMatrices: c.packedMatrices } : {}),
    // Every pass says whether its readouts need the vocabulary's log-normalizer (run-plan.ts, normalizeOf).
    normalizeInput: true,
    ...(c.prefixAttention.kind !== 'joint' ? { prefixAttention: c.prefixAttention } : {}),
    ...(c.causalAttention.kind !== 'square' ? { causalAttention: c.causalAttention } : {}),
  };
  switch (key.program) {
    case 'decoder_fused':
      return decoderFused(
        config,
        { groups: key.groups, prefix: key.prefix, items: key.items, itemLength: key.itemLength, labels: key.labels },
        options,
      );
    case 'decoder_prefill':
      return decoderPrefill(config, { prefix: key.prefix, labels: key.labels }, options);
    case 'decoder_extend':
      return decoderExtend(
        config,
        { prefix: key.prefix, items: key.items, itemLength: key.itemLength, labels: key.labels },
        options,
      );
  }
}

/** The JIT cache's dims of a program key (one-letter names, stable since the first disk caches: G only when > 1). */
function jitDims(key: ProgramKey): Record<string, number> {
  if (key.program === 'decoder_prefill') return { P: key.prefix, B: key.labels };
  const dims: Record<string, number> = { P: key.prefix, N: key.items, L: key.itemLength, B: key.labels };
  if (key.program === 'decoder_fused' && key.groups > 1) dims.G = key.groups;
  return dims;
}

export class DecoderRunner {
  readonly jit: JitCache<Executable>;
  private readonly modelId: string;
  private readonly choices: Omit<ProgramChoices, keyof AttentionForms>;
  private executed = 0;

  constructor(
    readonly client: Client,
    readonly config: ModelConfig,
    private readonly weights: DeviceWeights,
    modelId: string,
    readonly precision: Precision,
    jitOptions: JitCacheOptions<Executable> = {},
    readonly attention: ProgramForms = DEFAULT_ATTENTION_FORMS,
  ) {
    // Programs of another precision, weight type, bf16 typing or attention form are other programs: the
    // in-memory key says so (the disk key hashes the text); the forms are each pass's (key()).
    const bf16Typed = weights.weightType === 'bf16' && weights.bf16Matrices === 'bf16';
    const bf16Products = precision === 'bf16' && attention.bf16Products === true;
    const matmulKernel = precision === 'bf16' && attention.matmulKernel === true;
    const matmulKernelF32 = precision !== 'bf16' && attention.matmulKernelF32 === true;
    const tags = [
      ...(precision === 'highest' ? [] : [precision]),
      ...(weights.weightType === 'f32' ? [] : [`w${weights.weightType}`]),
      ...(bf16Typed ? ['mbf16'] : []),
      ...(bf16Products ? ['pbf16'] : []),
      ...(matmulKernel ? ['mmk'] : []),
      ...(matmulKernelF32 ? ['mmkf'] : []),
    ];
    this.modelId = [modelId, ...tags].join('-');
    // Packed matrices are declared in the form the programs' kernel reads for this weight type: the weights must hold
    // that form.
    const form = packedForm({
      dotOperands: matmulKernel ? 'bf16' : undefined,
      matmulKernel,
      matmulKernelF32,
      weights: weights.weightType,
    });
    if (weights.packed.length && weights.packedFor !== form) {
      const runs = matmulKernel ? 'the bf16 matmul kernel' : matmulKernelF32 ? 'the f32 matmul kernel' : "XLA's dots";
      const reads = form ? `, which reads ${weights.weightType} weights packed as ${form}` : '';
      throw new Error(
        `DecoderRunner: the weights hold ${weights.packed.join(', ')} packed as ${weights.packedFor}, ` +
          `but precision ${precision} runs ${runs}${reads}`,
      );
    }
    this.choices = {
      precision,
      weights: weights.weightType,
      bf16Matrices: weights.bf16Matrices,
      bf16Products,
      matmulKernel,
      matmulKernelF32,
      packedMatrices: weights.packed,
    };
    this.jit = new JitCache(clientCompiler(client, { xlaOptions: attention.xlaOptions }), {
      maxEntries: DEFAULT_JIT_CACHE_ENTRIES,
      ...jitOptions,
    });
  }

  /** The attention forms a program runs: the form chooser's for its pass (attention-forms.ts). */
  forms(program: ProgramKey): AttentionForms {
    return passAttention(this.attention, program.program === 'decoder_fused' ? program.groups : 1);
  }

  key(program: ProgramKey): JitKey {
    const { prefixAttention, causalAttention } = this.forms(program);
    const tags = [
      ...(prefixAttention.kind === 'joint' ? [] : [prefixAttentionTag(prefixAttention)]),
      ...(causalAttention.kind === 'square' ? [] : [causalAttentionNameTag(causalAttention)]),
    ];
    return { program: program.program, model: [this.modelId, ...tags].join('-'), dims: jitDims(program) };
  }

  /** The program text of a key (for warmup and the debug dump). */
  source(program: ProgramKey): () => string {
    return () => buildProgram(this.config, program, { ...this.choices, ...this.forms(program) }).text;
  }

  /**
   * Executes `program` with `args` followed by the model weights. Host inputs are
   * uploaded and freed here; returned buffers belong to the caller. `onPass`
   * is told of the pass when it ends (its program, upload and execution times).
   */
  async run(program: ProgramKey, args: readonly ProgramArg[], onPass?: PassObserver): Promise<DeviceBuffer[]> {
    return this.jit.use(this.key(program), this.source(program), async (executable) => {
      const startMs = performance.now();
      // The host inputs go up together (each upload is its own trip to a
      // worker thread and the device); every one that arrived is freed after
      // the execution, or at once when another failed.
      const settled = await Promise.allSettled(
        args.map((arg) => (arg instanceof DeviceBuffer ? arg : this.client.upload(arg.data, arg.dims, arg.dtype))),
      );
      const uploaded = settled.flatMap((s, i) =>
        s.status === 'fulfilled' && !(args[i] instanceof DeviceBuffer) ? [s.value] : [],
      );
      try {
        const buffers = settled.map((s) => {
          if (s.status === 'rejected') throw s.reason;
          return s.value;
        });
        this.executed++;
        const out = await executable.execute([...buffers, ...this.weights.buffers]);
        onPass?.({ program: program.program, startMs, endMs: performance.now() });
        return out;
      } finally {
        uploaded.forEach((b) => b.dispose());
      }
    });
  }

  /** Program executions started (every device pass). */
  get executions(): number {
    return this.executed;
  }

  dispose(): void {
    this.jit.dispose();
  }
}
