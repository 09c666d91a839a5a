/**
 * Scorer: the library's front door. Loads a model onto a PJRT device once,
 * then scores requests: validate -> tokens -> plan -> device -> scores.
 * See docs/scorer-api.md for the contract the service builds on.
 */
import { ModelConfig } from '../model/config';
import { DeviceWeights, uploadWeights } from '../device-weights/upload';
import { chooseWeightType, WeightTypeChoice } from '../device-weights/choose';
import { WeightType } from '../hlo/decoder-layout';
import { checkPrefixAttention, PrefixAttention } from '../hlo/prefix-attention';
import { CausalAttention, checkCausalAttention } from '../hlo/attention-causal-chunks';
import { ensureModelPath } from '../model/default-model';
import { OpenedModel, openModel } from '../model/load';
import { Tokenizer } from '../model/tokenizer';
import { Client } from '../runtime/client';
import { releaseFreeHostMemory } from '../runtime/host-memory';
import { bucketLadder, DEFAULT_TOKEN_BUCKETS } from './buckets';
import { DecoderRunner } from './decoder-runner';
import { AlgorithmChoice, ALGORITHM_CHOICES, Batching, pickSettings, Precision, SCORER_SETTINGS, ScorerSettings, settingDefaults } from './options';
import { AbortError, DeviceLock } from './device-lock';
import { JitCacheCounters } from './jit-cache';
import { loadProgramCache } from './load-programs';
import { Algorithm, Budget, Ladders, Pass, Plan, ProgramKey, programKeyString, RequestShape, shapeOf, Sizing } from './plan';
import { budgetForMemory, defaultCausalAttention, defaultPrefixAttention, platformFacts, PlatformFacts } from './platform';
import { PrefixCache, PrefixCacheCounters } from './prefix-cache';
import { normalizeRequest, normalizeRequestBody, NormalizedRequest, ScoreRequest, ScoreRequestContext } from './request';
import { normalizeRerank, normalizeRerankBody, NormalizedRerank, RerankRequest, RerankResult, rerankResults } from './rerank';
import { chooseTemplate, RERANK_TEMPLATES, RerankTemplate, resolveTemplate, ResolvedTemplate, TemplateError } from './rerank-template';
import { runPlan } from './run-plan';
import { batchPrograms, canJoinBatch, makeBatchPlan } from './batch-plan';
import { runBatchPasses } from './run-batch';
import { JobOutcome, RequestBatcher } from './request-batcher';
import { scoresFromLabelLogprobs } from './scores';
import { choosePlan, CostModel, costModelFor, PlanChoice } from './selector';

export type { AlgorithmChoice };

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
   * How item tokens attend over the query's keys: `{ kind: 'joint' }` or
   * `{ kind: 'blocked', keyBlock, loop: 'while' | 'unrolled' }` (key blocks
   * with an online softmax), `{ kind: 'kernel' }` (the addon's fused kernel,
   * where the client registered it; else load fails with a TypeError). Default: the platform's (lib/scoring/platform.ts),
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
  /** Rerank template: a built-in name ('qwen3-reranker', 'chatml-yes-no', 'llama3-yes-no') or a template; default chosen from the model. */
  readonly rerankTemplate?: string | RerankTemplate;
}

export interface RerankResponse {
  /** Best first, cut to topN. */
  readonly results: readonly RerankResult[];
  readonly usage: ScoreUsage;
  readonly model: string;
  /** The template that built the prompts. */
  readonly template: string;
}

export interface ScoreCallOptions {
  /** Aborting drops the work that has not run yet; the call rejects with an AbortError. */
  readonly signal?: AbortSignal;
  /** Forces a plan (default: the Scorer's algorithm option). */
  readonly algorithm?: AlgorithmChoice;
}

/** One request of a batch (`scoreBatch`): already normalized, with its own abort signal. */
export interface BatchJob {
  readonly request: NormalizedRequest;
  readonly signal?: AbortSignal;
}

/** What became of one request of a batch. */
export type BatchOutcome = { readonly ok: true; readonly result: ScoreResult } | { readonly ok: false; readonly error: unknown };

