/**
 * Scorer: the library's front door. Loads a model onto a PJRT device once,
 * then scores requests: validate -> tokens -> plan -> device -> scores.
 * See docs/scorer-api.md for the contract the service builds on.
 */
import { ModelConfig } from '../model/config';
import { DeviceWeights, uploadWeights } from '../device-weights/upload';
import { chooseWeightType, WeightTypeChoice } from '../device-weights/choose';
import { CausalAttention, checkCausalAttention, checkPrefixAttention, PrefixAttention, WeightType } from '../hlo';
import { ensureModelPath } from '../model/default-model';
import { openModel } from '../model/load';
import { Tokenizer } from '../model/tokenizer';
import { Client } from '../runtime/client';
import { DisposedError } from '../runtime/errors';
import { attentionKernelPaths, kernelThreads, KernelPaths } from '../runtime/kernel-paths';
import { checkXlaOptions, XlaOptions } from '../runtime/xla-options';
import { releaseFreeHostMemory } from '../runtime/host-memory';
import { bucketLadder, DEFAULT_TOKEN_BUCKETS } from './buckets';
import { DecoderRunner } from './decoder-runner';
import { AlgorithmChoice, ALGORITHM_CHOICES, Batching, pickSettings, Precision, SCORER_SETTINGS, ScorerSettings, settingDefaults } from './options';
import { AttentionKernelChoice, attentionKernelChoice, choosePrecision, PrecisionChoice } from './precision-choice';
import { DotSpeeds, dotSpeedsForAuto } from './dot-speed';
import { AdmissionQueue, Outcome } from './admission';
import { AbortError } from './errors';
import { loadProgramCache } from './load-programs';
import { Algorithm, Budget, Ladders, Pass, Plan, ProgramKey, programKeyString, RequestShape, shapeOf, Sizing } from './plan';
import { isCudnnPinnedPlugin, pinCudnnForm, unpinnedPluginNote } from './cudnn-pin';
import { budgetForMemory, defaultCausalAttention, defaultPrefixAttention, platformFacts, PlatformFacts } from './platform';
import { PlatformFactsOverride, platformFactsOverride, withOverride } from './platform-override';
import { attentionTags, modelAttention } from './attention-forms';
import { PrefixCache } from './prefix-cache';
import { normalizeRequest, normalizeRequestBody, NormalizedRequest, ScoreRequest, ScoreRequestContext } from './request';
import { normalizeRerank, normalizeRerankBody, NormalizedRerank, RerankRequest, rerankResults } from './rerank';
import { chooseTemplate, RERANK_TEMPLATES, RerankTemplate, resolveTemplate, ResolvedTemplate, TemplateError } from './rerank-template';
import { runPlan } from './run-plan';
import { batchPrograms, canJoinBatch, makeBatchPlan } from './batch-plan';
import { runBatchPasses } from './run-batch';
import { scoresFromLabelLogprobs } from './scores';
import { choosePlan, CostModel, costModelFor, PlanChoice, QueryInCache } from './selector';

export type {
  AlgorithmChoice,
  BatchJob,
  BatchOutcome,
  DevicePassTiming,
  PlanExplanation,
  RerankResponse,
  ScoreCallOptions,
  ScoreLibraryRequest,
  ScoreResult,
  ScorerOptions,
  ScorerStats,
  ScoreUsage,
  WarmupShape,
} from './scorer-types';
import type { Bf16Typing, BatchJob, BatchOutcome, DevicePassTiming, PlanExplanation, RerankResponse, ScoreCallOptions, ScoreLibraryRequest, ScoreResult, ScorerOptions, ScorerStats, ScoreUsage, WarmupShape } from './scorer-types';

/** A request with its plan chosen, as the device runs it; `joins` when it may share a pass with other requests. */
interface ChosenJob {
  readonly request: NormalizedRequest;
  readonly choice: PlanChoice;
  readonly signal?: AbortSignal;
  readonly joins: boolean;
  readonly onPass?: (pass: DevicePassTiming) => void;
}

/** Warmup compiles the shared passes of up to this many waiting requests of one shape (batching 'cross-request'). */
const WARMUP_BATCH_REQUESTS = 16;

