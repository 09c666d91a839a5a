/**
 * Scorer: the library's front door. Loads a model onto a PJRT device once,
 * then scores requests: validate -> tokens -> plan -> device -> scores.
 * See docs/scorer-api.md for the contract the service builds on.
 */
import { ModelConfig } from '../model/config';
import { DeviceWeights, uploadWeights } from '../model/device-weights';
import { ensureModelPath } from '../model/default-model';
import { loadModel } from '../model/load';
import { Tokenizer } from '../model/tokenizer';
import { Client } from '../runtime/client';
import { bucketLadder, DEFAULT_TOKEN_BUCKETS } from './buckets';
import { DecoderRunner } from './decoder-runner';
import { DeviceLock } from './device-lock';
import { JitCacheCounters } from './jit-cache';
import { Algorithm, ALGORITHMS, Budget, Ladders, PlanContext, PlanInput, planPasses, runPacked, runPrefix, runSerial } from './plans';
import { PrefixCache, PrefixCacheCounters } from './prefix-cache';
import { normalizeRequest, normalizeRequestBody, NormalizedRequest, ScoreRequest, ScoreRequestContext } from './request';
import { scoresFromLabelLogprobs } from './scores';
import { chooseAlgorithm, CostModel, costModelFor } from './selector';

export type AlgorithmChoice = Algorithm | 'auto';

export interface ScorerOptions {
  /** GGUF file or Hugging Face directory; default PJRT_SCORE_MODEL, else the cached default model. */
  readonly model?: string;
  /** PJRT plugin; default PJRT_PLUGIN_PATH, else the cached CPU plugin. */
  readonly plugin?: string;
  /** Plan for every request unless the request says otherwise; default 'auto'. */
  readonly algorithm?: AlgorithmChoice;
  /** Most items per request; default 1024. */
  readonly maxItems?: number;
  /** Most tokens per request (the query once plus every item); default 65536. */
  readonly maxRequestTokens?: number;
  /** Structured log events. */
  readonly log?: (event: Record<string, unknown>) => void;
  /** On-disk executable cache: true (default, in the cache directory), a directory, or false. */
  readonly diskCache?: boolean | string;
  /** Bytes of query K/V kept across requests; default 512 MiB. */
  readonly prefixCacheBytes?: number;
  /** Per-pass memory budget. */
  readonly budget?: Partial<Budget>;
}

export interface ScoreCallOptions {
  /** Aborting drops the work that has not run yet; the call rejects with an AbortError. */
  readonly signal?: AbortSignal;
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
}

/** Shapes to compile before serving: a request of query length P, N items of length L. */
export interface WarmupShape {
  readonly queryTokens: number;
  readonly itemTokens: number;
  readonly items: number;
  readonly labels?: number;
  readonly algorithm?: Algorithm;
}

// 1536 item rows per pass: 64 items of 20 tokens, the best chunk measured on a 2-core CPU
// (items/s within 5% from 32 to 128 items per pass).
const DEFAULT_BUDGET: Budget = { tokensPerPass: 1536, scoreBytesPerPass: 256 * 2 ** 20 };

function isAlgorithmChoice(x: unknown): x is AlgorithmChoice {
  return x === 'auto' || (typeof x === 'string' && (ALGORITHMS as readonly string[]).includes(x));
}

export class Scorer implements Disposable {
  readonly modelName: string;
  readonly config: ModelConfig;
  readonly tokenizer: Tokenizer;
  readonly client: Client;
  private readonly runner: DecoderRunner;
  private readonly weights: DeviceWeights;
  private readonly lock = new DeviceLock();
  private readonly prefixCache: PrefixCache;
  /** Bucket ladders (token lengths, item lengths, counts, labels). */
  readonly ladders: Ladders;
  /** Per-pass memory budget. */
  readonly budget: Budget;
  private readonly costModel: CostModel;
  private readonly requestContext: ScoreRequestContext;
  private readonly defaultAlgorithm: AlgorithmChoice;
  private readonly log: (event: Record<string, unknown>) => void;
  private readonly runs: Record<Algorithm, number> = { serial: 0, packed: 0, prefix: 0 };
  private itemsScored = 0;
  private tokensScored = 0;
  private disposed = false;
  private loggedItemFirst = false;

