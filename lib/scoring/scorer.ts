/**
 * Scorer: the library's front door. Loads a model onto a PJRT device once,
 * then scores requests: validate -> tokens -> plan -> device -> scores. A thin
 * facade over the pure setup step (setup.ts: ladders, budget, forms,
 * precision) and the turn executor (execution/turns.ts).
 * See docs/scorer-api.md for the contract the service builds on.
 */
import { ModelConfig } from '../model/config';
import type { DeviceWeights } from '../device-weights/upload';
import type { WeightTypeChoice } from '../device-weights/choose';
import { CausalAttention, PrefixAttention, WeightType } from '../hlo';
import { Tokenizer } from '../model/tokenizer';
import { Client } from '../runtime/client';
import { DisposedError } from '../runtime/errors';
import { attentionKernelPaths, KernelPaths } from '../runtime/kernel-paths';
import { XlaOptions } from '../runtime/xla-options';
import { Batching, Precision } from './options';
import { AttentionKernelChoice, attentionKernelChoice, PrecisionChoice } from './platform/precision-choice';
import { PlatformFacts } from './platform/profiles';
import { Budget, Ladders } from './planning/plan';
import { normalizeRequest, NormalizedRequest, ScoreRequest, ScoreRequestContext } from './requests/request';
import { normalizeRerank, NormalizedRerank, RerankRequest } from './requests/rerank';
import { rerankResponse } from './requests/rerank-results';
import { RerankTemplate, resolveTemplate, ResolvedTemplate, templateFor } from './requests/rerank-template';
import { OffLoopTokenizer, RequestReader } from './off-loop-tokenizer';
import { loadScorer } from './load';
import { buildEngine, Engine, engineStats, scoreJobs } from './engine';
import { loadedEvent, planExplanation } from './describe';

import { scoreMany } from './score-many';
import type { LoadedParts } from './setup';
import type {
  Bf16Typing,
  BatchJob,
  BatchOutcome,
  ScoreManyOptions,
  PlanExplanation,
  RerankResponse,
  ScoreCallOptions,
  ScoreLibraryRequest,
  ScoreResult,
  ScorerOptions,
  ScorerStats,
  WarmupShape,
} from './scorer-types';

export class Scorer implements Disposable {
  readonly modelName: string;
  /** The model file's stored tensor types ("Q4_1 (210), F32 (61), Q8_0 (1)"). */
  readonly quantization: string;
  readonly config: ModelConfig;
  readonly client: Client;
  /** The tokenizer, built (parsing the file's vocabulary and merges) at its first call: load.ts. */
  private readonly buildTokenizer: () => Tokenizer;
  private readonly weights: DeviceWeights;
  /** The planner, queue, turns, runner and prefix cache it answers through (engine.ts). */
  private readonly engine: Engine;
  /** Bucket ladders (token lengths, item lengths, counts, labels). */
  readonly ladders: Ladders;
  /** Per-pass memory budget. */
  readonly budget: Budget;
  /** The platform's facts this Scorer sizes and costs its plans with (platform/profiles.ts). */
  readonly platform: PlatformFacts;
  /** f32 dot precision of every program this Scorer runs. */
  readonly precision: Precision;
  /** The precision option resolved: what was asked, what runs, why. */
  readonly precisionChoice: PrecisionChoice;
  /** How item tokens attend over the query's keys (the option, else the platform's). */
  readonly prefixAttention: PrefixAttention;
  /** How the query attends causally to itself (the option, else the platform's). */
  readonly causalAttention: CausalAttention;
  /** Why the attention forms differ from the ones asked for (a model the fused kernels cannot run), or undefined. */
  readonly attentionNote: string | undefined;
  /** How the weight matrices are stored on the device. */
  readonly weightType: WeightType;
  /** How bf16 matrices and products are typed (platform facts, or PJRT_SCORE_PLATFORM_FACTS). */
  readonly bf16: Bf16Typing;
  /** Which matmul kernel the layers' projections run through (setup.ts), or null: XLA's dots. */
  readonly matmulKernel: 'bf16' | 'f32' | null;
  /** The XLA options every program compiles with: the platform's, the xlaOptions option over them. */
  readonly xlaOptions: XlaOptions;
  /** Why this weight type (the option, or what 'auto' saw). */
  readonly weightChoice: WeightTypeChoice;
  /** How requests with different queries share the device. */
  readonly batching: Batching;
  private readonly requestContext: ScoreRequestContext;
  private readonly log: (event: Record<string, unknown>) => void;
  private disposed = false;
  /** Set by close(): resolves once the calls made before it are answered and the Scorer is disposed. */
  private closing: Promise<void> | null = null;
  private readonly templateOption: string | RerankTemplate | undefined;
  private resolvedTemplate: ResolvedTemplate | null = null;

