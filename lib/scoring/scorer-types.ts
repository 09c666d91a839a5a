/**
 * The Scorer's public types: its options, what a call takes and returns,
 * its counters. Kept apart from the Scorer (scorer.ts) so the contract reads
 * on its own (docs/scorer-api.md).
 */
import type { Bf16Matrices, CausalAttention, KernelMatrixName, PrefixAttention } from '../hlo';
import type { XlaOptions } from '../runtime/xla-options';
import type { Admission } from './execution/admission';
import type { JitCacheCounters } from './execution/jit-cache';
import type { DevicePassTiming } from './execution/decoder-runner';
import type { WarmupShape } from './execution/jobs';
import type { AlgorithmChoice, Precision, ScorerSettings } from './options';
import type { AttentionKernelChoice } from './platform/precision-choice';
import type { Algorithm, Budget, ProgramKey } from './planning/plan';
import type { PrefixCacheCounters } from './execution/prefix-cache';
import type { NormalizedRequest, ScoreRequest } from './requests/request';
import type { RerankResult } from './requests/rerank';
import type { RerankTemplate } from './requests/rerank-template';
import type { TruncationReport } from './requests/truncate';

export type { AlgorithmChoice, DevicePassTiming, WarmupShape };

/**
 * Scorer.load's options: the settings table's (scoring/options.ts: model,
 * plugin, algorithm, maxItems, maxRequestTokens, precision, weights,
 * batching, rerankTemplate, jitCacheEntries, prefixCacheBytes; each row
 * holds its choices, default and help) and the library's own below.
 * docs/scorer-api.md documents each.
 */
export interface ScorerOptions extends Omit<ScorerSettings, 'rerankTemplate'> {
  /**
   * The plugin's client options (PJRT named values), e.g. the CUDA plugin's
   * `memory_fraction` (a float in (0, 1]) and `preallocate` (bool). A whole
   * number is sent as an integer. Default: none (the CPU plugin gets one device).
   */
  readonly clientOptions?: Readonly<Record<string, number | string | boolean>>;
  /** Structured log events. */
  readonly log?: (event: Record<string, unknown>) => void;
  /** On-disk executable cache: true (default, in the cache directory), a directory, or false. */
  readonly diskCache?: boolean | string;
  /** Per-pass memory budget. */
  readonly budget?: Partial<Budget>;
  /**
   * How item tokens attend over the query's keys: `{ kind: 'joint' }`,
   * `{ kind: 'rows' }` (the joint softmax with fewer passes over the scores,
   * tag `ones_own`), `{ kind: 'kernel' }` (the addon's fused kernel,
   * where the client registered it; else load fails with a TypeError),
   * `{ kind: 'cudnn', ownKeys?: 'cudnn' | 'hlo', joinPrefill?: boolean }` (cuDNN's fused attention on
   * the pinned CUDA plugin, docs/gpu.md). Default: the platform's (platform/profiles.ts),
   * measured there. The scores agree within f32 rounding either way.
   */
  readonly prefixAttention?: PrefixAttention;
  /**
   * How the query attends causally to itself: `{ kind: 'square' }` (all P x P
   * scores, the upper half masked) or `{ kind: 'chunked', queryChunks }`
   * (query rows in chunks, each against the keys it sees) or `{ kind:
   * 'kernel' }` (the addon's fused kernel, where the client registered it;
   * else load fails with a TypeError). Default: the platform's. The scores
   * agree within f32 rounding either way.
   */
  readonly causalAttention?: CausalAttention;
  /**
   * XLA options every program compiles with (docs/gpu.md, 'XLA options'): DebugOptions fields by name, e.g.
   * `{ xla_allow_excess_precision: true }`, over the platform's (on cuda `{ xla_allow_excess_precision: false }`);
   * the keys given win. Executables compiled with other options never mix (another JIT cache namespace).
   */
  readonly xlaOptions?: XlaOptions;
  /**
   * Rerank template: a built-in name ('qwen3-reranker', 'chatml-yes-no', 'llama3-yes-no') or a template; default chosen
   * from the model.
   */
  readonly rerankTemplate?: string | RerankTemplate;
}

export interface RerankResponse {
  /** Best first, cut to topN. */
  readonly results: readonly RerankResult[];
  readonly usage: ScoreUsage;
  readonly model: string;
  /** The plan that ran: 'serial' | 'packed' | 'prefix'. */
  readonly algorithm: Algorithm;
  /** The template that built the prompts. */
  readonly template: string;
  /** When the request asked for truncation: tokens before and after, and the items cut. */
  readonly truncation?: TruncationReport;
}

export interface ScoreCallOptions {
  /** Aborting drops the work that has not run yet; the call rejects with an AbortError. */
  readonly signal?: AbortSignal;
  /** Forces a plan (default: the Scorer's algorithm option). */
  readonly algorithm?: AlgorithmChoice;
  /** Told how the call went through the admission queue (its turn's size, its wait), before it resolves. */
  readonly onAdmitted?: (admission: Admission) => void;
  /**
   * Told of each device pass of the call's plan as it ends (a shared pass is told to each request in it): for traces.
   */
  readonly onPass?: (pass: DevicePassTiming) => void;
}

