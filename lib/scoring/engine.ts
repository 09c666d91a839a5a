/**
 * The Scorer's engine, wired from a load's parts (docs/design.md, "The walk of one request"): the job
 * planner (execution/jobs.ts), the admission queue and its turns (execution/admission.ts, turns.ts),
 * the decoder runner with its JIT cache (execution/decoder-runner.ts) and the prefix cache; each turn's
 * answers as results, a batch queued together, the counters. The Scorer (scorer.ts) owns the engine and
 * answers through it.
 */
import { AdmissionQueue, Outcome } from './execution/admission';
import { DecoderRunner } from './execution/decoder-runner';
import { JobPlanner } from './execution/jobs';
import { PrefixCache } from './execution/prefix-cache';
import { ChosenJob, TurnExecutor } from './execution/turns';
import type { AlgorithmChoice, BatchJob, BatchOutcome, ScoreResult, ScorerStats, ScoreUsage } from './scorer-types';
import type { LoadedParts } from './setup';

export interface Engine {
  readonly prefixCache: PrefixCache;
  readonly jobs: JobPlanner;
  readonly queue: AdmissionQueue<ChosenJob, ScoreResult>;
  readonly runner: DecoderRunner;
  readonly turns: TurnExecutor;
}

/** What the engine asks of its Scorer: a log, and a check that the Scorer is live. */
interface EngineHooks {
  readonly log: (event: Record<string, unknown>) => void;
  readonly assertLive: () => void;
}

export function buildEngine(init: LoadedParts, hooks: EngineHooks): Engine {
  const { options, settings, setup } = init;
  const prefixCache = new PrefixCache(settings.prefixCacheBytes);
  const crossRequest = settings.batching === 'cross-request';
  const jobs = new JobPlanner({
    sizing: setup.sizing,
    costModel: setup.costModel,
    prefixCache,
    config: init.config,
    defaultAlgorithm: settings.algorithm,
    crossRequest,
    log: hooks.log,
  });
  const forms = {
    prefixAttention: setup.prefixAttention,
    causalAttention: setup.causalAttention,
    grouped: setup.grouped,
    bf16Products: setup.facts.bf16Products,
    matmulKernel: setup.bf16.matmulKernel,
    matmulKernelF32: setup.matmulKernel === 'f32',
    xlaOptions: setup.xlaOptions,
  };
  const jit = { disk: options.diskCache ?? true, maxEntries: settings.jitCacheEntries };
  const precision = setup.precisionChoice.precision;
  const modelId = `${init.modelName}-${init.config.architecture}`;
  const runner = new DecoderRunner(init.client, init.config, init.weights, modelId, precision, jit, forms);
  const turns: TurnExecutor = new TurnExecutor({
    runner,
    prefixCache,
    sizing: setup.sizing,
    assertLive: hooks.assertLive,
    isIdle: (): boolean => queue.isIdle(),
  });
  const takeAlong = crossRequest ? 'all' : settings.coalesce ? 'same-query' : 'none';
  const limits = { maxItems: settings.maxItems, maxRequestTokens: settings.maxRequestTokens };
  const queue: AdmissionQueue<ChosenJob, ScoreResult> = new AdmissionQueue<ChosenJob, ScoreResult>(
    { queueSize: settings.queueSize, takeAlong, ...limits },
    (taken): Promise<Outcome<ScoreResult>[]> => runTurn(turns, taken, init.modelName),
  );
  return { prefixCache, jobs, queue, runner, turns };
}

/** One turn of the device (the admission queue's): the turn executor's answers, as results. */
async function runTurn(turns: TurnExecutor, jobs: ChosenJob[], model: string): Promise<Outcome<ScoreResult>[]> {
  const answers = await turns.run(jobs);
  return answers.map((a, i) => {
    if (!a.ok) return a;
    const n = jobs[i].request;
    const usage: ScoreUsage = { promptTokens: n.promptTokens, completionTokens: 0, totalTokens: n.promptTokens };
    return { ok: true, result: { scores: a.result.scores, usage, algorithm: a.result.algorithm, model } };
  });
}

/**
 * Scores a batch of requests queued together, so the requests that may share passes meet in one turn
 * (Scorer.scoreBatch): each job's outcome in job order, a request the planner refuses as its own failure.
 */
export async function scoreJobs(
  engine: Engine,
  jobs: readonly BatchJob[],
  algorithm: AlgorithmChoice | undefined,
): Promise<BatchOutcome[]> {
  const results: Promise<ScoreResult>[] = new Array<Promise<ScoreResult>>(jobs.length);
  const chosen: { readonly index: number; readonly job: ChosenJob }[] = [];
  jobs.forEach((job, index) => {
    try {
      chosen.push({ index, job: engine.jobs.chosenJob(job.request, algorithm, job.signal) });
    } catch (error) {
      results[index] = Promise.reject(error);
    }
  });
  const admitted = engine.queue.submitAll(chosen.map((c) => c.job));
  chosen.forEach((c, k) => (results[c.index] = admitted[k].then((a) => a.result)));
  const settled = await Promise.allSettled(results);
  return settled.map((s): BatchOutcome =>
    s.status === 'fulfilled' ? { ok: true, result: s.value } : { ok: false, error: s.reason },
  );
}

/** The engine's counters (Scorer.stats). */
export function engineStats(engine: Engine): ScorerStats {
  const { runner, prefixCache, turns, queue } = engine;
  return {
    jit: runner.jit.counters(),
    prefixCache: prefixCache.counters(),
    runs: { ...turns.runs },
    itemsScored: turns.itemsScored,
    tokensScored: turns.tokensScored,
    devicePasses: runner.executions,
    batchedPasses: turns.batchedPasses,
    batchedRequests: turns.batchedRequests,
    turns: queue.turns,
    turnRequests: queue.turnRequests,
  };
}