function isAlgorithmChoice(x: unknown): x is AlgorithmChoice {
  return (ALGORITHM_CHOICES as readonly unknown[]).includes(x);
}

type LoadSettings = Required<Omit<ScorerSettings, 'model' | 'plugin' | 'rerankTemplate'>> & ScorerSettings;

/**
 * Scorer.load's options, checked in one place before anything loads (a
 * TypeError naming the option): the settings-table options by their rows,
 * with the table's defaults, and the library's own.
 */
function checkScorerOptions(options: ScorerOptions): LoadSettings {
  if (options === null || typeof options !== 'object') throw new TypeError('Scorer.load() takes an options object');
  // A template object is the library's own (checked when it is resolved); a name is checked against the built-in ones.
  const picked = pickSettings(SCORER_SETTINGS, options, (s) => s.key === 'rerankTemplate' && typeof options.rerankTemplate === 'object');
  try {
    if (options.prefixAttention !== undefined) checkPrefixAttention(options.prefixAttention);
    if (options.causalAttention !== undefined) checkCausalAttention(options.causalAttention);
    if (options.xlaOptions !== undefined) checkXlaOptions(options.xlaOptions);
  } catch (err) {
    throw new TypeError((err as Error).message);
  }
  return { ...settingDefaults(SCORER_SETTINGS), ...picked };
}

/**
 * The attention forms bound to the loaded client: the `kernel` forms call the addon's kernels, which only a
 * plugin that registered them can run; the `cudnn` forms get the loaded plugin's version written in, or are
 * refused (cudnn-pin.ts). A TypeError before the weights upload.
 */
function bindAttentionForms(options: ScorerOptions, client: Client): ScorerOptions {
  let bound = options;
  for (const option of ['prefixAttention', 'causalAttention'] as const) {
    const form = options[option];
    if (form?.kind === 'kernel' && !client.prefixAttentionKernel) {
      throw new TypeError(`${option} 'ffi' (the addon's fused kernel) needs a CPU plugin whose FFI extension registers handlers; platform ${client.platformName} has no such kernel`);
    }
    if (form?.kind === 'cudnn') bound = { ...bound, [option]: pinCudnnForm(form, option, client.pluginPath, client.platformName) };
  }
  return bound;
}

export class Scorer implements Disposable {
  readonly modelName: string;
  /** The model file's stored tensor types ("Q4_1 (210), F32 (61), Q8_0 (1)"). */
  readonly quantization: string;
  readonly config: ModelConfig;
  readonly client: Client;
  /** Builds the tokenizer (parsing the file's vocabulary and merges): once, at first use or warmup. */
  private readonly buildTokenizer: () => Tokenizer;
  private builtTokenizer: Tokenizer | undefined;
  private readonly runner: DecoderRunner;
  private readonly weights: DeviceWeights;
  private readonly prefixCache: PrefixCache;
  /** Bucket ladders (token lengths, item lengths, counts, labels). */
  readonly ladders: Ladders;
  /** Per-pass memory budget. */
  readonly budget: Budget;
  /** The platform's facts this Scorer sizes and costs its plans with (platform.ts). */
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
  /** The XLA options every program compiles with: the platform's, the xlaOptions option over them. */
  readonly xlaOptions: XlaOptions;
  /** Why this weight type (the option, or what 'auto' saw). */
  readonly weightChoice: WeightTypeChoice;
  /** How requests with different queries share the device. */
  readonly batching: Batching;
  /** The one line in front of the device (admission.ts). */
  private readonly queue: AdmissionQueue<ChosenJob, ScoreResult>;
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
  /** Set by close(): resolves once the calls made before it are answered and the Scorer is disposed. */
  private closing: Promise<void> | null = null;
  private loggedItemFirst = false;
  /** A trim of the host heap is scheduled or running (releaseWhenIdle). */
  private releasing = false;
  private readonly templateOption: string | RerankTemplate | undefined;
  private resolvedTemplate: ResolvedTemplate | null = null;

