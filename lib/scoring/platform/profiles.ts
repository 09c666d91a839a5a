/**
 * The platform profiles: the facts that differ by platform, one profile per
 * platform, keyed by the platform the plugin reports (docs/design.md "Platforms and precision"),
 * each with where it was measured: the per-pass memory budget, the cost model's constants, the
 * default attention forms, the ladder rungs, how bf16 is typed, the XLA options and the rule of
 * precision 'auto'. The weight-type rule is device-weights/choose.ts's (that room may not import
 * this one). A platform with no
 * entry gets the CPU's facts and is told so in the load log. On the CPU the
 * budget and cost constants are further keyed by what the CPU can do (its
 * class: the attention kernels' instruction set, native/kernels/kernel_isa.h), not
 * by the platform name alone.
 */
import type { KernelIsa } from '../../runtime/kernel-paths';
import type { XlaOptions } from '../../runtime/xla-options';
import type { Bf16Matrices, CausalAttention, PrefixAttention } from '../../hlo';

/** The per-pass memory budget a plan keeps (planning/plan.ts). */
export interface Budget {
  /** Most item token rows in one pass (activations scale with it; a fused pass adds the query's rows). */
  readonly tokensPerPass: number;
  /** Most bytes of attention scores in one pass (heads x rows x keys x 4). */
  readonly scoreBytesPerPass: number;
  /**
   * Most token rows, queries and items together, in one cross-request pass
   * (planning/batch-plan.ts): G queries are G times the query's rows, which a
   * one-request pass does not count.
   */
  readonly batchRowsPerPass: number;
}

/** The cost model's measured constants (scripts/bench/fit-cost-model.js prints them for a machine). */
export interface CostConstants {
  /** Attention FLOPs cost this many projection/MLP FLOPs. */
  readonly keyWeight: number;
  /** Fixed cost of one execution, in projection/MLP FLOP-equivalents. */
  readonly flopsPerPass: number;
}