/** What `explain()` returns: the plan a request runs, its passes, and the costs that chose it. */
export interface PlanExplanation {
  readonly algorithm: Algorithm;
  /** f32 dot precision of the programs ('highest': true f32; 'default': the platform's fast mode). */
  readonly precision: Precision;
  readonly reason: string;
  /** Estimated cost of the chosen plan, FLOP-equivalents. */
  readonly cost: number;
  readonly costs: Partial<Record<Algorithm, number>>;
  /** The passes in execution order: the program (with its buckets) and the request's items in its rows. */
  readonly passes: readonly { readonly program: ProgramKey; readonly name: string; readonly items: readonly number[] }[];
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
}

/** Shapes to compile before serving: a request of query length P, N items of length L. */
export interface WarmupShape {
  readonly queryTokens: number;
  readonly itemTokens: number;
  readonly items: number;
  readonly labels?: number;
  readonly algorithm?: Algorithm;
}

/** A request with its plan chosen, as the device runs it; `joins` when it may share a pass with other requests. */
interface ChosenJob {
  readonly request: NormalizedRequest;
  readonly choice: PlanChoice;
  readonly signal?: AbortSignal;
  readonly joins: boolean;
}

/** Warmup compiles the shared passes of up to this many waiting requests of one shape (batching 'cross-request'). */
const WARMUP_BATCH_REQUESTS = 16;

function isAlgorithmChoice(x: unknown): x is AlgorithmChoice {
  return (ALGORITHM_CHOICES as readonly unknown[]).includes(x);
}

/** The settings-table options of a load, each checked by its row (TypeError), with the table's defaults. */
function scorerSettings(options: ScorerOptions): Required<Omit<ScorerSettings, 'model' | 'plugin' | 'rerankTemplate'>> & ScorerSettings {
  // A template object is the library's own (checked when it is resolved); a name is checked against the built-in ones.
  const picked = pickSettings(SCORER_SETTINGS, options, (s) => s.key === 'rerankTemplate' && typeof options.rerankTemplate === 'object');
  return { ...settingDefaults(SCORER_SETTINGS), ...picked };
}

export class Scorer implements Disposable {
  readonly modelName: string;
  readonly config: ModelConfig;
  readonly client: Client;
  /** Builds the tokenizer (parsing the file's vocabulary and merges): once, at first use or warmup. */
  private readonly buildTokenizer: () => Tokenizer;
  private builtTokenizer: Tokenizer | undefined;
  private readonly runner: DecoderRunner;
  private readonly weights: DeviceWeights;
  private readonly lock = new DeviceLock();
  private readonly prefixCache: PrefixCache;
  /** Bucket ladders (token lengths, item lengths, counts, labels). */
  readonly ladders: Ladders;
  /** Per-pass memory budget. */
  readonly budget: Budget;
  /** The platform's facts this Scorer sizes and costs its plans with (platform.ts). */
  readonly platform: PlatformFacts;
  /** f32 dot precision of every program this Scorer runs. */
  readonly precision: Precision;
  /** How item tokens attend over the query's keys (the option, else the platform's). */
  readonly prefixAttention: PrefixAttention;
  /** How the query attends causally to itself (the option, else the platform's). */
  readonly causalAttention: CausalAttention;
  /** How the weight matrices are stored on the device. */
  readonly weightType: WeightType;
  /** Why this weight type (the option, or what 'auto' saw). */
  readonly weightChoice: WeightTypeChoice;
  /** How requests with different queries share the device. */
  readonly batching: Batching;
  private readonly batcher: RequestBatcher<ChosenJob, ScoreResult>;
  private batchedPasses = 0;
  private batchedRequests = 0;
  private readonly costModel: CostModel;
  private readonly sizing: Sizing;
  private readonly requestContext: ScoreRequestContext;
  private readonly defaultAlgorithm: AlgorithmChoice;
  private readonly log: (event: Record<string, unknown>) => void;
  private readonly runs: Record<Algorithm, number> = { serial: 0, packed: 0, prefix: 0 };
  private itemsScored = 0;
  private tokensScored = 0;
  private disposed = false;
  private loggedItemFirst = false;
  /** A trim of the host heap is scheduled or running (releaseWhenIdle). */
  private releasing = false;
  private readonly templateOption: string | RerankTemplate | undefined;
  private resolvedTemplate: ResolvedTemplate | null = null;

