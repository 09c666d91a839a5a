/**
 * The Scorer's setup, decided without a device: from its options, the
 * platform's facts and the model's config and stored type, the bucket
 * ladders, the pass budget, the cost model, the precision, the weight type
 * and the matrices packed for the matmul kernel, and the attention forms a
 * Scorer plans and runs with (docs/design.md, "Rooms": the facade over a pure
 * setup step and a turn executor). load.ts runs it once, before the upload,
 * and hands it to the Scorer; test/scorer-setup.test.js runs it with no device.
 */
import type { ModelConfig } from '../model/config';
import type { KernelPaths } from '../runtime/kernel-paths';
import { checkXlaOptions, XlaOptions } from '../runtime/xla-options';
import {
  CausalAttention,
  checkCausalAttention,
  checkPrefixAttention,
  kernelMatrices,
  KernelMatrixName,
  PackedFor,
  packedForm,
  PrefixAttention,
} from '../hlo';
import { chooseWeightType, WeightChoice, WeightTypeChoice } from '../device-weights/choose';
import { AttentionPair, modelAttention } from './platform/attention-forms';
import { scorerLadders } from './planning/ladders';
import type { Ladders, Sizing } from './planning/plan';
import { costModelFor, CostModel } from './planning/selector';
import {
  budgetForMemory,
  Budget,
  defaultCausalAttention,
  defaultPrefixAttention,
  platformFacts,
  PlatformFacts,
} from './platform/profiles';
import { PlatformFactsOverride, withOverride } from './platform/override';
import {
  bf16DotsByKernel,
  f32DotsByKernel,
  PrecisionChoice,
  PrecisionOption,
  resolvePrecision,
} from './platform/precision-choice';
import type { StoredMatrixType } from '../model/load';
import { isCudnnPinnedPlugin, pinCudnnForm, unpinnedPluginNote } from './platform/cudnn-pin';
import { pickSettings, SCORER_SETTINGS, ScorerSettings, settingDefaults } from './options';
import type { Bf16Typing, ScorerOptions } from './scorer-types';
import type { Client } from '../runtime/client';
import type { DeviceWeights } from '../device-weights/upload';
import type { Tokenizer } from '../model/tokenizer';

type LoadSettings = Required<Omit<ScorerSettings, 'model' | 'plugin' | 'rerankTemplate'>> & ScorerSettings;

/**
 * Scorer.load's options, checked in one place before anything loads (a
 * TypeError naming the option): the settings-table options by their rows,
 * with the table's defaults, and the library's own.
 */
export function checkScorerOptions(options: ScorerOptions): LoadSettings {
  if (options === null || typeof options !== 'object') throw new TypeError('Scorer.load() takes an options object');
  // A template object is the library's own (checked when it is resolved); a name is checked against the built-in ones.
  const picked = pickSettings(
    SCORER_SETTINGS,
    options,
    (s) => s.key === 'rerankTemplate' && typeof options.rerankTemplate === 'object',
  );
  try {
    if (options.prefixAttention !== undefined) checkPrefixAttention(options.prefixAttention);
    if (options.causalAttention !== undefined) checkCausalAttention(options.causalAttention);
    if (options.xlaOptions !== undefined) checkXlaOptions(options.xlaOptions);
  } catch (err) {
    throw new TypeError((err as Error).message, { cause: err });
  }
  return { ...settingDefaults(SCORER_SETTINGS), ...picked };
}

/** What the setup reads of the loaded plugin (a Client's fields; no device call). */
interface PluginFacts {
  /** client.platformName: 'cpu', 'cuda', ... */
  readonly platformName: string;
  /** client.pluginPath: the CUDA plugin's wheel version is read beside it (cudnn-pin.ts). */
  readonly pluginPath: string;
  /** client.prefixAttentionKernel: the plugin registered the addon's attention kernels. */
  readonly prefixAttentionKernel: boolean;
  /** client.deviceMemoryBytes: the budget shrinks to fit it. */
  readonly deviceMemoryBytes: number;
}

/**
 * The attention forms asked for, bound to the loaded plugin: the `kernel` forms call the addon's kernels,
 * which only a plugin that registered them can run; the `cudnn` forms get the loaded plugin's version
 * written in, or are refused (cudnn-pin.ts). A TypeError before the weights upload.
 */