export interface PlatformFacts {
  readonly platform: string;
  readonly budget: Budget;
  readonly cost: CostConstants;
  /** How item tokens attend over the prefix keys (lib/hlo/attention/prefix.ts). */
  readonly prefixAttention: PrefixAttention;
  /**
   * The form to use instead where the runtime registered the addon's fused kernel with this
   * plugin (Client.prefixAttentionKernel); absent: prefixAttention everywhere.
   */
  readonly prefixAttentionWithKernel?: PrefixAttention;
  /** How the query attends causally to itself (lib/hlo/attention/causal.ts). */
  readonly causalAttention: CausalAttention;
  /** As prefixAttentionWithKernel, for the causal attention (the same registration covers both kernels). */
  readonly causalAttentionWithKernel?: CausalAttention;
  /**
   * The forms to use instead under bf16 dots where the loaded plugin is the release the cuDNN
   * calls are pinned to (lib/hlo/attention/cudnn-call.ts): cuDNN's flash attention takes bf16 q, k
   * and v, so it never stands in for the f32 attention of 'highest' or 'default'.
   */
  readonly prefixAttentionWithCudnn?: PrefixAttention;
  readonly causalAttentionWithCudnn?: CausalAttention;
  /**
   * Extra rungs of the item-count ladder between powers of two (planning/ladders.ts): a
   * padded item row costs as much as a real one, and finer rungs mean more programs to compile.
   */
  readonly countSteps: readonly number[];
  /**
   * Extra rungs of the query-length ladder between powers of two (align 4, as the item lengths; planning/ladders.ts):
   * every padded query row is computed like a real one, in every pass of a packed plan and in the prefill.
   */
  readonly queryTokenSteps: readonly number[];
  /**
   * Extra rungs of the item-length ladder between powers of two (align 4; planning/ladders.ts): every
   * padded token of an item row is computed like a real one, in every extend or packed pass.
   */
  readonly itemTokenSteps: readonly number[];
  /**
   * How bf16 matrices are typed on the device (lib/hlo/decoder/layout.ts, Bf16Matrices): u16 bits
   * widened per layer, or bf16 that goes into bf16 dots as it is. PJRT_SCORE_PLATFORM_FACTS overrides it
   * (override.ts).
   */
  readonly bf16Matrices: Bf16Matrices;
  /**
   * Under bf16 dots, the q|k|v and gate|up projections return bf16 products (lib/hlo/decoder/options.ts,
   * DecoderOptions.bf16Products). PJRT_SCORE_PLATFORM_FACTS overrides it (override.ts).
   */
  readonly bf16Products: boolean;
  /**
   * Under bf16 dots, the layers' projections run through the addon's bf16 matmul kernel
   * (lib/hlo/nn/matmul-kernel.ts; DecoderOptions.matmulKernel) where the runtime registered the addon's
   * kernels: on the CPU classes with bf16 dot units. PJRT_SCORE_PLATFORM_FACTS overrides it (override.ts).
   */
  readonly matmulKernel: boolean;
  /**
   * Under f32 dots, the layers' projections of f32 weights run through the addon's f32 matmul kernel
   * (lib/hlo/nn/matmul-kernel.ts, matmulF32Kernel; DecoderOptions.matmulKernelF32) where the runtime
   * registered the addon's kernels: on the CPU classes where it was measured to pay.
   * PJRT_SCORE_PLATFORM_FACTS overrides it (override.ts).
   */
  readonly matmulKernelF32: boolean;
  /**
   * XLA options every program of a Scorer compiles with on this platform (docs/gpu.md, 'XLA options'),
   * under the Scorer's own xlaOptions. PJRT_SCORE_PLATFORM_FACTS overrides it (override.ts).
   */
  readonly xlaOptions: XlaOptions;
  /** The facts PJRT_SCORE_PLATFORM_FACTS set (override.ts); absent when it set none. */
  readonly overridden?: readonly (
    | 'bf16Matrices'
    | 'bf16Products'
    | 'matmulKernel'
    | 'matmulKernelF32'
    | 'countSteps'
    | 'queryTokenSteps'
    | 'itemTokenSteps'
    | 'xlaOptions'
  )[];
  /**
   * What precision 'auto' resolves to (precision-choice.ts; docs/design.md, 'The default precision'), with
   * what showed it: `bf16` for every checkpoint; `bf16-checkpoints`: bf16 for a checkpoint stored in 16 bits
   * (bf16, f16), true f32 for one stored in f32 or quantized; `highest` everywhere.
   */
  readonly autoPrecision: { readonly rule: 'bf16' | 'bf16-checkpoints' | 'highest'; readonly why: string };
  /** Where and how each fact was measured; `unmeasured` names what was not. */
  readonly measured: string;
  /** False when the platform has no entry and these are the CPU's facts. */
  readonly known: boolean;
  /** On the CPU: the class these facts are for (what the CPU can do), and whether that class was measured. */
  readonly cpuClass?: { readonly isa: KernelIsa; readonly measured: boolean };
}

/** Budget and cost constants per CPU class; `measured` says where, or that the class borrows another's. */
interface CpuClassFacts {
  readonly budget: Budget;
  readonly cost: CostConstants;
  readonly measured: string | null;
  /** The class has bf16 dot units the addon's matmul kernel runs on (PlatformFacts.matmulKernel). */
  readonly matmulKernel?: boolean;
  /** The addon's f32 matmul kernel pays on the class (PlatformFacts.matmulKernelF32). */
  readonly matmulKernelF32?: boolean;
  /** What precision 'auto' resolves to on the class (PlatformFacts.autoPrecision); default the CPU's. */
  readonly autoPrecision?: PlatformFacts['autoPrecision'];
}