  private constructor(init: {
    modelName: string;
    config: ModelConfig;
    tokenizer: () => Tokenizer;
    client: Client;
    weights: DeviceWeights;
    weightChoice: WeightTypeChoice;
    options: ScorerOptions;
    settings: ReturnType<typeof scorerSettings>;
  }) {
    const { options, settings } = init;
    this.modelName = init.modelName;
    this.config = init.config;
    this.buildTokenizer = init.tokenizer;
    this.client = init.client;
    this.weights = init.weights;
    this.weightType = init.weights.weightType;
    this.weightChoice = init.weightChoice;
    this.log = options.log ?? (() => undefined);
    this.defaultAlgorithm = settings.algorithm;
    this.templateOption = options.rerankTemplate;
    const facts = platformFacts(this.client.platformName);
    this.platform = facts;
    this.budget = { ...budgetForMemory(facts.budget, this.client.deviceMemoryBytes), ...options.budget };
    this.prefixCache = new PrefixCache(settings.prefixCacheBytes);
    const context = this.config.contextLength;
    this.ladders = {
      tokens: bucketLadder({ ...DEFAULT_TOKEN_BUCKETS, min: 8, max: Math.max(context, 8) }),
      itemTokens: bucketLadder({ min: 8, max: Math.max(context, 8), steps: [1.25, 1.5, 1.75], align: 4 }),
      counts: bucketLadder({ min: 1, max: 4096, steps: [1.5] }),
      labels: bucketLadder({ min: 2, max: Math.max(2, this.config.vocabSize) }),
    };
    this.costModel = costModelFor(this.config, facts.cost);
    this.sizing = { ladders: this.ladders, budget: this.budget, numHeads: this.config.numHeads };
    this.precision = settings.precision;
    this.prefixAttention = options.prefixAttention ?? defaultPrefixAttention(facts, this.client.prefixAttentionKernel);
    this.causalAttention = options.causalAttention ?? defaultCausalAttention(facts, this.client.prefixAttentionKernel);
    this.batching = settings.batching;
    this.batcher = new RequestBatcher(this.lock, (jobs) => this.runJobs(jobs).finally(() => this.releaseWhenIdle()));
    this.runner = new DecoderRunner(
      this.client,
      this.config,
      this.weights,
      `${this.modelName}-${this.config.architecture}`,
      this.precision,
      { disk: options.diskCache ?? true, maxEntries: settings.jitCacheEntries },
      { prefixAttention: this.prefixAttention, causalAttention: this.causalAttention },
    );
    this.requestContext = {
      vocabSize: this.config.vocabSize,
      contextLength: context,
      maxItems: settings.maxItems,
      maxRequestTokens: settings.maxRequestTokens,
      tokenize: (text) => this.tokenizer.encode(text),
      bosTokenId: this.config.bosTokenId,
      addBos: this.config.addBos,
    };
  }