  private constructor(init: {
    modelName: string;
    config: ModelConfig;
    tokenizer: Tokenizer;
    client: Client;
    weights: DeviceWeights;
    options: ScorerOptions;
  }) {
    const { options } = init;
    this.modelName = init.modelName;
    this.config = init.config;
    this.tokenizer = init.tokenizer;
    this.client = init.client;
    this.weights = init.weights;
    this.log = options.log ?? (() => undefined);
    this.defaultAlgorithm = options.algorithm ?? 'auto';
    this.budget = { ...DEFAULT_BUDGET, ...options.budget };
    this.prefixCache = new PrefixCache(options.prefixCacheBytes ?? 512 * 2 ** 20);
    const context = this.config.contextLength;
    this.ladders = {
      tokens: bucketLadder({ ...DEFAULT_TOKEN_BUCKETS, min: 8, max: Math.max(context, 8) }),
      itemTokens: bucketLadder({ min: 8, max: Math.max(context, 8), steps: [1.25, 1.5, 1.75], align: 4 }),
      counts: bucketLadder({ min: 1, max: 4096, steps: [1.5] }),
      labels: bucketLadder({ min: 2, max: Math.max(2, this.config.vocabSize) }),
    };
    this.costModel = costModelFor(this.config);
    this.runner = new DecoderRunner(this.client, this.config, this.weights, `${this.modelName}-${this.config.architecture}`, {
      disk: options.diskCache ?? true,
    });
    this.requestContext = {
      vocabSize: this.config.vocabSize,
      contextLength: context,
      maxItems: options.maxItems ?? 1024,
      maxRequestTokens: options.maxRequestTokens ?? 65536,
      tokenize: (text) => this.tokenizer.encode(text),
      bosTokenId: this.config.bosTokenId,
      addBos: this.config.addBos,
    };
  }