const AVX2_FACTS: CpuClassFacts = {
  // Item rows per pass: the best chunk of the bench's chunk sweep (64 items of 20 tokens; docs/performance.md,
  // 'Pass size and buckets'). Rows of a cross-request pass: 4 groups of the PR shape (300-token query, 10 items
  // of 20 tokens, 560 rows each), where scripts/bench/batching.js stopped gaining (docs/performance.md,
  // 'Cross-request batching').
  budget: { tokensPerPass: 1536, scoreBytesPerPass: 256 * 2 ** 20, batchRowsPerPass: 2560 },
  // The fit of scripts/bench/fit-cost-model.js on a 2-core AMD EPYC Zen 3 (docs/performance.md, 'The cost
  // model'; bench-results/cost-model.json): keyWeight is its key-FLOP coefficient over its row-FLOP one,
  // flopsPerPass its per-pass seconds in row FLOPs.
  cost: { keyWeight: 1.405, flopsPerPass: 1.45e10 },
  measured:
    'AVX2 (AMD EPYC Zen 3, 2 cores): budget by npm run bench chunk sweep, cost by scripts/bench/fit-cost-model.js',
};

const AVX512BF16_FACTS: CpuClassFacts = {
  // Twice AVX2's item rows per pass: with the item-length rungs in eighths, faster than AVX2's budget on every
  // shape of the shapes table on a 2-core AMD EPYC Zen 4, and no larger budget faster (docs/performance.md,
  // 'Pass size and buckets'). The cost constants are AVX2's (not fitted here).
  budget: { ...AVX2_FACTS.budget, tokensPerPass: 3072 },
  cost: AVX2_FACTS.cost,
  // Under bf16 dots the projections run through the addon's bf16 matmul kernel (lib/hlo/nn/matmul-kernel.ts),
  // the layers' RMSNorms and SwiGLU inside its calls: faster than XLA's bf16 dots on the Zen 4
  // (docs/performance.md, "The projections' kernels", has the A/Bs).
  matmulKernel: true,
  // Under true f32 dots, the projections through the addon's f32 matmul kernel (native/kernels/matmul_f32.h:
  // the attention kernels' AVX-512 tile over the stacked f32 weights where they lie): faster than XLA's f32
  // dots on the Zen 4 (docs/performance.md, "The projections' kernels").
  matmulKernelF32: true,
  // bf16 for 16-bit checkpoints (docs/design.md, 'The default precision'): bf16 dots through the bf16 matmul
  // kernel ran ahead of true f32 through the f32 one on every shape of the README's table (bench-results/
  // shapes.json, a Zen 4), within the accuracy gate (test/precision.test.js); the Qwen3-0.6B shape:
  // bench-results/models.json.
  autoPrecision: {
    rule: 'bf16-checkpoints',
    why:
      "the bf16 matmul kernel on this CPU's bf16 dot units ran the PR " +
      'shape at 1.64x true f32 on an AMD EPYC Zen 4, within the accuracy gate',
  },
  measured: "AVX-512 bf16 (AMD EPYC Zen 4, 2 cores): budget by scripts/bench/variants.js; cost constants AVX2's",
};

/**
 * AVX512_BF16 on an Intel CPU without AMX (Cooper Lake; Sapphire or Emerald Rapids where a VM hides AMX): two
 * 512-bit FMA ports do as many f32 FLOPs a cycle as vdpbf16ps does bf16 ones, so bf16 dots gain nothing there:
 * 'auto' runs true f32, through the f32 kernel on its packed panels (faster than XLA's f32 dots there too).
 * The rule, from family 6 model 207 (2 cores, KVM): the bench's roofs bf16 164, f32 322 GFLOP/s; the Qwen3-0.6B
 * PR request: XLA's f32 dots 0.77x the time of the bf16 kernel's, the f32 kernel 0.81-0.92x XLA's f32 dots'
 * (docs/performance.md, 'By model' and 'The projections' kernels'). Under precision 'bf16' the bf16 kernel
 * still runs: XLA's own bf16 dots were slower there (docs/performance.md, 'Long items, and the kernel's paths
 * by CPU class').
 */
const INTEL_AVX512BF16_FACTS: CpuClassFacts = {
  ...AVX512BF16_FACTS,
  autoPrecision: {
    rule: 'highest',
    why:
      'on an Intel CPU without AMX bf16 dots do no more work a cycle than f32 ones: ' +
      "npm run bench's bf16 roof there is half its f32 one (164 against 322 GFLOP/s)",
  },
  measured:
    'AVX-512 bf16 on Intel without AMX (family 6 model 207, 2 cores): ' +
    "the matmul kernels and 'auto' by npm run bench's models section; budget and cost constants the AMD class's",
};