  /** Loads the model, creates the client, uploads the weights. */
  static async load(options: ScorerOptions = {}): Promise<Scorer> {
    if (options === null || typeof options !== 'object') throw new TypeError('Scorer.load() takes an options object');
    const settings = scorerSettings(options);
    try {
      if (options.prefixAttention !== undefined) checkPrefixAttention(options.prefixAttention);
      if (options.causalAttention !== undefined) checkCausalAttention(options.causalAttention);
    } catch (err) {
      throw new TypeError((err as Error).message);
    }
    const started = performance.now();
    await ensureModelPath(options.model); // first use fetches the default model (Client.create fetches the plugin)
    // The client comes up (the plugin loads, on a worker) while this thread reads the model's header.
    const clientReady = Client.create({ plugin: options.plugin, options: options.clientOptions });
    let model: OpenedModel;
    try {
      model = openModel(options.model);
    } catch (err) {
      void clientReady.then(
        (c) => c.dispose(),
        () => undefined,
      );
      throw err;
    }
    const opened = performance.now();
    let client: Client;
    try {
      client = await clientReady;
    } catch (err) {
      model.weights.close();
      throw err;
    }
    try {
      // The `ffi` forms call the addon's kernels, which only a plugin that registered them can run.
      for (const option of ['prefixAttention', 'causalAttention'] as const) {
        if (options[option]?.kind === 'kernel' && !client.prefixAttentionKernel) {
          model.weights.close();
          throw new TypeError(`${option} 'ffi' (the addon's fused kernel) needs a CPU plugin whose FFI extension registers handlers; platform ${client.platformName} has no such kernel`);
        }
      }
      const weightChoice = chooseWeightType(settings.weights, { platform: client.platformName, config: model.config });
      // Streams: each tensor is read, converted and uploaded before the next is read.
      const loadPrograms = loadProgramCache(client, options.diskCache ?? true);
      const weights = await uploadWeights(client, model.config, model.weights, weightChoice.weightType, {
        programs: loadPrograms.programs,
      }).finally(() => {
        model.weights.close();
        return loadPrograms.close();
      });
      const scorer = new Scorer({ modelName: model.name, config: model.config, tokenizer: () => model.tokenizer, client, weights, weightChoice, options, settings });
      // A template named at load must fit the model: say so now, not at the first rerank.
      if (options.rerankTemplate !== undefined) scorer.rerankTemplate();
      scorer.log({
        event: 'model_loaded',
        model: model.name,
        path: model.path,
        platform: `${client.platformName} ${client.platformVersion}`,
        precision: scorer.precision,
        prefixAttention: scorer.prefixAttention,
        causalAttention: scorer.causalAttention,
        weights: weightChoice.weightType,
        weightsReason: weightChoice.reason,
        batching: scorer.batching,
        budget: scorer.budget,
        deviceMemoryBytes: client.deviceMemoryBytes,
        platformFacts: scorer.platform.known ? scorer.platform.measured : `no facts for platform ${client.platformName}: the CPU's are used`,
        weightBytes: weights.bytes,
        seconds: (performance.now() - started) / 1000,
        // Where the load time went: opening the file (config; a Hugging Face directory's tokenizer), then per
        // array read, convert, upload, and the load's programs. A GGUF file's tokenizer is built later (see tokenizer).
        steps: { openSeconds: (opened - started) / 1000, ...weights.timings },
      });
      return scorer;
    } catch (err) {
      client.dispose();
      throw err;
    }
  }

  /**
   * The model's tokenizer. A GGUF file's is built from its metadata on first
   * use (the first text request, a rerank template, or warmup()), not at
   * load: on a 2-core CPU building it took ~0.25 s that the weight decode
   * needed, and requests given token ids never use it.
   */
  get tokenizer(): Tokenizer {
    if (this.builtTokenizer) return this.builtTokenizer;
    const start = performance.now();
    const tokenizer = this.buildTokenizer();
    this.builtTokenizer = tokenizer;
    this.log({ event: 'tokenizer_built', model: this.modelName, seconds: (performance.now() - start) / 1000 });
    return tokenizer;
  }

  /** Text -> token ids, without special tokens. */
  tokenize(text: string): number[] {
    if (typeof text !== 'string') throw new TypeError('tokenize() takes a string');
    return this.tokenizer.encode(text);
  }

  /** Calls waiting for or holding the device (each waiting call asks for one turn, even when another call's turn takes it along). */
  get pending(): number {
    return this.lock.pending;
  }

  /**
   * Validates a library request (camelCase fields) into token space; throws
   * ScoreInputError naming the field. Nothing runs.
   */
  normalize(request: ScoreRequest): NormalizedRequest {
    this.assertLive();
    return normalizeRequest(request, this.requestContext);
  }

  /** Validates an SGLang Score API body (snake_case JSON, as received over HTTP) into token space. */
  normalizeBody(body: unknown): NormalizedRequest {
    this.assertLive();
    return normalizeRequestBody(body, this.requestContext);
  }

  /** Scores a library request (camelCase fields). */
  async score(request: ScoreLibraryRequest, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    const normalized = this.normalize(request);
    const algorithm = options.algorithm ?? (request && typeof request === 'object' ? request.algorithm : undefined);
    return this.scoreNormalized(normalized, { ...options, ...(algorithm !== undefined ? { algorithm } : {}) });
  }