export function bindAttentionForms<T extends Pick<ScorerOptions, 'prefixAttention' | 'causalAttention'>>(
  options: T,
  plugin: PluginFacts,
): T {
  let bound = options;
  for (const option of ['prefixAttention', 'causalAttention'] as const) {
    const form = options[option];
    if (form?.kind === 'kernel' && !plugin.prefixAttentionKernel) {
      throw new TypeError(
        `${option} 'ffi' (the addon's fused kernel) needs a CPU plugin whose FFI extension registers handlers; ` +
          `platform ${plugin.platformName} has no such kernel`,
      );
    }
    if (form?.kind === 'cudnn')
      bound = { ...bound, [option]: pinCudnnForm(form, option, plugin.pluginPath, plugin.platformName) };
  }
  return bound;
}

interface SetupInput {
  readonly config: ModelConfig;
  /** The options, their attention forms bound to the plugin (bindAttentionForms). */
  readonly options: Pick<ScorerOptions, 'prefixAttention' | 'causalAttention' | 'budget' | 'batching' | 'xlaOptions'>;
  readonly precision: PrecisionOption;
  /** The weights option: a weight type, or 'auto' (device-weights/choose.ts). */
  readonly weights: WeightChoice;
  readonly plugin: PluginFacts;
  /** The attention kernels' paths for the model's head dim where the plugin registered them, else null. */
  readonly kernelPaths: KernelPaths | null;
  /** PJRT_SCORE_PLATFORM_FACTS, read at load (platform/override.ts). */
  readonly factsOverride: PlatformFactsOverride;
  /** How the checkpoint stores its matrices: what precision 'auto' follows on the CPU (precision-choice.ts). */
  readonly matrixType: StoredMatrixType;
  /**
   * CPUID's vendor of the host (hostCpu().vendor): some CPU classes' facts differ by vendor (profiles.ts); default
   * none.
   */
  readonly cpuVendor?: string | null;
}

/** What a Scorer plans and runs with, and what its load uploads: every decision of a load, made once. */
interface ScorerSetup {
  /** The platform's facts, of this CPU's class on the CPU, the override merged in. */
  readonly facts: PlatformFacts;
  readonly budget: Budget;
  readonly ladders: Ladders;
  readonly sizing: Sizing;
  readonly costModel: CostModel;
  readonly precisionChoice: PrecisionChoice;
  /** The weight type the load uploads, and why. */
  readonly weightChoice: WeightTypeChoice;
  /** The XLA options every program compiles with: the platform's, the xlaOptions option over them. */
  readonly xlaOptions: XlaOptions;
  readonly prefixAttention: PrefixAttention;
  readonly causalAttention: CausalAttention;
  /** The forms of a pass of several queries (a cross-request pass; platform/attention-forms.ts). */
  readonly grouped: AttentionPair;
  /**
   * Why the attention forms differ from the ones asked for (and, under cross-request batching, a shared pass's), or
   * undefined.
   */
  readonly attentionNote: string | undefined;
  /** How bf16 matrices and products are typed, and which matrices the load packs for the matmul kernel. */
  readonly bf16: Bf16Typing;
  /**
   * Which matmul kernel the layers' projections run through: the bf16 one (bf16.matmulKernel), the f32 one, or none
   * (XLA's dots).
   */
  readonly matmulKernel: 'bf16' | 'f32' | null;
  /** The layer matrices the load packs for that kernel, and the kernel's packed form (none without a kernel). */
  readonly packed: { readonly matrices: readonly KernelMatrixName[]; readonly for: PackedFor };
}

/**
 * The Scorer's setup: pure, given what the load read (the plugin's fields, the model's config and stored
 * type). The load runs it once, before the upload, and hands it to the Scorer (load.ts).
 */