/**
 * The CPU classes. AVX2 and AVX-512 bf16 have been measured; the others borrow AVX2's facts until
 * scripts/bench/fit-cost-model.js and the bench's chunk sweep run on such a CPU
 * (the load log says which class borrowed). Portable: a CPU without AVX2.
 */
const CPU_CLASS_FACTS: Readonly<Record<KernelIsa, CpuClassFacts>> = {
  portable: { ...AVX2_FACTS, measured: null },
  avx2: AVX2_FACTS,
  avx512: { ...AVX2_FACTS, measured: null },
  avx512bf16: AVX512BF16_FACTS,
  // No matmul kernel: it runs on vdpbf16ps, and XLA's bf16 dots run on the AMX tiles there (never measured
  // against each other on an AMX CPU).
  amx: { ...AVX2_FACTS, measured: null },
};

/** The CPUs whose class facts differ by vendor: CPUID's vendor and class -> their facts. */
const VENDOR_CLASS_FACTS: Readonly<Record<string, Partial<Record<KernelIsa, CpuClassFacts>>>> = {
  GenuineIntel: { avx512bf16: INTEL_AVX512BF16_FACTS },
};

const FACTS: Readonly<Record<string, PlatformFacts>> = {
  cpu: {
    platform: 'cpu',
    budget: AVX2_FACTS.budget,
    cost: AVX2_FACTS.cost,
    // Without the kernel: the joint softmax shifted by the own keys' max, its denominator from a ones column
    // in the values (lib/hlo/attention/prefix-rows.ts, `ones_own`), the fastest StableHLO form measured
    // (docs/performance.md, 'Items over the prefix').
    prefixAttention: { kind: 'rows' },
    // The addon's fused kernel (native/kernels/prefix_attention.cc, tag `ffi`) where the plugin registered it:
    // faster than `ones_own` per extend pass and on the target workload (docs/performance.md, 'Items over the
    // prefix').
    prefixAttentionWithKernel: { kind: 'kernel' },
    // Query rows in 4 chunks, each against the keys it sees
    // (docs/performance.md, 'The prefill: query chunks, then the kernel').
    causalAttention: { kind: 'chunked', queryChunks: 4 },
    // The addon's kernel (tag `ffi`, lib/hlo/attention/causal-kernel.ts) where the plugin registered it: faster
    // than `qc4` per prefill, with less peak memory (docs/performance.md, 'The prefill: query chunks, then the
    // kernel').
    causalAttentionWithKernel: { kind: 'kernel' },
    // 1, 2, ..., 8, 10, 12, 14, 16, 20, ...: at most 1.25x the items, one padded item at most up to 16: SGLang's
    // PR shape (10 items) pads no item (docs/performance.md, 'Small requests').
    countSteps: [1.25, 1.5, 1.75],
    // The item lengths' rungs (..., 256, 320, 384, ...). Finer rungs save a few percent of the PR shape's rows
    // but multiply the programs mixed traffic compiles: a knob for fixed-shape traffic
    // (PJRT_SCORE_PLATFORM_FACTS queryTokenSteps), not the default (docs/performance.md, 'Small requests').
    queryTokenSteps: [1.25, 1.5, 1.75],
    // Eighths (..., 64, 72, 80, ..., 120, 128, 144, ...; up to 32 tokens the alignment of 4 decides): 100-token
    // items pad to 104, not 112. Faster on the long-item shapes (docs/performance.md, 'Pass size and buckets');
    // more programs only where items are longer than 32 tokens and vary in length.
    itemTokenSteps: [1.125, 1.25, 1.375, 1.5, 1.625, 1.75, 1.875],
    // XLA CPU computes bf16 ops in f32 (whole stacked arrays converted at each execution when they were typed
    // bf16) and runs bf16 elementwise work slowly: u16 bits, widened per layer slice, and f32 products.
    bf16Matrices: 'u16',
    bf16Products: false,
    // Only on the CPU classes with bf16 dot units (CPU_CLASS_FACTS): elsewhere the kernel's portable loop.
    matmulKernel: false,
    // Only on the CPU classes where it was timed (CPU_CLASS_FACTS).
    matmulKernelF32: false,
    xlaOptions: {},
    // bf16 dots only on the CPU classes where they were measured to pay (CPU_CLASS_FACTS).
    autoPrecision: { rule: 'highest', why: 'bf16 dots were not measured to pay on this CPU class' },
    measured:
      'AMD EPYC, 2 cores, XLA CPU plugin 0.0.1: budget by npm run bench chunk sweep, ' +
      'cost by scripts/bench/fit-cost-model.js, attention forms by npm run bench:pieces --forms/--causal-forms',
    known: true,
  },
  cuda: {
    platform: 'cuda',
    // A larger pass than the CPU's: faster on the target workload on an H100 (docs/performance.md, 'Pass size
    // and buckets').
    // Cross-request passes: as many rows as a one-request pass (not measured on its own yet).
    budget: { tokensPerPass: 16384, scoreBytesPerPass: 4 * 2 ** 30, batchRowsPerPass: 16384 },
    // Not fitted on a GPU yet: the CPU's constants (AVX2's fit), which overstate the per-pass cost there.
    cost: AVX2_FACTS.cost,
    // Under 'highest' and 'default' (true f32 or TF32): the forms every plugin runs.
    prefixAttention: { kind: 'joint' },
    causalAttention: { kind: 'square' },
    // Under bf16 dots, with the pinned plugin: cuDNN's fused attention. A pass puts its prefill rows and
    // its item rows against the prefix keys into one padding-causal call (the groups of a cross-request
    // pass its batch), then the items' own keys in a second (`cudnn_join`): the fastest of the forms
    // measured on an H100, on the target and PR workloads (docs/gpu.md, 'Fused attention through cuDNN'
    // and 'Measured').
    prefixAttentionWithCudnn: { kind: 'cudnn', joinPrefill: true },
    causalAttentionWithCudnn: { kind: 'cudnn' },
    // 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, ...: at most 1.25x the items (10 items pad to 10,
    // not 12), as on the CPU.
    countSteps: [1.25, 1.5, 1.75],
    // Compiles are slow there and a padded row costs little: the item-length ladder's rungs.
    queryTokenSteps: [1.25, 1.5, 1.75],
    itemTokenSteps: [1.25, 1.5, 1.75],
    // Typed bf16 and bf16 products remove the per-layer widening kernel and the f32 gate|up product read back
    // to be rounded that the H200's kernel profile showed; faster on the H100 on the target and PR workloads
    // (docs/gpu.md, 'Options that matter there').
    bf16Matrices: 'bf16',
    bf16Products: true,
    // The addon's kernels are the CPU's.
    matmulKernel: false,
    matmulKernelF32: false,
    // XLA keeps the bf16 roundings the programs ask for instead of computing through them in f32 (the
    // programs then mean what they say); with today's forms it measured alike with and without on an H100
    // (docs/gpu.md, 'Options that matter there').
    xlaOptions: { xla_allow_excess_precision: false },
    // NVIDIA tensor cores (docs/gpu.md, 'Measured').
    autoPrecision: {
      rule: 'bf16',
      why:
        'NVIDIA tensor cores: bf16 dots ran the target workload at 3.7x true f32 on an H100 (4,128 against ' +
        '1,117 items/s), within the accuracy gate against PyTorch f32 (max 1.2e-2, mean 2.5e-3 over 500 items)',
    },
    measured:
      'NVIDIA H100 (jax-cuda13-pjrt 0.11.2): budget, attention forms, bf16 typing and count ladder ' +
      'measured on the target and PR workloads (docs/gpu.md); cost constants unmeasured (the CPU fit)',
    known: true,
  },
};