  /** Scores an SGLang Score API body (snake_case JSON). */
  async scoreBody(body: unknown, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    return this.scoreNormalized(this.normalizeBody(body), options);
  }

  /** Scores a request that `normalize`/`normalizeBody` already validated: the one path every entry takes. */
  async scoreNormalized(request: NormalizedRequest, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    this.assertLive();
    const job = this.chosenJob(request, options.algorithm, options.signal);
    // A call that may share a pass waits with the others; the rest wait in the device line.
    if (job.joins) return this.batcher.submit(job, options.signal);
    return this.onDevice(() => this.execute(request, job.choice, options.signal), options.signal);
  }

  /**
   * Scores several normalized requests in one hold of the device. With
   * batching 'invariant' each runs its own plan, exactly as it would alone,
   * so its scores do not depend on the others (docs/design.md "Batch invariance"); with
   * 'cross-request' those that can share passes do (within 1e-5 of their
   * scores alone). Requests with the same query share its prefill through
   * the prefix cache. One request's failure or abort does not affect the
   * others.
   */
  async scoreBatch(jobs: readonly BatchJob[], options: Pick<ScoreCallOptions, 'algorithm'> = {}): Promise<BatchOutcome[]> {
    this.assertLive();
    const chosen = jobs.map((job) => {
      try {
        return { job: this.chosenJob(job.request, options.algorithm, job.signal) };
      } catch (error) {
        return { error };
      }
    });
    const live = (): boolean => jobs.some((j) => !j.signal?.aborted);
    return this.onDevice(async () => {
      const runnable = chosen.flatMap((c) => ('job' in c && c.job ? [c.job] : []));
      const ran = await this.runJobs(runnable);
      let next = 0;
      return chosen.map((c): BatchOutcome => ('error' in c ? { ok: false, error: c.error } : ran[next++]));
    }, live() ? undefined : AbortSignal.abort());
  }

  /**
   * Reranks documents against a query (docs/design.md "Rerank"): every document in
   * one plan, the prompt up to the document shared. Results are sorted by
   * relevance, best first.
   */
  async rerank(request: RerankRequest, options: ScoreCallOptions = {}): Promise<RerankResponse> {
    this.assertLive();
    return this.runRerank(normalizeRerank(request, this.rerankTemplate(), this.requestContext), options);
  }

  /** Validates a rerank JSON body (the common shape, or text-embeddings-inference's). */
  normalizeRerankBody(body: unknown): NormalizedRerank {
    this.assertLive();
    return normalizeRerankBody(body, this.rerankTemplate(), this.requestContext);
  }

  /** Runs a validated rerank request. */
  async runRerank(request: NormalizedRerank, options: ScoreCallOptions = {}): Promise<RerankResponse> {
    const result = await this.scoreNormalized(request.score, options);
    return { results: rerankResults(request, result.scores), usage: result.usage, model: this.modelName, template: this.rerankTemplate().template.name };
  }

  /** The rerank template bound to this model's vocabulary (TemplateError when none fits). */
  rerankTemplate(): ResolvedTemplate {
    if (this.resolvedTemplate) return this.resolvedTemplate;
    const option = this.templateOption;
    let template: RerankTemplate;
    if (option === undefined) {
      template = chooseTemplate({ name: this.modelName, architecture: this.config.architecture }, this.tokenizer);
    } else if (typeof option === 'string') {
      const named = RERANK_TEMPLATES[option];
      if (!named) throw new TemplateError(`unknown rerank template ${JSON.stringify(option)}; built in: ${Object.keys(RERANK_TEMPLATES).join(', ')}`);
      template = named;
    } else {
      template = option;
    }
    this.resolvedTemplate = resolveTemplate(template, this.tokenizer);
    return this.resolvedTemplate;
  }

  /** The plan a request would run, its passes and costs (nothing runs). */
  explain(request: ScoreLibraryRequest): PlanExplanation {
    const normalized = this.normalize(request);
    const choice = this.choose(normalized, request.algorithm);
    return explanation(choice, this.precision);
  }

