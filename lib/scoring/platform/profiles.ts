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
   * Extra rungs of the query-length ladder between powers of two (align 4, as the item lengths; planning/ladders.ts): every
   * padded query row is computed like a real one, in every pass of a packed plan and in the prefill.
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
  readonly overridden?: readonly ('bf16Matrices' | 'bf16Products' | 'matmulKernel' | 'matmulKernelF32' | 'countSteps' | 'queryTokenSteps' | 'itemTokenSteps' | 'xlaOptions')[];
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
  // 1536 item rows per pass: 64 items of 20 tokens, the best chunk measured on a 2-core AMD EPYC
  // (items/s within 5% from 32 to 128 items per pass).
  // A cross-request pass of up to 2560 rows: 4 groups of a 300-token query with 10 items of 20 tokens
  // (560 rows each). scripts/bench/batching.js on the same machine, two runs at load 6-9: CPU time per
  // item 7-18% below a request alone at G = 2 to 6, and no better at G = 8 (docs/performance.md).
  budget: { tokensPerPass: 1536, scoreBytesPerPass: 256 * 2 ** 20, batchRowsPerPass: 2560 },
  // Fitted on a 2-core AMD EPYC by scripts/bench/fit-cost-model.js over 20 requests of 8 shapes and 3 plans
  // (largest error 24%): attention FLOPs cost 1.4x projection FLOPs; a pass costs ~48 ms of fixed work.
  cost: { keyWeight: 1.405, flopsPerPass: 1.45e10 },
  measured: 'AVX2 (AMD EPYC Zen 3, 2 cores): budget by npm run bench chunk sweep, cost by scripts/bench/fit-cost-model.js',
};