/**
 * The share of the device's memory one pass's attention scores may take.
 * The scores are the largest tensor of a pass (planning/plan.ts, Budget); the rest of
 * the device holds the weights, the prefix cache and the other activations.
 */
export const SCORE_SHARE_OF_DEVICE_MEMORY = 1 / 16;

/** The smallest budget a small device gets: one pass still holds a 256-token item and its scores. */
const MIN_BUDGET: Budget = { tokensPerPass: 256, scoreBytesPerPass: 16 * 2 ** 20, batchRowsPerPass: 256 };

/**
 * The platform's measured budget, shrunk to fit a device with `memoryBytes`
 * (the plugin's memory limit, or the host's memory on the CPU): when a
 * sixteenth of the memory is less than the measured score bytes, all three
 * limits scale down by the same factor, never below MIN_BUDGET. A device
 * with memory to spare keeps the measured budget: larger passes were not
 * measured to pay.
 */
export function budgetForMemory(measured: Budget, memoryBytes: number): Budget {
  if (!(Number.isFinite(memoryBytes) && memoryBytes > 0)) return measured;
  const factor = Math.min(1, (memoryBytes * SCORE_SHARE_OF_DEVICE_MEMORY) / measured.scoreBytesPerPass);
  const scaled = (key: keyof Budget): number => Math.max(MIN_BUDGET[key], Math.floor(measured[key] * factor));
  return {
    tokensPerPass: scaled('tokensPerPass'),
    scoreBytesPerPass: scaled('scoreBytesPerPass'),
    batchRowsPerPass: scaled('batchRowsPerPass'),
  };
}