  /**
   * Builds the tokenizer and compiles exactly the programs that requests of
   * these shapes run (progress bar on stderr): the plan of each shape is made
   * as a real request's would be.
   * With batching 'cross-request', also the shared passes of 2 to
   * WARMUP_BATCH_REQUESTS waiting requests of each shape.
   */
  async warmup(shapes: readonly WarmupShape[], progress: NodeJS.WritableStream | false = process.stderr): Promise<void> {
    this.assertLive();
    void this.tokenizer;
    const programs = new Map<string, ProgramKey>();
    for (const s of shapes) {
      for (const pass of this.planFor(warmupShape(s), s.algorithm).plan.passes) programs.set(programKeyString(pass.program), pass.program);
      if (this.mayJoin(s.algorithm)) for (const program of batchPrograms(warmupShape(s), this.sizing, WARMUP_BATCH_REQUESTS)) programs.set(programKeyString(program), program);
    }
    const items = [...programs.values()].map((program) => ({ key: this.runner.key(program), source: this.runner.source(program) }));
    await this.runner.jit.warmup(items, { progress });
  }

  stats(): ScorerStats {
    return {
      jit: this.runner.jit.counters(),
      prefixCache: this.prefixCache.counters(),
      runs: { ...this.runs },
      itemsScored: this.itemsScored,
      tokensScored: this.tokensScored,
      devicePasses: this.runner.executions,
      batchedPasses: this.batchedPasses,
      batchedRequests: this.batchedRequests,
    };
  }

  /** Frees the device memory (weights, caches, executables). Idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.prefixCache.clear();
    this.runner.dispose();
    this.weights.dispose();
    this.client.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** The plan of a request of this shape: the one place requests, warmup and explain get plans from. */
  private planFor(shape: RequestShape, requested: AlgorithmChoice | undefined): PlanChoice {
    const algorithm = requested ?? this.defaultAlgorithm;
    if (!isAlgorithmChoice(algorithm)) {
      throw new TypeError(`algorithm must be one of ${ALGORITHM_CHOICES.join(', ')}; got ${JSON.stringify(algorithm)}`);
    }
    return choosePlan(shape, algorithm, this.sizing, this.costModel);
  }

  /** The plan of a request, and whether it may share passes with other requests (batching 'cross-request'). */
  private chosenJob(request: NormalizedRequest, requested: AlgorithmChoice | undefined, signal: AbortSignal | undefined): ChosenJob {
    const choice = this.choose(request, requested);
    const joins = this.mayJoin(requested) && canJoinBatch(shapeOf(request), this.sizing);
    return { request, choice, joins, ...(signal ? { signal } : {}) };
  }

  /** Batching 'cross-request', and a plan that may be a group of a shared (packed) pass: a request that names serial or prefix runs that plan. */
  private mayJoin(requested: AlgorithmChoice | undefined): boolean {
    const algorithm = requested ?? this.defaultAlgorithm;
    return this.batching === 'cross-request' && (algorithm === 'auto' || algorithm === 'packed');
  }

  /**
   * Runs jobs in one hold of the device: those that join share passes
   * (makeBatchPlan), every other one runs its own plan. Answers each job.
   */
  private async runJobs(jobs: readonly ChosenJob[]): Promise<JobOutcome<ScoreResult>[]> {
    const outcomes: JobOutcome<ScoreResult>[] = new Array(jobs.length);
    const joining = jobs.flatMap((job, i) => (job.joins && !job.signal?.aborted ? [i] : []));
    const plan = makeBatchPlan(joining.map((i) => shapeOf(jobs[i].request)), this.sizing);
    const together = new Set(plan.passes.flatMap((pass) => pass.groups.map((g) => joining[g.request])));
    if (together.size > 0) {
      const requests = joining.map((i) => jobs[i].request);
      const logprobs = requests.map((n) => new Float32Array(n.itemTokens.length * n.labels.length));
      try {
        await runBatchPasses(plan.passes, requests, logprobs, this.runner);
        this.batchedPasses += plan.passes.length;
        this.batchedRequests += together.size;
        joining.forEach((i, k) => {
          if (!together.has(i)) return;
          const job = jobs[i];
          outcomes[i] = job.signal?.aborted ? { ok: false, error: new AbortError() } : { ok: true, result: this.result(job.request, 'packed', logprobs[k]) };
        });
      } catch (error) {
        for (const i of together) outcomes[i] = { ok: false, error };
      }
    }
    for (let i = 0; i < jobs.length; i++) {
      if (together.has(i)) continue;
      try {
        outcomes[i] = { ok: true, result: await this.execute(jobs[i].request, jobs[i].choice, jobs[i].signal) };
      } catch (error) {
        outcomes[i] = { ok: false, error };
      }
    }
    return outcomes;
  }