  private constructor(init: LoadedParts) {
    const { options, settings } = init;
    this.modelName = init.modelName;
    this.quantization = init.quantization;
    this.config = init.config;
    this.buildTokenizer = init.tokenizer;
    this.client = init.client;
    this.weights = init.weights;
    this.weightType = init.weights.weightType;
    this.weightChoice = init.setup.weightChoice;
    this.log = options.log ?? (() => undefined);
    this.templateOption = options.rerankTemplate;
    this.xlaOptions = init.setup.xlaOptions;
    const setup = init.setup;
    const facts = setup.facts;
    this.platform = facts;
    this.budget = setup.budget;
    this.ladders = setup.ladders;
    this.precisionChoice = setup.precisionChoice;
    this.precision = setup.precisionChoice.precision;
    this.prefixAttention = setup.prefixAttention;
    this.causalAttention = setup.causalAttention;
    this.attentionNote = setup.attentionNote;
    this.bf16 = setup.bf16;
    this.matmulKernel = setup.matmulKernel;
    this.batching = settings.batching;
    this.engine = buildEngine(init, { log: this.log, assertLive: () => this.assertLive() });
    const { vocabSize, contextLength, bosTokenId, addBos } = this.config;
    const { maxItems, maxRequestTokens } = settings;
    const source = {
      tokenizer: () => this.tokenizer,
      template: () => this.rerankTemplate().template,
      assertOpen: () => this.assertOpen(),
    };
    this.offLoop = new OffLoopTokenizer(
      { vocabSize, contextLength, bosTokenId, addBos, maxItems, maxRequestTokens },
      source,
    );
    this.requestContext = this.offLoop.context;
  }

  /**
   * The normalizers that tokenize long texts on a worker thread, what the service calls (off-loop-tokenizer.ts); ended
   * by dispose().
   */
  readonly offLoop: OffLoopTokenizer;

  /** Loads the model, creates the client, uploads the weights (load.ts). */
  static async load(options: ScorerOptions = {}): Promise<Scorer> {
    return loadScorer(options, (parts) => {
      const scorer = new Scorer(parts);
      // A template named at load must fit the model: say so now, not at the first rerank.
      if (options.rerankTemplate !== undefined) scorer.rerankTemplate();
      scorer.log(loadedEvent(scorer, parts));
      return scorer;
    });
  }

  /**
   * The model's tokenizer: built at first use (the first text request, a rerank template, or warmup()), not at load.
   */
  get tokenizer(): Tokenizer {
    return this.buildTokenizer();
  }

  /** Text -> token ids, without special tokens. */
  tokenize(text: string): number[] {
    if (typeof text !== 'string') throw new TypeError('tokenize() takes a string');
    return this.tokenizer.encode(text);
  }

  /** Calls waiting in the admission queue. */
  get queueDepth(): number {
    return this.engine.queue.queueDepth;
  }

  /** Calls in the device's turn now. */
  get inFlight(): number {
    return this.engine.queue.inFlight;
  }

  /** Prompt tokens of the calls waiting in the admission queue. */
  get queuedTokens(): number {
    return this.engine.queue.queuedTokens;
  }

  /** Seconds a call refused by a full queue should wait before retrying. */
  retryAfterSeconds(): number {
    return this.engine.queue.retryAfterSeconds();
  }

  /** Resolves when no call waits or runs. */
  idle(): Promise<void> {
    return this.engine.queue.idle();
  }

  /**
   * Validates a library request (camelCase fields) into token space; throws
   * ScoreInputError naming the field. Nothing runs.
   */
  normalize(request: ScoreRequest): NormalizedRequest {
    this.assertOpen();
    return normalizeRequest(request, this.requestContext);
  }

  /**
   * Validates a request in another spelling (a wire format's body: lib/wire)
   * into the Scorer's own types, through `read` over the request context and
   * the rerank template; throws what `read` throws. Nothing runs.
   * `offLoop.normalizeWith` is the same with long texts tokenized off the loop.
   */
  normalizeWith<T>(read: RequestReader<T>): T {
    this.assertOpen();
    return read({ context: this.requestContext, template: () => this.rerankTemplate() });
  }

  /** Scores a library request (camelCase fields). */
  async score(request: ScoreLibraryRequest, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    const normalized = this.normalize(request);
    const algorithm = options.algorithm ?? (request && typeof request === 'object' ? request.algorithm : undefined);
    const result = await this.scoreNormalized(normalized, {
      ...options,
      ...(algorithm !== undefined ? { algorithm } : {}),
    });
    return normalized.truncation ? { ...result, truncation: normalized.truncation } : result;
  }

  /** Scores a request that `normalize`/`normalizeWith` already validated: the one path every entry takes. */
  async scoreNormalized(request: NormalizedRequest, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    this.assertOpen();
    const job = {
      ...this.engine.jobs.chosenJob(request, options.algorithm, options.signal),
      ...(options.onPass ? { onPass: options.onPass } : {}),
    };
    const { result, admission } = await this.engine.queue.submit(job);
    options.onAdmitted?.(admission);
    return result;
  }

  /**
   * Scores several normalized requests, each through the admission queue
   * as a call of its own, queued together. With batching 'invariant' each
   * runs its own plan, exactly as it would alone, so its scores do not
   * depend on the others (docs/design.md "Batch invariance"); with
   * 'cross-request' those that can share passes do (within f32 rounding of
   * their scores alone, the same section). One request's failure, abort or refusal does not affect
   * the others.
   */
  async scoreBatch(
    jobs: readonly BatchJob[],
    options: Pick<ScoreCallOptions, 'algorithm'> = {},
  ): Promise<BatchOutcome[]> {
    this.assertOpen();
    return scoreJobs(this.engine, jobs, options.algorithm);
  }