  private constructor(init: {
    modelName: string;
    quantization: string;
    config: ModelConfig;
    tokenizer: () => Tokenizer;
    client: Client;
    weights: DeviceWeights;
    weightChoice: WeightTypeChoice;
    options: ScorerOptions;
    settings: LoadSettings;
    /** PJRT_SCORE_PLATFORM_FACTS, read at load (platform-override.ts). */
    factsOverride: PlatformFactsOverride;
    xlaOptions: XlaOptions;
    /** What 'auto' measured on this CPU (dot-speed.ts), or null. */
    dots: DotSpeeds | null;
  }) {
    const { options, settings } = init;
    this.modelName = init.modelName;
    this.quantization = init.quantization;
    this.config = init.config;
    this.buildTokenizer = init.tokenizer;
    this.client = init.client;
    this.weights = init.weights;
    this.weightType = init.weights.weightType;
    this.weightChoice = init.weightChoice;
    this.log = options.log ?? (() => undefined);
    this.defaultAlgorithm = settings.algorithm;
    this.templateOption = options.rerankTemplate;
    this.xlaOptions = init.xlaOptions;
    const facts = withOverride(platformFacts(this.client.platformName, this.kernelPaths()?.tried ?? null), init.factsOverride);
    this.platform = facts;
    this.budget = { ...budgetForMemory(facts.budget, this.client.deviceMemoryBytes), ...options.budget };
    this.prefixCache = new PrefixCache(settings.prefixCacheBytes);
    const context = this.config.contextLength;
    this.ladders = {
      tokens: bucketLadder({ ...DEFAULT_TOKEN_BUCKETS, min: 8, max: Math.max(context, 8) }),
      itemTokens: bucketLadder({ min: 8, max: Math.max(context, 8), steps: [1.25, 1.5, 1.75], align: 4 }),
      queryTokens: bucketLadder({ min: 8, max: Math.max(context, 8), steps: facts.queryTokenSteps, align: 4 }),
      counts: bucketLadder({ min: 1, max: 4096, steps: facts.countSteps }),
      labels: bucketLadder({ min: 2, max: Math.max(2, this.config.vocabSize) }),
    };
    this.costModel = costModelFor(this.config, facts.cost);
    this.sizing = { ladders: this.ladders, budget: this.budget, numHeads: this.config.numHeads };
    this.precisionChoice = choosePrecision(settings.precision, this.client.platformName, this.kernelPaths(), init.dots);
    this.precision = this.precisionChoice.precision;
    // The platform's default forms; cuDNN's (bf16 q, k, v) only under bf16 dots with the pinned plugin.
    const { pluginPath, platformName } = this.client;
    const pinned = isCudnnPinnedPlugin(pluginPath, platformName);
    const available = { kernel: this.client.prefixAttentionKernel, cudnn: this.precision === 'bf16' && pinned };
    const cudnnMissed =
      this.precision === 'bf16' && !pinned && facts.prefixAttentionWithCudnn && !options.prefixAttention && !options.causalAttention
        ? unpinnedPluginNote(pluginPath)
        : undefined;
    const attention = modelAttention(
      this.config,
      {
        prefixAttention: options.prefixAttention ?? pinCudnnForm(defaultPrefixAttention(facts, available), 'prefixAttention', pluginPath, platformName),
        causalAttention: options.causalAttention ?? pinCudnnForm(defaultCausalAttention(facts, available), 'causalAttention', pluginPath, platformName),
      },
      facts,
    );
    this.prefixAttention = attention.prefixAttention;
    this.causalAttention = attention.causalAttention;
    const groupedNote = settings.batching === 'cross-request' ? attention.groupedNote : undefined;
    this.attentionNote = [attention.note, groupedNote, cudnnMissed].filter((n) => n !== undefined).join('; ') || undefined;
    this.bf16 = {
      matrices: this.weightType === 'bf16' ? this.weights.bf16Matrices : null,
      products: this.precision === 'bf16' && facts.bf16Products,
      ...(facts.overridden ? { overridden: facts.overridden } : {}),
    };
    this.batching = settings.batching;
    const takeAlong = this.batching === 'cross-request' ? 'all' : settings.coalesce ? 'same-query' : 'none';
    const limits = { maxItems: settings.maxItems, maxRequestTokens: settings.maxRequestTokens };
    this.queue = new AdmissionQueue({ queueSize: settings.queueSize, takeAlong, ...limits }, (jobs) => this.runTurn(jobs));
    this.runner = new DecoderRunner(
      this.client,
      this.config,
      this.weights,
      `${this.modelName}-${this.config.architecture}`,
      this.precision,
      { disk: options.diskCache ?? true, maxEntries: settings.jitCacheEntries },
      { prefixAttention: this.prefixAttention, causalAttention: this.causalAttention, grouped: attention.grouped, bf16Products: facts.bf16Products, xlaOptions: this.xlaOptions },
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
    const settings = checkScorerOptions(options);
    // The measurement knob is read before anything loads: a bad one loads nothing.
    const factsOverride = platformFactsOverride();
    const started = performance.now();
    const modelPath = await ensureModelPath(options.model); // first use fetches the default model (Client.create fetches the plugin)
    // What a failed load releases, last acquired first. The model file is closed in every case.
    const release: (() => void)[] = [];
    // The client comes up (the plugin loads, on a worker) while this thread reads the model's header.
    const clientReady = Client.create({ plugin: options.plugin, options: options.clientOptions });
    release.push(() =>
      void clientReady.then(
        (c) => c.dispose(), // disposes its children too: the weights, the executables
        () => undefined,
      ),
    );
    try {
      const model = openModel(modelPath);
      let closed = false;
      const closeModel = (): void => {
        if (!closed) model.weights.close();
        closed = true;
      };
      try {
        const opened = performance.now();
        const client = await clientReady;
        const bound = bindAttentionForms(options, client);
        const weightChoice = chooseWeightType(settings.weights, { platform: client.platformName, config: model.config });
        // How bf16 matrices are typed and the XLA options are platform facts (the CPU class changes neither).
        const facts = withOverride(platformFacts(client.platformName), factsOverride);
        const xlaOptions: XlaOptions = Object.freeze({ ...facts.xlaOptions, ...options.xlaOptions });
        // Streams: each tensor is read, converted and uploaded before the next is read.
        const loadPrograms = loadProgramCache(client, options.diskCache ?? true, xlaOptions);
        const weights = await uploadWeights(client, model.config, model.weights, weightChoice.weightType, {
          programs: loadPrograms.programs,
          bf16Matrices: facts.bf16Matrices,
        }).finally(() => {
          closeModel();
          return loadPrograms.close();
        });
        // 'auto' on a CPU with bf16 dot units times bf16 against f32 dots (once per machine: dot-speed.ts).
        const kernel = client.prefixAttentionKernel ? attentionKernelPaths(model.config.headDim) : null;
        const dots = settings.precision === 'auto' ? await dotSpeedsForAuto(client, kernel, model.config.hiddenSize, model.config.intermediateSize) : null;
        const scorer = new Scorer({
          modelName: model.name,
          quantization: model.quantization,
          config: model.config,
          tokenizer: () => model.tokenizer,
          client,
          weights,
          weightChoice,
          options: bound,
          settings,
          factsOverride,
          xlaOptions,
          dots,
        });
        // A template named at load must fit the model: say so now, not at the first rerank.
        if (options.rerankTemplate !== undefined) scorer.rerankTemplate();
        scorer.log({
          event: 'model_loaded',
          model: model.name,
          path: model.path,
          platform: `${client.platformName} ${client.platformVersion}`,
          precision: scorer.precision,
          precisionReason: scorer.precisionChoice.reason,
          attentionKernel: scorer.attentionKernel(),
          prefixAttention: scorer.prefixAttention,
          causalAttention: scorer.causalAttention,
          ...(scorer.attentionNote ? { attentionNote: scorer.attentionNote } : {}),
          ...(kernel ? threadsLog() : {}),
          family: model.config.architecture,
          quantization: model.quantization,
          contextLength: model.config.contextLength,
          weights: weightChoice.weightType,
          weightsReason: weightChoice.reason,
          bf16: scorer.bf16,
          ...(Object.keys(scorer.xlaOptions).length ? { xlaOptions: scorer.xlaOptions } : {}),
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
      } finally {
        closeModel();
      }
    } catch (err) {
      for (const undo of release.reverse()) undo();
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

  /** Calls waiting in the admission queue. */
  get queueDepth(): number {
    return this.queue.queueDepth;
  }

  /** Calls in the device's turn now. */
  get inFlight(): number {
    return this.queue.inFlight;
  }

  /** Prompt tokens of the calls waiting in the admission queue. */
  get queuedTokens(): number {
    return this.queue.queuedTokens;
  }

  /** Seconds a call refused by a full queue should wait before retrying. */
  retryAfterSeconds(): number {
    return this.queue.retryAfterSeconds();
  }

  /** Resolves when no call waits or runs. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /**
   * Validates a library request (camelCase fields) into token space; throws
   * ScoreInputError naming the field. Nothing runs.
   */
  normalize(request: ScoreRequest): NormalizedRequest {
    this.assertOpen();
    return normalizeRequest(request, this.requestContext);
  }

  /** Validates an SGLang Score API body (snake_case JSON, as received over HTTP) into token space. */
  normalizeBody(body: unknown): NormalizedRequest {
    this.assertOpen();
    return normalizeRequestBody(body, this.requestContext);
  }

  /** Scores a library request (camelCase fields). */
  async score(request: ScoreLibraryRequest, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    const normalized = this.normalize(request);
    const algorithm = options.algorithm ?? (request && typeof request === 'object' ? request.algorithm : undefined);
    const result = await this.scoreNormalized(normalized, { ...options, ...(algorithm !== undefined ? { algorithm } : {}) });
    return normalized.truncation ? { ...result, truncation: normalized.truncation } : result;
  }

  /** Scores an SGLang Score API body (snake_case JSON). */
  async scoreBody(body: unknown, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    return this.scoreNormalized(this.normalizeBody(body), options);
  }

  /** Scores a request that `normalize`/`normalizeBody` already validated: the one path every entry takes. */
  async scoreNormalized(request: NormalizedRequest, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    this.assertOpen();
    const job = { ...this.chosenJob(request, options.algorithm, options.signal), ...(options.onPass ? { onPass: options.onPass } : {}) };
    const { result, admission } = await this.queue.submit(job);
    options.onAdmitted?.(admission);
    return result;
  }

  /**
   * Scores several normalized requests, each through the admission queue
   * as a call of its own, queued together. With batching 'invariant' each
   * runs its own plan, exactly as it would alone, so its scores do not
   * depend on the others (docs/design.md "Batch invariance"); with
   * 'cross-request' those that can share passes do (within 1e-5 of their
   * scores alone). One request's failure, abort or refusal does not affect
   * the others.
   */
  async scoreBatch(jobs: readonly BatchJob[], options: Pick<ScoreCallOptions, 'algorithm'> = {}): Promise<BatchOutcome[]> {
    this.assertOpen();
    const results: Promise<ScoreResult>[] = new Array<Promise<ScoreResult>>(jobs.length);
    const chosen: { readonly index: number; readonly job: ChosenJob }[] = [];
    jobs.forEach((job, index) => {
      try {
        chosen.push({ index, job: this.chosenJob(job.request, options.algorithm, job.signal) });
      } catch (error) {
        results[index] = Promise.reject(error);
      }
    });
    // Queued together, so the requests that may share passes meet in one turn.
    const admitted = this.queue.submitAll(chosen.map((c) => c.job));
    chosen.forEach((c, k) => (results[c.index] = admitted[k].then((a) => a.result)));
    const settled = await Promise.allSettled(results);
    return settled.map((s): BatchOutcome => (s.status === 'fulfilled' ? { ok: true, result: s.value } : { ok: false, error: s.reason }));
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

  /** Validates a rerank JSON body: 'v1' the common shape or text-embeddings-inference's, 'v2' Cohere v2's. */
  normalizeRerankBody(body: unknown, shape: 'v1' | 'v2' = 'v1'): NormalizedRerank {
    this.assertOpen();
    return normalizeRerankBody(body, this.rerankTemplate(), this.requestContext, shape);
  }

  /** Runs a validated rerank request. */
  async runRerank(request: NormalizedRerank, options: ScoreCallOptions = {}): Promise<RerankResponse> {
    const result = await this.scoreNormalized(request.score, options);
    const truncation = request.score.truncation;
    return {
      results: rerankResults(request, result.scores),
      usage: result.usage,
      model: this.modelName,
      algorithm: result.algorithm,
      template: this.rerankTemplate().template.name,
      ...(truncation ? { truncation } : {}),
    };
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
    const xla = Object.keys(this.xlaOptions).length ? { xlaOptions: this.xlaOptions } : {};
    return { ...explanation(choice, this.precisionChoice, this.attentionKernel()), attention: this.attentionExplanation(), bf16: this.bf16, ...xla };
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

  /** The attention forms a request's passes run (the form chooser's, attention-forms.ts), and why they are not the ones asked for where they differ. */
  private attentionExplanation(): PlanExplanation['attention'] {
    return { ...attentionTags(this), ...(this.attentionNote ? { note: this.attentionNote } : {}) };
  }

  /**
   * Builds the tokenizer and compiles exactly the programs that requests of
   * these shapes run (progress bar on stderr): the plan of each shape is made
   * as a real request's would be.
   * With batching 'cross-request', also the shared passes of 2 to
   * WARMUP_BATCH_REQUESTS waiting requests of each shape.
   */
  async warmup(shapes: readonly WarmupShape[], progress: NodeJS.WritableStream | false = process.stderr): Promise<void> {
    this.assertOpen();
    void this.tokenizer;
    const programs = new Map<string, ProgramKey>();
    // A shape's first request and its repeats (the prefix cache in the price) may take different plans: both compiled.
    // A shape's first request, and its second where that keeps the query's K/V (the cache rule: its later
    // requests' hits run the same prefix programs) may take different plans: both compiled.
    const seen = (before: boolean): QueryInCache => ({ holds: () => false, keeps: (P) => this.prefixCache.keeps(this.queryCacheBytes(P)), seen: () => before });
    for (const s of shapes) {
      for (const cache of [seen(false), seen(true)]) {
        for (const pass of this.planFor(warmupShape(s), s.algorithm, cache).plan.passes) programs.set(programKeyString(pass.program), pass.program);
      }
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
      turns: this.queue.turns,
      turnRequests: this.queue.turnRequests,
    };
  }

  /**
   * Stops taking calls (a later one rejects with DisposedError), lets every
   * call already made finish, those still waiting for the device included,
   * then disposes. Idempotent: every call returns the same promise.
   */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = this.disposed ? Promise.resolve() : this.queue.idle().then(() => this.dispose());
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
    this.queue.close(() => new DisposedError('Scorer'));
    this.prefixCache.clear();
    this.runner.dispose();
    this.weights.dispose();
    this.client.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** The plan of a request of this shape: the one place requests, warmup and explain get plans from. */
  private planFor(shape: RequestShape, requested: AlgorithmChoice | undefined, cache?: QueryInCache): PlanChoice {
    const algorithm = requested ?? this.defaultAlgorithm;
    if (!isAlgorithmChoice(algorithm)) {
      throw new TypeError(`algorithm must be one of ${ALGORITHM_CHOICES.join(', ')}; got ${JSON.stringify(algorithm)}`);
    }
    return choosePlan(shape, algorithm, this.sizing, this.costModel, cache);
  }

  /** Bytes of one query's K/V at bucket P in the prefix cache (the prefill's k_cache and v_cache, f32). */
  private queryCacheBytes(P: number): number {
    const { numLayers, numKvHeads, headDim } = this.config;
    return 2 * numLayers * P * numKvHeads * headDim * 4;
  }

  /** What the prefix cache holds for this query, for the selector (a look: no hit or miss is counted). */
  private queryInCache(queryTokens: readonly number[]): QueryInCache {
    return {
      holds: (P) => this.prefixCache.has(PrefixCache.key(queryTokens, P)),
      keeps: (P) => this.prefixCache.keeps(this.queryCacheBytes(P)),
      seen: () => this.prefixCache.seen(queryTokens),
    };
  }

  /** The plan of a request, and whether it may share passes with other requests (batching 'cross-request'). */
  private chosenJob(request: NormalizedRequest, requested: AlgorithmChoice | undefined, signal: AbortSignal | undefined): ChosenJob {
    const choice = this.choose(request, requested);
    // The doorkeeper: this query's next request may keep its K/V (docs/design.md, the cache rule).
    if (request.queryTokens.length > 0) this.prefixCache.noteSeen(request.queryTokens);
    // A query the prefix cache holds runs its own extends: cheaper than its query again in a shared pass.
    const joins = this.mayJoin(requested) && choice.prefixCache !== 'hit' && canJoinBatch(shapeOf(request), this.sizing);
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
  private async runJobs(jobs: readonly ChosenJob[]): Promise<Outcome<ScoreResult>[]> {
    const outcomes: Outcome<ScoreResult>[] = new Array(jobs.length);
    const joining = jobs.flatMap((job, i) => (job.joins && !job.signal?.aborted ? [i] : []));
    const plan = makeBatchPlan(joining.map((i) => shapeOf(jobs[i].request)), this.sizing);
    const together = new Set(plan.passes.flatMap((pass) => pass.groups.map((g) => joining[g.request])));
    if (together.size > 0) {
      const requests = joining.map((i) => jobs[i].request);
      const logprobs = requests.map((n) => new Float32Array(n.itemTokens.length * n.labels.length));
      const observers = [...together].flatMap((i) => (jobs[i].onPass ? [jobs[i].onPass] : []));
      this.runner.passObserver = observers.length === 0 ? null : (pass) => observers.forEach((observe) => observe(pass));
      try {
        await runBatchPasses(plan.passes, requests, logprobs, this.runner);
        this.batchedPasses += plan.passes.length;
        this.batchedRequests += together.size;
        joining.forEach((i, k) => {
          if (!together.has(i)) return;
          const job = jobs[i];
          outcomes[i] = job.signal?.aborted ? { ok: false, error: AbortError.from(job.signal) } : { ok: true, result: this.result(job.request, 'packed', logprobs[k]) };
        });
      } catch (error) {
        for (const i of together) outcomes[i] = { ok: false, error };
      } finally {
        this.runner.passObserver = null;
      }
    }
    for (let i = 0; i < jobs.length; i++) {
      if (together.has(i)) continue;
      // One job's passes at a time hold the device (the turn is this job's now).
      this.runner.passObserver = jobs[i].onPass ?? null;
      try {
        outcomes[i] = { ok: true, result: await this.execute(jobs[i].request, jobs[i].choice, jobs[i].signal) };
      } catch (error) {
        outcomes[i] = { ok: false, error };
      } finally {
        this.runner.passObserver = null;
      }
    }
    return outcomes;
  }

  private choose(request: NormalizedRequest, requested: AlgorithmChoice | undefined): PlanChoice {
    const choice = this.planFor(shapeOf(request), requested, this.queryInCache(request.queryTokens));
    if (request.itemFirst && !this.loggedItemFirst) {
      this.log({ event: 'item_first_serial', message: 'item_first requests run on the serial path (no shared query prefix)' });
      this.loggedItemFirst = true;
    }
    return choice;
  }

  /** Runs a chosen plan (in the caller's turn of the device). */
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

  /** One turn of the device (the admission queue's): runs its jobs; when the device goes idle, frees the host scratch. */
  private async runTurn(jobs: ChosenJob[]): Promise<Outcome<ScoreResult>[]> {
    try {
      return await this.runJobs(jobs);
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
    // Looked at once the turn has ended (this is called while it still holds the device).
    setImmediate(() => {
      if (!this.queue.isIdle()) {
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
    ...(over ? { threadsNote: `the cgroup allows ${t.quota} CPUs but the affinity mask has ${t.affinity}: XLA's CPU pool follows the mask, so set the mask (taskset, or Kubernetes' static CPU manager with whole CPUs) to the quota` } : {}),
  };
}

/** A warmup shape as a request shape: `items` items of `itemTokens` tokens. */
function warmupShape(s: WarmupShape): RequestShape {
  return { queryLength: s.queryTokens, itemLengths: new Array<number>(s.items).fill(s.itemTokens), labelCount: s.labels ?? 2, itemFirst: false };
}

function explanation(choice: PlanChoice, precision: PrecisionChoice, attentionKernel: AttentionKernelChoice | null): PlanExplanation {
  const passes = choice.plan.passes.map((p: Pass) => ({ program: p.program, name: programKeyString(p.program), items: p.items }));
  return { algorithm: choice.plan.algorithm, precision: precision.precision, precisionReason: precision.reason, attentionKernel, reason: choice.reason, cost: choice.cost, costs: choice.costs, passes };
}

export type { Plan };