export function scorerSetup(input: SetupInput): ScorerSetup {
  const { config, options, plugin } = input;
  const kernelPaths = plugin.prefixAttentionKernel ? input.kernelPaths : null;
  const facts = withOverride(
    platformFacts(plugin.platformName, kernelPaths?.tried ?? null, input.cpuVendor ?? null),
    input.factsOverride,
  );
  const budget: Budget = { ...budgetForMemory(facts.budget, plugin.deviceMemoryBytes), ...options.budget };
  const ladders = scorerLadders(config.contextLength, config.vocabSize, facts);
  const precisionChoice = resolvePrecision(input.precision, facts, kernelPaths, input.matrixType);
  const precision = precisionChoice.precision;
  // bf16 dots through the addon's matmul kernel (its matrices packed at load), and bf16 dots that read bf16 weights as
  // they lie: that kernel's on the CPU, every GPU's (device-weights/choose.ts keeps a bf16 checkpoint's bits there).
  const matmulKernel = precision === 'bf16' && bf16DotsByKernel(facts, kernelPaths);
  // f32 dots through the f32 kernel where the facts take it: it reads f32 weights, and bf16 ones widened exactly.
  const f32Kernel = precision !== 'bf16' && f32DotsByKernel(facts, kernelPaths);
  const bf16Dots = precision === 'bf16' && (matmulKernel || plugin.platformName !== 'cpu');
  // The f32 kernel takes every layer matrix (each MLP's activation its prologue), so it reads a bf16 checkpoint as it
  // lies.
  const weightChoice = chooseWeightType(input.weights, {
    platform: plugin.platformName,
    config,
    matrixType: input.matrixType,
    readsBf16: bf16Dots || f32Kernel,
  });
  const weightType = weightChoice.weightType;
  // The matrices the bf16 kernel reads, stored packed for it (the decoder's
  // kernelMatrices: the load packs them, the programs declare them).
  const packedMatrices = matmulKernel
    ? kernelMatrices({
        dotOperands: 'bf16',
        matmulKernel: true,
        bf16Products: facts.bf16Products,
        weights: weightType,
      })
    : [];
  // The f32 kernel's matrices (not int8), packed at load into panels it streams from the cache: f32 panels of f32
  // weights, a bf16 checkpoint's pairs as they lie (the decoder's packedForm).
  const f32Options = { matmulKernelF32: true, weights: weightType } as const;
  const f32Packed = f32Kernel ? kernelMatrices(f32Options) : [];
  // The platform's default forms; cuDNN's (bf16 q, k, v) only under bf16 dots with the pinned plugin.
  const { pluginPath, platformName } = plugin;
  const pinned = isCudnnPinnedPlugin(pluginPath, platformName);
  const available = { kernel: plugin.prefixAttentionKernel, cudnn: precision === 'bf16' && pinned };
  const cudnnMissed =
    precision === 'bf16' &&
    !pinned &&
    facts.prefixAttentionWithCudnn &&
    !options.prefixAttention &&
    !options.causalAttention
      ? unpinnedPluginNote(pluginPath)
      : undefined;
  const attention = modelAttention(
    config,
    {
      prefixAttention:
        options.prefixAttention ??
        pinCudnnForm(defaultPrefixAttention(facts, available), 'prefixAttention', pluginPath, platformName),
      causalAttention:
        options.causalAttention ??
        pinCudnnForm(defaultCausalAttention(facts, available), 'causalAttention', pluginPath, platformName),
    },
    facts,
  );
  return {
    facts,
    budget,
    ladders,
    sizing: { ladders, budget, numHeads: config.numHeads },
    costModel: costModelFor(config, facts.cost),
    precisionChoice,
    weightChoice,
    xlaOptions: Object.freeze({ ...facts.xlaOptions, ...options.xlaOptions }),
    prefixAttention: attention.prefixAttention,
    causalAttention: attention.causalAttention,
    grouped: attention.grouped,
    attentionNote:
      [attention.note, options.batching === 'cross-request' ? attention.groupedNote : undefined, cudnnMissed]
        .filter((n) => n !== undefined)
        .join('; ') || undefined,
    bf16: {
      matrices: weightType === 'bf16' ? facts.bf16Matrices : null,
      products: precision === 'bf16' && facts.bf16Products,
      // plugin.prefixAttentionKernel: the addon's kernels registered (every target it registers).
      matmulKernel,
      packedMatrices,
      ...(facts.overridden ? { overridden: facts.overridden } : {}),
    },
    matmulKernel: matmulKernel ? 'bf16' : f32Packed.length ? 'f32' : null,
    packed: matmulKernel
      ? { matrices: packedMatrices, for: 'bf16' }
      : { matrices: f32Packed, for: packedForm(f32Options) ?? 'f32' },
  };
}

/** What a load hands the Scorer it builds (load.ts): the loaded parts and the setup it uploaded them by. */
export interface LoadedParts {
  readonly modelName: string;
  readonly modelPath: string;
  /** The model file's stored tensor types. */
  readonly quantization: string;
  readonly config: ModelConfig;
  /** The model's tokenizer, built at its first call (and logged). */
  readonly tokenizer: () => Tokenizer;
  readonly client: Client;
  readonly weights: DeviceWeights;
  /** Every decision of the load, made once before the upload (setup.ts). */
  readonly setup: ScorerSetup;
  /** The options, their attention forms bound to the loaded plugin. */
  readonly options: ScorerOptions;
  readonly settings: LoadSettings;
  /** The attention kernels' paths where the plugin registered them, else null. */
  readonly kernelPaths: KernelPaths | null;
  /** performance.now() at the start of the load and once the model file was open. */
  readonly startedMs: number;
  readonly openedMs: number;
}