/** One request of a batch (`scoreBatch`): already normalized, with its own abort signal. */
export interface BatchJob {
  readonly request: NormalizedRequest;
  readonly signal?: AbortSignal;
}

/** `scoreMany`'s options: the call options every request gets, and how many run at once. */
export interface ScoreManyOptions extends Omit<ScoreCallOptions, 'onAdmitted' | 'onPass'> {
  /** Requests in flight at most (default DEFAULT_SCORE_MANY_CONCURRENCY, never above the queue's size). */
  readonly concurrency?: number;
}

/** `scoreMany`'s default window: enough waiting calls for a turn to take along (coalescing, cross-request batching). */
export const DEFAULT_SCORE_MANY_CONCURRENCY = 16;

/** What became of one request of a batch. */
export type BatchOutcome =
  { readonly ok: true; readonly result: ScoreResult } | { readonly ok: false; readonly error: unknown };

/** What `explain()` returns: the plan a request runs, its passes, and the costs that chose it. */
/** The bf16 typing in force (platform facts, platform/profiles.ts, or PJRT_SCORE_PLATFORM_FACTS). */
export interface Bf16Typing {
  /** How the bf16 matrices are typed on the device (u16 bits or bf16); null where the weights are not bf16. */
  readonly matrices: Bf16Matrices | null;
  /** Whether the q|k|v and gate|up projections return bf16 products (only ever under precision 'bf16'). */
  readonly products: boolean;
  /** Whether the layers' projections run through the addon's bf16 matmul kernel (only ever under precision 'bf16'). */
  readonly matmulKernel: boolean;
  /**
   * The layer matrices the weights hold packed for the matmul kernel (bf16 panels, packed once at load); empty without
   * it.
   */
  readonly packedMatrices: readonly KernelMatrixName[];
  /** The facts PJRT_SCORE_PLATFORM_FACTS set; absent when it set none. */
  readonly overridden?: readonly string[];
}

export interface PlanExplanation {
  readonly algorithm: Algorithm;
  /** f32 dot precision of the programs ('highest': true f32; 'default': the platform's fast mode). */
  readonly precision: Precision;
  /** Why this precision (the option, or what 'auto' saw). */
  readonly precisionReason: string;
  /** The attention kernels' paths on this CPU and the one this precision takes; null without the kernels. */
  readonly attentionKernel: AttentionKernelChoice | null;
  readonly reason: string;
  /** Estimated cost of the chosen plan, FLOP-equivalents. */
  readonly cost: number;
  readonly costs: Partial<Record<Algorithm, number>>;
  /** The passes in execution order: the program (with its buckets) and the request's items in its rows. */
  readonly passes: readonly {
    readonly program: ProgramKey;
    readonly name: string;
    readonly items: readonly number[];
  }[];
  /**
   * The attention forms the request's passes run (the form chooser's, lib/scoring/platform/attention-forms.ts; tags:
   * lib/hlo/attention/prefix.ts, causal.ts) and, where they are not the ones asked for (a model with sliding
   * windows or soft-capped scores; passes shared by several requests), why.
   */
  readonly attention?: { readonly prefixAttention: string; readonly causalAttention: string; readonly note?: string };
  /** How bf16 weights and products are typed in every pass. */
  readonly bf16?: Bf16Typing;
  /**
   * Which matmul kernel the layers' projections run through: 'bf16' (bf16.matmulKernel), 'f32', or null (XLA's dots).
   */
  readonly matmulKernel?: 'bf16' | 'f32' | null;
  /** The XLA options every program compiles with, where there are any. */
  readonly xlaOptions?: XlaOptions;
}

export interface ScoreLibraryRequest extends ScoreRequest {
  /** Forces a plan for this request. */
  readonly algorithm?: AlgorithmChoice;
}

export interface ScoreUsage {
  readonly promptTokens: number;
  readonly completionTokens: 0;
  readonly totalTokens: number;
}

export interface ScoreResult {
  /** One row per item in request order, one score per label in label order. */
  readonly scores: number[][];
  readonly usage: ScoreUsage;
  /** The plan that ran. */
  readonly algorithm: Algorithm;
  readonly model: string;
  /** When the request asked for truncation: tokens before and after, and the items cut. */
  readonly truncation?: TruncationReport;
}

export interface ScorerStats {
  readonly jit: JitCacheCounters;
  readonly prefixCache: PrefixCacheCounters;
  readonly runs: Record<Algorithm, number>;
  readonly itemsScored: number;
  readonly tokensScored: number;
  /** Program executions on the device (every pass of every plan). */
  readonly devicePasses: number;
  /** Cross-request passes run, and the requests they carried (batching 'cross-request'). */
  readonly batchedPasses: number;
  readonly batchedRequests: number;
  /** Turns of the device the admission queue gave, and the calls they served (coalesced calls share a turn). */
  readonly turns: number;
  readonly turnRequests: number;
}