  /** Loads the model, creates the client, uploads the weights. */
  static async load(options: ScorerOptions = {}): Promise<Scorer> {
    if (options === null || typeof options !== 'object') throw new TypeError('Scorer.load() takes an options object');
    if (options.algorithm !== undefined && !isAlgorithmChoice(options.algorithm)) {
      throw new TypeError(`algorithm must be one of auto, ${ALGORITHMS.join(', ')}; got ${JSON.stringify(options.algorithm)}`);
    }
    for (const key of ['maxItems', 'maxRequestTokens', 'prefixCacheBytes'] as const) {
      const v = options[key];
      if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0)) throw new TypeError(`${key} must be a non-negative integer, got ${v}`);
    }
    const started = performance.now();
    await ensureModelPath(options.model); // first use fetches the default model (Client.create fetches the plugin)
    const model = loadModel(options.model);
    const client = await Client.create({ plugin: options.plugin });
    try {
      const weights = await uploadWeights(client, model.config, model.weights);
      const scorer = new Scorer({ modelName: model.name, config: model.config, tokenizer: model.tokenizer, client, weights, options });
      scorer.log({
        event: 'model_loaded',
        model: model.name,
        path: model.path,
        platform: `${client.platformName} ${client.platformVersion}`,
        weightBytes: weights.bytes,
        seconds: (performance.now() - started) / 1000,
      });
      return scorer;
    } catch (err) {
      client.dispose();
      throw err;
    }
  }

  /** Text -> token ids, without special tokens. */
  tokenize(text: string): number[] {
    if (typeof text !== 'string') throw new TypeError('tokenize() takes a string');
    return this.tokenizer.encode(text);
  }

  /** Calls waiting for or holding the device. */
  get pending(): number {
    return this.lock.pending;
  }

  /** Scores a library request (camelCase fields). */
  async score(request: ScoreLibraryRequest, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    this.assertLive();
    const normalized = normalizeRequest(request, this.requestContext);
    const algorithm = request && typeof request === 'object' ? request.algorithm : undefined;
    if (algorithm !== undefined && !isAlgorithmChoice(algorithm)) {
      throw new TypeError(`algorithm must be one of auto, ${ALGORITHMS.join(', ')}; got ${JSON.stringify(algorithm)}`);
    }
    return this.run(normalized, algorithm ?? this.defaultAlgorithm, options);
  }

  /** Scores an SGLang Score API body (snake_case JSON, as received over HTTP). */
  async scoreBody(body: unknown, options: ScoreCallOptions = {}): Promise<ScoreResult> {
    this.assertLive();
    const normalized = normalizeRequestBody(body, this.requestContext);
    return this.run(normalized, this.defaultAlgorithm, options);
  }

  /** Which plan `auto` would pick for a request, and why (nothing runs). */
  explain(request: ScoreLibraryRequest): { algorithm: Algorithm; reason: string; costs: Partial<Record<Algorithm, number>> } {
    const n = normalizeRequest(request, this.requestContext);
    return this.choose(this.planInput(n));
  }

  /** Compiles the programs that requests of these shapes use (progress bar on stderr). */
  async warmup(shapes: readonly WarmupShape[], progress: NodeJS.WritableStream | false = process.stderr): Promise<void> {
    this.assertLive();
    const refs = new Map<string, Parameters<DecoderRunner['prepare']>[0]>();
    for (const s of shapes) {
      const input: PlanInput = {
        queryTokens: new Array(s.queryTokens).fill(0),
        itemTokens: Array.from({ length: s.items }, () => new Array(s.itemTokens).fill(0)),
        labels: new Array(s.labels ?? 2).fill(0),
        itemFirst: false,
      };
      const algorithm = s.algorithm ?? this.choose(input).algorithm;
      for (const pass of planPasses(algorithm, input, this.ladders, this.budget, this.config.numHeads)) {
        refs.set(JSON.stringify(pass.ref), pass.ref);
      }
    }
    const items = [...refs.values()].map((ref) => ({ key: this.runner.key(ref), source: this.runner.source(ref) }));
    await this.runner.jit.warmup(items, { progress });
  }

  stats(): ScorerStats {
    return {
      jit: this.runner.jit.counters(),
      prefixCache: this.prefixCache.counters(),
      runs: { ...this.runs },
      itemsScored: this.itemsScored,
      tokensScored: this.tokensScored,
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

  private planInput(n: NormalizedRequest): PlanInput {
    return { queryTokens: n.queryTokens, itemTokens: n.itemTokens, labels: n.labels, itemFirst: n.itemFirst };
  }

  private choose(input: PlanInput): { algorithm: Algorithm; reason: string; costs: Partial<Record<Algorithm, number>> } {
    const P = this.ladders.tokens.find((t) => t >= input.queryTokens.length) ?? input.queryTokens.length;
    const cached = this.prefixCache.has(PrefixCache.key(input.queryTokens, P));
    return chooseAlgorithm(input, this.ladders, this.budget, this.costModel, this.config.numHeads, cached);
  }

  private async run(n: NormalizedRequest, requested: AlgorithmChoice, options: ScoreCallOptions): Promise<ScoreResult> {
    const usage: ScoreUsage = { promptTokens: n.promptTokens, completionTokens: 0, totalTokens: n.promptTokens };
    if (n.itemTokens.length === 0) {
      return { scores: [], usage, algorithm: requested === 'auto' ? 'packed' : requested, model: this.modelName };
    }
    const input = this.planInput(n);
    let algorithm: Algorithm;
    if (n.itemFirst) {
      // No shared prefix: the serial path is the only correct one.
      if (!this.loggedItemFirst) {
        this.log({ event: 'item_first_serial', message: 'item_first requests run on the serial path (no shared query prefix)' });
        this.loggedItemFirst = true;
      }
      algorithm = 'serial';
    } else if (requested === 'auto') {
      algorithm = this.choose(input).algorithm;
    } else {
      algorithm = requested;
    }
    const logprobs = await this.lock.run(async () => {
      this.assertLive();
      const ctx: PlanContext = { runner: this.runner, ladders: this.ladders, budget: this.budget, prefixCache: this.prefixCache, signal: options.signal };
      switch (algorithm) {
        case 'serial':
          return runSerial(input, ctx);
        case 'packed':
          return runPacked(input, ctx);
        case 'prefix':
          return runPrefix(input, ctx);
      }
    }, options.signal);
    const flat = new Float32Array(logprobs.length * n.labels.length);
    logprobs.forEach((row, i) => flat.set(row, i * n.labels.length));
    const scores = scoresFromLabelLogprobs(flat, { itemCount: logprobs.length, labelCount: n.labels.length, applySoftmax: n.applySoftmax });
    this.runs[algorithm]++;
    this.itemsScored += n.itemTokens.length;
    this.tokensScored += n.promptTokens;
    return { scores, usage, algorithm, model: this.modelName };
  }

  private assertLive(): void {
    if (this.disposed) throw new Error('Scorer has been disposed');
  }
}
