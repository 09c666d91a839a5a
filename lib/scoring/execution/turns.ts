/**
 * The turn executor: runs the jobs of one turn of the device (the admission
 * queue's, admission.ts). Those that join share passes (planning/batch-plan.ts,
 * run-batch.ts); every other one runs its own plan (run-plan.ts), one at a
 * time. Each pass is told to the observers of the calls it serves: a shared
 * pass to every joined call's, a call's own plan to its own; nothing is
 * shared across turns.
 */
import { releaseFreeHostMemory } from '../../runtime/host-memory';
import { AbortError } from '../requests/errors';
import { scoresFromLabelLogprobs } from '../requests/scores';
import type { NormalizedRequest } from '../requests/request';
import { makeBatchPlan } from '../planning/batch-plan';
import { Algorithm, shapeOf, Sizing } from '../planning/plan';
import type { PlanChoice } from '../planning/selector';
import type { Outcome } from './admission';
import { DecoderRunner, PassObserver } from './decoder-runner';
import { PrefixCache } from './prefix-cache';
import { runBatchPasses } from './run-batch';
import { runPlan } from './run-plan';

/** A request with its plan chosen, as the device runs it; `joins` when it may share a pass with other requests. */
export interface ChosenJob {
  readonly request: NormalizedRequest;
  readonly choice: PlanChoice;
  readonly signal?: AbortSignal;
  readonly joins: boolean;
  readonly onPass?: PassObserver;
}

/** A job's scores ([item][label], request order) and the plan that computed them. */
interface TurnAnswer {
  readonly algorithm: Algorithm;
  readonly scores: number[][];
}

/**
 * What the executor needs of the Scorer: the device's runner and prefix cache, the sizing, and a check that it is still
 * live.
 */
interface TurnContext {
  readonly runner: DecoderRunner;
  readonly prefixCache: PrefixCache;
  readonly sizing: Sizing;
  /** Throws (DisposedError) once the Scorer is disposed: checked before each job's own plan. */
  readonly assertLive: () => void;
  /** No call waits or runs (the admission queue's): the host's free pages may go back to the OS. */
  readonly isIdle: () => boolean;
}

export class TurnExecutor {
  /** Cross-request passes run, and the requests they answered. */
  batchedPasses = 0;
  batchedRequests = 0;
  /** Requests answered per plan, their items and prompt tokens (the Scorer's stats). */
  readonly runs: Record<Algorithm, number> = { serial: 0, packed: 0, prefix: 0 };
  itemsScored = 0;
  tokensScored = 0;
  /** A trim of the host heap is scheduled or running (releaseWhenIdle). */
  private releasing = false;

  constructor(private readonly ctx: TurnContext) {}

  /**
   * Runs jobs in one hold of the device; answers each job (a failure answers that job, or the jobs of a
   * shared pass). When the device goes idle, frees the host scratch.
   */
  async run(jobs: readonly ChosenJob[]): Promise<Outcome<TurnAnswer>[]> {
    try {
      return await this.runJobs(jobs);
    } finally {
      this.releaseWhenIdle();
    }
  }

  private async runJobs(jobs: readonly ChosenJob[]): Promise<Outcome<TurnAnswer>[]> {
    const { runner, sizing } = this.ctx;
    const outcomes: Outcome<TurnAnswer>[] = new Array(jobs.length);
    const joining = jobs.flatMap((job, i) => (job.joins && !job.signal?.aborted ? [i] : []));
    const plan = makeBatchPlan(
      joining.map((i) => shapeOf(jobs[i].request)),
      sizing,
    );
    const together = new Set(plan.passes.flatMap((pass) => pass.groups.map((g) => joining[g.request])));
    if (together.size > 0) {
      const requests = joining.map((i) => jobs[i].request);
      const logprobs = requests.map((n) => new Float32Array(n.itemTokens.length * n.labels.length));
      const observers = [...together].flatMap((i) => (jobs[i].onPass ? [jobs[i].onPass] : []));
      const onPass: PassObserver | undefined =
        observers.length === 0 ? undefined : (pass) => observers.forEach((observe) => observe(pass));
      try {
        await runBatchPasses(plan.passes, requests, logprobs, runner, onPass);
        this.batchedPasses += plan.passes.length;
        this.batchedRequests += together.size;
        joining.forEach((i, k) => {
          if (!together.has(i)) return;
          const job = jobs[i];
          outcomes[i] = job.signal?.aborted
            ? { ok: false, error: AbortError.from(job.signal) }
            : { ok: true, result: this.answer(job.request, 'packed', logprobs[k]) };
        });
      } catch (error) {
        for (const i of together) outcomes[i] = { ok: false, error };
      }
    }
    for (let i = 0; i < jobs.length; i++) {
      if (together.has(i)) continue;
      // One job's passes at a time hold the device (the turn is this job's now).
      try {
        outcomes[i] = { ok: true, result: await this.runOwn(jobs[i]) };
      } catch (error) {
        outcomes[i] = { ok: false, error };
      }
    }
    return outcomes;
  }

  /** A job's own plan. */
  private async runOwn(job: ChosenJob): Promise<TurnAnswer> {
    this.ctx.assertLive();
    const { plan } = job.choice;
    const n = job.request;
    if (n.itemTokens.length === 0) return { algorithm: plan.algorithm, scores: [] };
    const context = {
      runner: this.ctx.runner,
      prefixCache: this.ctx.prefixCache,
      ...(job.signal ? { signal: job.signal } : {}),
      ...(job.onPass ? { onPass: job.onPass } : {}),
    };
    return this.answer(n, plan.algorithm, await runPlan(plan, n, context));
  }

  /** A request's scores from its label logprobs ([item][label]), counted. */
  private answer(n: NormalizedRequest, algorithm: Algorithm, logprobs: Float32Array): TurnAnswer {
    const scores = scoresFromLabelLogprobs(logprobs, {
      itemCount: n.itemTokens.length,
      labelCount: n.labels.length,
      applySoftmax: n.applySoftmax,
    });
    this.runs[algorithm]++;
    this.itemsScored += n.itemTokens.length;
    this.tokensScored += n.promptTokens;
    return { algorithm, scores };
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
      if (!this.ctx.isIdle()) {
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
}