  private choose(request: NormalizedRequest, requested: AlgorithmChoice | undefined): PlanChoice {
    const choice = this.planFor(shapeOf(request), requested);
    if (request.itemFirst && !this.loggedItemFirst) {
      this.log({ event: 'item_first_serial', message: 'item_first requests run on the serial path (no shared query prefix)' });
      this.loggedItemFirst = true;
    }
    return choice;
  }

  /** Runs a chosen plan (the device lock is held by the caller). */
  private async execute(n: NormalizedRequest, choice: PlanChoice, signal: AbortSignal | undefined): Promise<ScoreResult> {
    this.assertLive();
    const usage: ScoreUsage = { promptTokens: n.promptTokens, completionTokens: 0, totalTokens: n.promptTokens };
    const { plan } = choice;
    if (n.itemTokens.length === 0) return { scores: [], usage, algorithm: plan.algorithm, model: this.modelName };
    const logprobs = await runPlan(plan, n, { runner: this.runner, prefixCache: this.prefixCache, ...(signal ? { signal } : {}) });
    return this.result(n, plan.algorithm, logprobs);
  }

  /** A request's answer from its label logprobs ([item][label]), counted in the stats. */
  private result(n: NormalizedRequest, algorithm: Algorithm, logprobs: Float32Array): ScoreResult {
    const usage: ScoreUsage = { promptTokens: n.promptTokens, completionTokens: 0, totalTokens: n.promptTokens };
    const scores = scoresFromLabelLogprobs(logprobs, { itemCount: n.itemTokens.length, labelCount: n.labels.length, applySoftmax: n.applySoftmax });
    this.runs[algorithm]++;
    this.itemsScored += n.itemTokens.length;
    this.tokensScored += n.promptTokens;
    return { scores, usage, algorithm, model: this.modelName };
  }

  /** Runs device work in turn (the device lock); when the device goes idle, frees the host scratch. */
  private async onDevice<T>(fn: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    try {
      return await this.lock.run(fn, signal);
    } finally {
      this.releaseWhenIdle();
    }
  }

  /**
   * With no call waiting, gives the pages XLA's temporaries freed back to the
   * OS (milliseconds, off the JS thread), so RSS shows live memory rather
   * than the largest request so far. Under load the queue is never empty and
   * nothing is trimmed: the next execution reuses those pages instead.
   */
  private releaseWhenIdle(): void {
    if (this.releasing) return;
    this.releasing = true;
    // Looked at once the caller's turn has ended (a batch calls this while it still holds the device).
    setImmediate(() => {
      if (this.lock.pending > 0) {
        this.releasing = false;
        return;
      }
      releaseFreeHostMemory()
        .catch(() => false)
        .finally(() => {
          this.releasing = false;
        });
    });
  }

  private assertLive(): void {
    if (this.disposed) throw new Error('Scorer has been disposed');
  }
}

/** A warmup shape as a request shape: `items` items of `itemTokens` tokens. */
function warmupShape(s: WarmupShape): RequestShape {
  return { queryLength: s.queryTokens, itemLengths: new Array<number>(s.items).fill(s.itemTokens), labelCount: s.labels ?? 2, itemFirst: false };
}

function explanation(choice: PlanChoice, precision: Precision): PlanExplanation {
  const passes = choice.plan.passes.map((p: Pass) => ({ program: p.program, name: programKeyString(p.program), items: p.items }));
  return { algorithm: choice.plan.algorithm, precision, reason: choice.reason, cost: choice.cost, costs: choice.costs, passes };
}

export type { Plan };