/**
 * The facts of a platform (its lower-cased name as the plugin reports it); the CPU's when there is no
 * entry. On the CPU, `cpuClass` (the attention kernels' instruction set on this CPU, null where unknown)
 * picks the budget, cost constants, matmul kernels and 'auto' rule of that class, and `cpuVendor` (CPUID's,
 * hostCpu().vendor) those of a vendor whose CPUs of the class differ (VENDOR_CLASS_FACTS).
 */
export function platformFacts(
  platform: string,
  cpuClass: KernelIsa | null = null,
  cpuVendor: string | null = null,
): PlatformFacts {
  const entry = FACTS[platform.toLowerCase()];
  if (!entry) return { ...FACTS.cpu, platform, known: false };
  if (entry.platform !== 'cpu' || cpuClass === null) return entry;
  const cls = (cpuVendor !== null ? VENDOR_CLASS_FACTS[cpuVendor]?.[cpuClass] : undefined) ?? CPU_CLASS_FACTS[cpuClass];
  const measured = cls.measured ?? `${cpuClass}: not measured on this CPU class, the facts of ${AVX2_FACTS.measured}`;
  return {
    ...entry,
    budget: cls.budget,
    cost: cls.cost,
    matmulKernel: cls.matmulKernel ?? entry.matmulKernel,
    matmulKernelF32: cls.matmulKernelF32 ?? entry.matmulKernelF32,
    autoPrecision: cls.autoPrecision ?? entry.autoPrecision,
    measured: `${measured}; ${entry.measured}`,
    cpuClass: { isa: cpuClass, measured: cls.measured !== null },
  };
}

/**
 * What picks a platform's default attention forms: the addon's kernels registered, cuDNN's calls usable (bf16 dots, the
 * pinned plugin).
 */
interface FormsAvailable {
  readonly kernel: boolean;
  readonly cudnn: boolean;
}

/** The prefix-attention form a Scorer uses by default on this platform. */
export function defaultPrefixAttention(facts: PlatformFacts, available: FormsAvailable): PrefixAttention {
  if (available.cudnn && facts.prefixAttentionWithCudnn) return facts.prefixAttentionWithCudnn;
  return available.kernel && facts.prefixAttentionWithKernel ? facts.prefixAttentionWithKernel : facts.prefixAttention;
}

/** The causal-attention form a Scorer uses by default on this platform. */
export function defaultCausalAttention(facts: PlatformFacts, available: FormsAvailable): CausalAttention {
  if (available.cudnn && facts.causalAttentionWithCudnn) return facts.causalAttentionWithCudnn;
  return available.kernel && facts.causalAttentionWithKernel ? facts.causalAttentionWithKernel : facts.causalAttention;
}