  /**
   * Scores a stream of requests, a window at a time, yielding outcomes in input order (score-many.ts;
   * docs/scorer-api.md "Many requests").
   */
  scoreMany(
    requests: AsyncIterable<ScoreLibraryRequest> | Iterable<ScoreLibraryRequest>,
    options: ScoreManyOptions = {},
  ): AsyncGenerator<BatchOutcome, void, undefined> {
    return scoreMany((request, call) => this.score(request, call), this.engine.queue.capacity, requests, options);
  }

  /**
   * Reranks documents against a query (docs/design.md "Rerank"): every document in
   * one plan, the prompt up to the document shared. Results are sorted by
   * relevance, best first.
   */
  async rerank(request: RerankRequest, options: ScoreCallOptions = {}): Promise<RerankResponse> {
    this.assertOpen();
    return this.runRerank(normalizeRerank(request, this.rerankTemplate(), this.requestContext), options);
  }

  /** Runs a validated rerank request. */
  async runRerank(request: NormalizedRerank, options: ScoreCallOptions = {}): Promise<RerankResponse> {
    const result = await this.scoreNormalized(request.score, options);
    return {
      ...rerankResponse(request, result.scores, this.rerankTemplate().template.name),
      usage: result.usage,
      model: this.modelName,
      algorithm: result.algorithm,
    };
  }

  /** The rerank template bound to this model's vocabulary (TemplateError when none fits). */
  rerankTemplate(): ResolvedTemplate {
    if (this.resolvedTemplate) return this.resolvedTemplate;
    const template = templateFor(
      this.templateOption,
      { name: this.modelName, architecture: this.config.architecture },
      this.tokenizer,
    );
    this.resolvedTemplate = resolveTemplate(template, this.tokenizer);
    return this.resolvedTemplate;
  }

  /** The plan a request would run, its passes and costs (nothing runs). */
  explain(request: ScoreLibraryRequest): PlanExplanation {
    const normalized = this.normalize(request);
    const choice = this.engine.jobs.choose(normalized, request.algorithm);
    return planExplanation(choice, this);
  }

  /**
   * The attention kernels' paths on this CPU (read now: PJRT_SCORE_KERNEL_ISA may cap them) and the
   * one this Scorer's precision takes; null where no kernel form runs.
   */
  attentionKernel(): AttentionKernelChoice | null {
    const usesKernel = this.prefixAttention.kind === 'kernel' || this.causalAttention.kind === 'kernel';
    const paths = usesKernel ? this.kernelPaths() : null;
    return paths ? attentionKernelChoice(paths, this.precision) : null;
  }

  /** The kernels' paths for this model's head dim, where the client registered the kernels. */
  private kernelPaths(): KernelPaths | null {
    return this.client.prefixAttentionKernel ? attentionKernelPaths(this.config.headDim) : null;
  }

  /**
   * Builds the tokenizer and compiles exactly the programs that requests of
   * these shapes run (progress bar on stderr): the plan of each shape is made
   * as a real request's would be.
   * With batching 'cross-request', also the shared passes of 2 to
   * WARMUP_BATCH_REQUESTS waiting requests of each shape.
   */
  async warmup(
    shapes: readonly WarmupShape[],
    progress: NodeJS.WritableStream | false = process.stderr,
  ): Promise<void> {
    this.assertOpen();
    void this.tokenizer;
    const programs = this.engine.jobs.warmupPrograms(shapes);
    const items = programs.map((program) => ({
      key: this.engine.runner.key(program),
      source: this.engine.runner.source(program),
    }));
    await this.engine.runner.jit.warmup(items, { progress });
  }

  stats(): ScorerStats {
    return engineStats(this.engine);
  }

  /**
   * Stops taking calls (a later one rejects with DisposedError), lets every
   * call already made finish, those still waiting for the device included,
   * then disposes. Idempotent: every call returns the same promise.
   */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = this.disposed ? Promise.resolve() : this.engine.queue.idle().then(() => this.dispose());
    }
    return this.closing;
  }

  /**
   * Frees the device memory (weights, caches, executables) now. Calls still
   * waiting for the device reject with DisposedError, and so does every later
   * call; a call on the device may finish or reject with DisposedError.
   * Idempotent. close() waits for the calls first.
   */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.engine.queue.close(() => new DisposedError('Scorer'));
    void this.offLoop.close();
    this.engine.prefixCache.clear();
    this.engine.runner.dispose();
    this.weights.dispose();
    this.client.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** A call may start: the Scorer is neither disposed nor closing. */
  private assertOpen(): void {
    this.assertLive();
    if (this.closing) throw new DisposedError('Scorer', 'is closing');
  }

  /** A call already taken may go on: the Scorer is not disposed (a closing one answers what it took). */
  private assertLive(): void {
    if (this.disposed) throw new DisposedError('Scorer');
  }
}