const AVX512BF16_FACTS: CpuClassFacts = {
  // 3072 item rows per pass: on a 2-core AMD EPYC Zen 4 (avx512_bf16), with the item-length rungs in eighths,
  // 0.87-0.89x the wall time of 1536 rows on the old rungs for 100 items of 100 tokens in bf16 and f32 (extend
  // passes of 28, 28, 28 and 16 items, not eight of 12 and one of 4), 0.94x on the target's 500 items, 0.96x
  // on RAG's 20 x 500, and no larger gain at 4608 (scripts/bench/variants.js, 3 rounds alternating, quiet;
  // docs/performance.md, 'Pass size and buckets').
  // The cost constants are AVX2's (not fitted here).
  budget: { ...AVX2_FACTS.budget, tokensPerPass: 3072 },
  cost: AVX2_FACTS.cost,
  // The projections through the addon's bf16 matmul kernel (lib/hlo/nn/matmul-kernel.ts), the layers'
  // RMSNorms and SwiGLU inside its calls: on the same Zen 4, the PR shape (300 / 10 x 20) in bf16 at 0.781x
  // the wall time of XLA's bf16 dots (455 against 618 ms, 5 rounds), 100 items of 100 tokens at 0.918x
  // (3 rounds) (scripts/bench/variants.js, alternating in one process; docs/performance.md, "The
  // projections' kernels").
  matmulKernel: true,
  // Under true f32 dots, the projections through the addon's f32 matmul kernel (native/kernels/matmul_f32.h:
  // the attention kernels' 12 x 32 AVX-512 tile over the stacked f32 weights where they lie, the RMSNorms
  // and SwiGLU inside its calls): on the same Zen 4, the PR shape in f32 at 0.913x the wall time and 0.886x
  // the CPU time of XLA's f32 dots (652 against 715 ms, 9 rounds alternating in one process, load 1.6;
  // docs/performance.md, "The projections' kernels").
  matmulKernelF32: true,
  // bf16 dots through the bf16 matmul kernel against true f32 through the f32 one, the PR shape (300 / 10 x 20)
  // on SmolLM2: 0.365 against 0.599 s on a 2-core AMD EPYC Zen 4 (bench-results/shapes.json), within the
  // accuracy gate (test/precision.test.js); the Qwen3-0.6B shape: bench-results/models.json.
  autoPrecision: {
    rule: 'bf16-checkpoints',
    why: "the bf16 matmul kernel on this CPU's bf16 dot units ran the PR shape at 1.64x true f32 on an AMD EPYC Zen 4, within the accuracy gate",
  },
  measured: 'AVX-512 bf16 (AMD EPYC Zen 4, 2 cores): budget by scripts/bench/variants.js; cost constants AVX2\'s',
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

/** 1 + k/16 for k = 1..15: sixteen rungs per power of two. */

const FACTS: Readonly<Record<string, PlatformFacts>> = {
  cpu: {
    platform: 'cpu',
    budget: AVX2_FACTS.budget,
    cost: AVX2_FACTS.cost,
    // The joint softmax shifted by the own keys' max, its denominator from a ones column in the values
    // (lib/hlo/attention/prefix-rows.ts, `ones_own`): on a 2-core AMD EPYC Zen 3 (AVX2), 0.961x the joint
    // form's CPU time per extend pass (npm run bench:pieces --forms, 5 rounds alternating, load 2.3-2.8)
    // and 5% more items/s on the target workload (3 alternating pairs, 15.3-15.5 -> 16.0-16.3).
    // Key blocks with an online softmax (0.99-1.17x) and item-row chunks (1.04-1.13x) were no faster
    // there (docs/performance.md).
    prefixAttention: { kind: 'rows' },
    // The addon's fused kernel (native/kernels/prefix_attention.cc, tag `ffi`) where the plugin registered it: on
    // the same Zen 3, 0.891x `ones_own`'s CPU time per extend pass (median of 5 alternating rounds, load
    // 1.7-1.9; 92% of the roof against 77%) and 0.82-0.85x its CPU time on the target workload
    // (alternating pairs, load 1.4-2.0) (docs/performance.md, 'Items over the prefix').
    prefixAttentionWithKernel: { kind: 'kernel' },
    // Query rows in 4 chunks, each against the keys it sees (docs/performance.md, 'The prefill: query chunks, then the kernel').
    causalAttention: { kind: 'chunked', queryChunks: 4 },
    // The addon's kernel (tag `ffi`, lib/hlo/attention/causal-kernel.ts) where the plugin registered it: on a
    // 2-core AMD EPYC (AVX2), 0.72x `qc4`'s CPU time per prefill (median of 5 alternating rounds, load
    // 1.8-2.0), 68% of the roof for the attention alone against 21%, and ~190 MB less peak RSS on the
    // target workload; its whole-request gain (0.95-0.975x CPU in 10 processes) is within that machine's
    // noise (docs/performance.md, 'The prefill: query chunks, then the kernel').
    causalAttentionWithKernel: { kind: 'kernel' },
    // 1, 2, ..., 8, 10, 12, 14, 16, 20, ...: at most 1.25x the items, one padded item at most up to 16. On
    // a 2-core AMD EPYC Zen 4, SGLang's PR shape (300-token query, 10 items of 20 tokens) ran 12 item rows
    // instead of 10, 560 token rows for 500; the CPU's compiles take 1-2 s each, once (the disk cache keeps
    // them) (docs/performance.md, 'Small requests').
    countSteps: [1.25, 1.5, 1.75],
    // The item lengths' rungs (..., 256, 320, 384, ...). Sixteen rungs per octave pad the PR shape's 300
    // tokens to 304, not 320 (3% of its rows), but multiply the programs mixed traffic compiles 2.4x (283
    // against 120), each ~17 MiB in memory beside a 48-entry JIT cache: a knob for fixed-shape traffic
    // (PJRT_SCORE_PLATFORM_FACTS queryTokenSteps), not the default (docs/performance.md, 'Small requests').
    queryTokenSteps: [1.25, 1.5, 1.75],
    // Eighths (..., 64, 72, 80, ..., 120, 128, 144, ...; the same rungs as before up to 32 tokens, where the
    // alignment of 4 decides): 100-token items pad to 104, not 112, and a 4,500-token document to 4,608, not
    // 5,120. On a 2-core AMD EPYC Zen 4, 100 items of 100 tokens took 0.96x the wall time in bf16 at the same
    // budget; the document 0.95x (scripts/bench/variants.js, 3 rounds alternating, quiet; docs/performance.md,
    // 'Pass size and buckets'). More programs only where items are longer than 32 tokens and vary in length.
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
    measured: 'AMD EPYC, 2 cores, XLA CPU plugin 0.0.1: budget by npm run bench chunk sweep, cost by scripts/bench/fit-cost-model.js, attention forms by npm run bench:pieces --forms/--causal-forms',
    known: true,
  },
  cuda: {
    platform: 'cuda',
    // On an H100 (CUDA plugin of jax-cuda13-pjrt 0.11.2), a pass budget of 16,384 tokens ran the target
    // workload 40% faster than the CPU's 1,536 (2,955 against 2,111 items/s).
    // Cross-request passes: as many rows as a one-request pass (not measured on its own yet).
    budget: { tokensPerPass: 16384, scoreBytesPerPass: 4 * 2 ** 30, batchRowsPerPass: 16384 },
    // Not fitted on a GPU yet: the CPU's constants (AVX2's fit), which overstate the per-pass cost there.
    cost: AVX2_FACTS.cost,
    // Under 'highest' and 'default' (true f32 or TF32): the forms every plugin runs.
    prefixAttention: { kind: 'joint' },
    causalAttention: { kind: 'square' },
    // Under bf16 dots, with the pinned plugin: cuDNN's fused attention. A pass puts its prefill rows and
    // its item rows against the prefix keys into one padding-causal call (the groups of a cross-request
    // pass its batch), then the items' own keys in a second (`cudnn_join`). On an H100, in one run
    // (docs/gpu.md, 'Measured'): the target workload at 10,082 items/s against 9,665 with the prefill
    // apart (`cudnn`), the PR workload one request at a time 1,777 against 1,565; an earlier run had the
    // cuDNN forms at 10,266 against 4,299 for the joint and square forms. The own keys in StableHLO
    // (`cudnn_ownhlo`) ran at 10,094 against 10,266 in that run.
    prefixAttentionWithCudnn: { kind: 'cudnn', joinPrefill: true },
    causalAttentionWithCudnn: { kind: 'cudnn' },
    // 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, ...: at most 1.25x the items (10 items pad to 10,
    // not 12: 7% of the rows of the PR workload's cross-request pass); a compile takes 4-6 s there.
    countSteps: [1.25, 1.5, 1.75],
    // A compile takes 4-6 s there and a padded row costs little: the item-length ladder's rungs.
    queryTokenSteps: [1.25, 1.5, 1.75],
    itemTokenSteps: [1.25, 1.5, 1.75],
    // From the kernel profile of a target pass on an H200 (docs/gpu.md): widening the u16 bits took a
    // ~60 us kernel per layer, and the f32 gate|up product read back to round it to bf16 91 us. Typed bf16
    // and bf16 products remove both: on an H100, in one run (PJRT_SCORE_PLATFORM_FACTS switching them), the
    // target workload at 10,094 against 9,800 items/s with the CPU's facts, the PR workload with 8 callers
    // at 4,759 against 4,272.
    bf16Matrices: 'bf16',
    bf16Products: true,
    // The addon's kernels are the CPU's.
    matmulKernel: false,
    matmulKernelF32: false,
    // XLA keeps the bf16 roundings the programs ask for instead of computing through them in f32 (the
    // programs then mean what they say), and drops conversions: on an H100 (jax-cuda13-pjrt 0.11.2), as
    // XLA_FLAGS, the target workload at 10,667 against 10,094 items/s and in another run 8,640 against
    // 8,330 (two cuDNN forms since changed or removed). With today's forms the two measured alike: the
    // target 10,082 and 10,730 in two runs with it, 10,378 without, in one call (docs/gpu.md, 'Measured').
    xlaOptions: { xla_allow_excess_precision: false },
    // NVIDIA tensor cores (docs/gpu.md, 'Measured').
    autoPrecision: {
      rule: 'bf16',
      why: 'NVIDIA tensor cores: bf16 dots ran the target workload at 3.7x true f32 on an H100 (4,128 against 1,117 items/s), within the accuracy gate against PyTorch f32 (max 1.2e-2, mean 2.5e-3 over 500 items)',
    },
    measured: 'NVIDIA H100 (jax-cuda13-pjrt 0.11.2): budget, attention forms, bf16 typing and count ladder measured on the target and PR workloads (docs/gpu.md); cost constants unmeasured (the CPU fit)',
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
  return { tokensPerPass: scaled('tokensPerPass'), scoreBytesPerPass: scaled('scoreBytesPerPass'), batchRowsPerPass: scaled('batchRowsPerPass') };
}

/**
 * The facts of a platform (its lower-cased name as the plugin reports it); the CPU's when there is no
 * entry. On the CPU, `cpuClass` (the attention kernels' instruction set on this CPU, null where unknown)
 * picks the budget and cost constants of that class.
 */
export function platformFacts(platform: string, cpuClass: KernelIsa | null = null): PlatformFacts {
  const entry = FACTS[platform.toLowerCase()];
  if (!entry) return { ...FACTS.cpu, platform, known: false };
  if (entry.platform !== 'cpu' || cpuClass === null) return entry;
  const cls = CPU_CLASS_FACTS[cpuClass];
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

/** What picks a platform's default attention forms: the addon's kernels registered, cuDNN's calls usable (bf16 dots, the pinned plugin). */
export interface FormsAvailable {
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
