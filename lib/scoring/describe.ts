/**
 * What a Scorer says of itself: the plan explanation explain() returns, and
 * the load log's event (docs/design.md, 'Threads' for its thread counts).
 */
import { kernelThreads } from '../runtime/kernel-paths';
import { Pass, programKeyString } from './planning/plan';
import { attentionTags } from './platform/attention-forms';
import type { PlanChoice } from './planning/selector';
import type { CausalAttention, PrefixAttention } from '../hlo';
import type { XlaOptions } from '../runtime/xla-options';
import type { AttentionKernelChoice, Precision, PrecisionChoice } from './platform/precision-choice';
import type { Bf16Typing, PlanExplanation } from './scorer-types';
import type { LoadedParts } from './setup';
import type { Batching } from './options';
import type { Budget } from './planning/plan';
import type { PlatformFacts } from './platform/profiles';

/** What the Scorer (scorer.ts) tells of itself in explain() and the load log: describe.ts reads only this. */
interface DescribedScorer {
  readonly precision: Precision;
  readonly precisionChoice: PrecisionChoice;
  readonly xlaOptions: XlaOptions;
  readonly prefixAttention: PrefixAttention;
  readonly causalAttention: CausalAttention;
  readonly attentionNote: string | undefined;
  readonly bf16: Bf16Typing;
  readonly matmulKernel: 'bf16' | 'f32' | null;
  readonly batching: Batching;
  readonly budget: Budget;
  readonly platform: PlatformFacts;
  attentionKernel(): AttentionKernelChoice | null;
}

/**
 * A chosen plan as explain() returns it: its passes and costs, and how the Scorer runs every pass (precision,
 * attention, bf16, XLA options).
 */
export function planExplanation(choice: PlanChoice, scorer: DescribedScorer): PlanExplanation {
  const { precisionChoice: precision, xlaOptions } = scorer;
  const passes = choice.plan.passes.map((p: Pass) => ({
    program: p.program,
    name: programKeyString(p.program),
    items: p.items,
  }));
  // The attention forms a request's passes run (the form chooser's),
  // and why they are not the ones asked for where they differ.
  const attention = { ...attentionTags(scorer), ...(scorer.attentionNote ? { note: scorer.attentionNote } : {}) };
  return {
    algorithm: choice.plan.algorithm,
    precision: precision.precision,
    precisionReason: precision.reason,
    attentionKernel: scorer.attentionKernel(),
    reason: choice.reason,
    cost: choice.cost,
    costs: choice.costs,
    passes,
    attention,
    bf16: scorer.bf16,
    matmulKernel: scorer.matmulKernel,
    ...(Object.keys(xlaOptions).length ? { xlaOptions } : {}),
  };
}

/** The load log's event: what was loaded, how it runs, and where the load time went. */
export function loadedEvent(scorer: DescribedScorer, parts: LoadedParts): Record<string, unknown> {
  const { client, config, weights } = parts;
  const { weightChoice } = parts.setup;
  return {
    event: 'model_loaded',
    model: parts.modelName,
    path: parts.modelPath,
    platform: `${client.platformName} ${client.platformVersion}`,
    precision: scorer.precision,
    precisionReason: scorer.precisionChoice.reason,
    attentionKernel: scorer.attentionKernel(),
    prefixAttention: scorer.prefixAttention,
    causalAttention: scorer.causalAttention,
    ...(scorer.attentionNote ? { attentionNote: scorer.attentionNote } : {}),
    ...(parts.kernelPaths ? threadsLog() : {}),
    family: config.architecture,
    quantization: parts.quantization,
    contextLength: config.contextLength,
    weights: weightChoice.weightType,
    weightsReason: weightChoice.reason,
    bf16: scorer.bf16,
    matmulKernel: scorer.matmulKernel,
    ...(Object.keys(scorer.xlaOptions).length ? { xlaOptions: scorer.xlaOptions } : {}),
    batching: scorer.batching,
    budget: scorer.budget,
    deviceMemoryBytes: client.deviceMemoryBytes,
    platformFacts: scorer.platform.known
      ? scorer.platform.measured
      : `no facts for platform ${client.platformName}: the CPU's are used`,
    weightBytes: weights.bytes,
    seconds: (performance.now() - parts.startedMs) / 1000,
    // Where the load time went: opening the file (config; a Hugging Face directory's tokenizer), then per
    // array read, convert, upload, and the load's programs. A GGUF file's tokenizer is built later (see tokenizer).
    steps: { openSeconds: (parts.openedMs - parts.startedMs) / 1000, ...weights.timings },
  };
}

/**
 * The CPU threads, for the load log (docs/design.md, 'Threads'): the kernels'
 * pool, and a note where XLA's own pool (sized by the affinity mask) has more
 * threads than the cgroup quota allows.
 */
function threadsLog(): { kernelThreads: number; threadsSource: string; threadsNote?: string } {
  const t = kernelThreads();
  const over = t.quota > 0 && t.quota < t.affinity;
  return {
    kernelThreads: t.threads,
    threadsSource: t.source,
    ...(over
      ? {
          threadsNote:
            `the cgroup allows ${t.quota} CPUs but the affinity mask has ${t.affinity}: XLA's CPU pool ` +
            `follows the mask, so set the mask (taskset, ` +
            `or Kubernetes' static CPU manager with whole CPUs) to the quota`,
        }
      : {}),
  };
}
