/**
 * `pjrt-score run-batch`: a JSONL file of requests in OpenAI's batch format
 * (vLLM's `run-batch`), each line answered by the service's scoring routes
 * without a listener (server/hosts/batch-lines.ts), in input order, a window
 * of lines at a time through the Scorer's one queue (util/in-order.ts, the
 * window `Scorer.scoreMany` uses). Streams both ways; resumes from its output;
 * `--shard i/n` takes every n-th line. docs/service.md, "Batch jobs".
 */
import * as fs from 'node:fs';
import type { Readable } from 'node:stream';
import { OptionSpec, UsageError, parseCommand, stringFlag } from './args';
import { BatchCounts, BatchProgress } from './batch-progress';
import { ReadCounter, Shard, WHOLE, appendLine, openOutput, parseShard, readLines, writeToStream } from './batch-io';
import { BatchLine, BatchLines, answeredLine, customIdOf } from '../server/hosts/batch-lines';
import { openScoringService } from '../server/hosts/mountable-service';
import { NETWORK_SETTINGS } from '../server/network/network-settings';
import { OptionError, SERVE_SETTINGS, SettingSpec, resolveServeOptions } from '../server/settings/serve-settings';
import { ServiceLogger, createLogger } from '../server/telemetry/log';
import { mapInOrder } from '../util/in-order';
import { DEFAULT_SCORE_MANY_CONCURRENCY } from '../scoring';

/**
 * Exit statuses: 0 every line answered 2xx; 1..MAX_FAILED_STATUS that many lines failed (the last: as many or more).
 */
export const MAX_FAILED_STATUS = 99;
/**
 * The job could not run or did not finish (input unreadable, an output from another input, the model failed, a signal).
 */
const JOB_FAILED_STATUS = 100;
/** A bad flag or value. */
const USAGE_STATUS = 101;

/** The per-line deadline when none is given: a line waits behind the window, never a client. */
const BATCH_TIMEOUT_MS = 3_600_000;
/** Seconds between progress lines off a terminal. */
const DEFAULT_PROGRESS_SECONDS = 10;
/** A line may be this much longer than the body limit: its custom_id, method and url. */
const LINE_ENVELOPE_BYTES = 64 * 1024;

const LEFT_OUT: ReadonlySet<string> = new Set([
  'host',
  'port',
  'drainDelayMs',
  'docs',
  ...NETWORK_SETTINGS.map((s) => s.key),
]);
/** The serve settings a batch job takes: the Scorer's and the service's, without the listener's and the network's. */
const ROWS: readonly SettingSpec[] = (SERVE_SETTINGS as readonly SettingSpec[]).filter((s) => !LEFT_OUT.has(s.key));

const SPEC: OptionSpec = {
  input: { type: 'string', short: 'i' },
  output: { type: 'string', short: 'o' },
  shard: { type: 'string' },
  concurrency: { type: 'string' },
  'progress-every': { type: 'string' },
  ...Object.fromEntries(
    ROWS.map((s) => [s.flag, s.metavar === '' ? { type: 'boolean' as const } : { type: 'string' as const }]),
  ),
};

export function runBatchHelp(): string {
  const width = Math.max(...ROWS.map((s) => label(s).length), 26);
  return [
    'Usage: pjrt-score run-batch -i IN.jsonl [-o OUT.jsonl] [options]',
    '',
    "Answers a JSONL file of requests in OpenAI's batch format, one per line:",
    '  {"custom_id": "...", "method": "POST", "url": "/v1/score", "body": {...}}',
    'url: /v1/score, /v1/rerank, /v2/rerank or /rerank; body: what that route takes.',
    'Each output line, in input order: {"id", "custom_id", "response": {"status_code",',
    '"request_id", "body"}, "error"}, with the status and body the route answers.',
    'Blank lines are skipped. Rerun with the same input and output to resume: the lines',
    'already written are skipped (a torn last line is cut first).',
    '',
    'Options:',
    `  ${'-i, --input PATH|-'.padEnd(width)}  the requests (- for stdin)`,
    `  ${'-o, --output PATH|-'.padEnd(width)}  the answers (default -, stdout; a file resumes)`,
    `  ${'--shard I/N'.padEnd(width)}  take lines k with (k - 1) mod N = I (0 <= I < N): one of N processes`,
    `  ${'--concurrency N'.padEnd(width)}  lines in flight (default ${DEFAULT_SCORE_MANY_CONCURRENCY}); ` +
      `the queue holds at least N`,
    `  ${'--progress-every SECONDS'.padEnd(width)}  off a terminal, ` +
      `a progress line this often (default ${DEFAULT_PROGRESS_SECONDS})`,
    ...ROWS.map((s) => `  ${label(s).padEnd(width)}  ${s.help}`),
    `  ${'-h, --help'.padEnd(width)}  show this help`,
    '',
    `Defaults that differ from serve: --warmup none, --timeout-ms ${BATCH_TIMEOUT_MS}.`,
    `Exit status: 0 every line answered 2xx; ` +
      `1-${MAX_FAILED_STATUS} that many lines failed (${MAX_FAILED_STATUS}: as many or more);`,
    `${JOB_FAILED_STATUS} the job could not run or finish; ` +
      `${USAGE_STATUS} a bad flag or value. The last stderr line counts them.`,
    '',
  ].join('\n');
}

function label(s: SettingSpec): string {
  return s.metavar === '' ? `--${s.flag}` : `--${s.flag} ${s.metavar}`;
}

interface JobOptions {
  readonly input: string;
  readonly output: string;
  readonly shard: Shard;
  readonly concurrency: number;
  readonly progressEveryMs: number;
}

function integerFlag(values: Record<string, unknown>, name: string, fallback: number, min: number): number {
  const text = stringFlag(values as Parameters<typeof stringFlag>[0], name);
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min)
    throw new UsageError(`--${name} must be an integer >= ${min}, got ${JSON.stringify(text)}`, 'run-batch');
  return n;
}

export async function runBatchCommand(args: readonly string[]): Promise<number> {
  let job: JobOptions;
  let settings;
  try {
    const values = parseCommand('run-batch', args, SPEC);
    if (values.help) {
      process.stdout.write(runBatchHelp());
      return 0;
    }
    const input = stringFlag(values, 'input');
    if (input === undefined) throw new UsageError('--input is required (a path, or - for stdin)', 'run-batch');
    const shardText = stringFlag(values, 'shard');
    const shard = shardText === undefined ? WHOLE : parseShard(shardText);
    if (shard === null)
      throw new UsageError(`--shard must be I/N with 0 <= I < N, got ${JSON.stringify(shardText)}`, 'run-batch');
    job = {
      input,
      output: stringFlag(values, 'output') ?? '-',
      shard,
      concurrency: integerFlag(values, 'concurrency', DEFAULT_SCORE_MANY_CONCURRENCY, 1),
      progressEveryMs: integerFlag(values, 'progress-every', DEFAULT_PROGRESS_SECONDS, 1) * 1000,
    };
    const env = Object.fromEntries(ROWS.map((s) => [s.env, process.env[s.env]]));
    const resolved = resolveServeOptions(values as Record<string, string | boolean | undefined>, env);
    const given = (flag: string, variable: string): boolean =>
      values[flag] !== undefined || (env[variable] ?? '') !== '';
    settings = {
      ...resolved,
      ...(given('warmup', 'PJRT_SCORE_WARMUP') ? {} : { warmup: [] }),
      ...(given('timeout-ms', 'PJRT_SCORE_TIMEOUT_MS') ? {} : { timeoutMs: BATCH_TIMEOUT_MS }),
      queueSize: Math.max(resolved.queueSize, job.concurrency),
    };
  } catch (error) {
    if (error instanceof UsageError || error instanceof OptionError) {
      process.stderr.write(`pjrt-score run-batch: ${error.message}\nRun \`pjrt-score run-batch --help\` for usage.\n`);
      return USAGE_STATUS;
    }
    throw error;
  }
  const logger = batchLogger();
  try {
    const { counts, summary } = await runJob(job, settings, logger);
    process.stderr.write(`${JSON.stringify(summary)}\n`);
    return counts.failed === 0 ? 0 : Math.min(counts.failed, MAX_FAILED_STATUS);
  } catch (error) {
    process.stderr.write(`pjrt-score run-batch: ${error instanceof Error ? error.message : String(error)}\n`);
    return JOB_FAILED_STATUS;
  }
}

/** Log events on stderr, without the per-request lines (the output says what each line got). */
function batchLogger(): ServiceLogger {
  const base = createLogger(process.stderr);
  const wrap = (logger: ServiceLogger): ServiceLogger => ({
    info: (obj, msg) => {
      if (obj.event !== 'request') logger.info(obj, msg);
    },
    warn: (obj, msg) => logger.warn(obj, msg),
    error: (obj, msg) => logger.error(obj, msg),
    child: (bindings) => wrap(logger.child(bindings)),
  });
  return wrap(base);
}

async function runJob(
  job: JobOptions,
  settings: Parameters<typeof openScoringService>[0],
  logger: ServiceLogger,
): Promise<{ counts: BatchCounts; summary: Record<string, unknown> }> {
  // Both files are checked before the model loads: a missing input or an unwritable output fails at once.
  const totalBytes = job.input === '-' ? null : fs.statSync(job.input).size;
  const out = job.output === '-' ? null : openOutput(job.output);
  // Opened once the model is ready, and read at once: its errors reach the loop below.
  let inputStream: NodeJS.ReadableStream | null = null;
  const control = openScoringService({ ...settings, logger, warmupProgress: false });
  const counts: BatchCounts = { answered: 0, failed: 0, skipped: 0, items: 0 };
  const counter: ReadCounter = { bytes: 0 };
  const progress = new BatchProgress(
    { counts, bytesRead: () => counter.bytes, totalBytes },
    process.stderr,
    job.progressEveryMs,
  );
  let stopped: NodeJS.Signals | null = null;
  let stop: () => void = () => undefined;
  const stopping = new Promise<void>((resolve) => (stop = resolve));
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopped) process.exit(JOB_FAILED_STATUS); // a second signal: the lines in flight are lost, none torn
    stopped = signal;
    stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    control.start();
    await control.service.ready;
    const lines = new BatchLines(control.state, control.settings.maxBodyBytes + LINE_ENVELOPE_BYTES);
    inputStream = job.input === '-' ? process.stdin : fs.createReadStream(job.input);
    const input = readLines(inputStream as Readable, lines.maxLineBytes, job.shard, counter);
    const done =
      out !== null && out.done > 0
        ? readLines(fs.createReadStream(job.output, { start: 0, end: out.done - 1 }), Number.MAX_SAFE_INTEGER)
        : null;
    const pending = pendingLines(input, done, counts, stopping);
    progress.start();
    const cpuStart = process.cpuUsage();
    for await (const answer of mapInOrder(pending, (line) => lines.answer(line), { concurrency: job.concurrency })) {
      if (out !== null) appendLine(out.fd, answer.text);
      else await writeToStream(process.stdout, answer.text);
      counts.answered++;
      if (answer.status >= 200 && answer.status < 300) counts.items += answer.items;
      else counts.failed++;
      progress.tick();
    }
    progress.stop();
    const s = progress.snapshot();
    const summary = {
      event: 'batch_done',
      lines: counts.answered,
      failed: counts.failed,
      skipped: counts.skipped,
      items: counts.items,
      seconds: round(s.seconds),
      items_per_s: round(s.itemsPerSecond),
      cpu_seconds: round(cpuSeconds(cpuStart)),
      max_rss_bytes: process.resourceUsage().maxRSS * 1024,
      ...(stopped ? { stopped_by: stopped } : {}),
    };
    if (stopped)
      throw new Error(
        `stopped by ${stopped} after ${counts.answered} lines (every one written whole); ` +
          `rerun to resume\n${JSON.stringify(summary)}`,
      );
    return { counts, summary };
  } finally {
    progress.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (out !== null) {
      fs.fsyncSync(out.fd);
      fs.closeSync(out.fd);
    }
    if (inputStream !== null && job.input !== '-') (inputStream as fs.ReadStream).destroy();
    await control.drain();
    control.finish();
  }
}

/**
 * The input's lines less those the output already answers: the output of an
 * earlier run is the same lines in the same order (the window writes in
 * input order), so each of its lines must carry the next input line's
 * custom_id; anything else means it came from another input or shard.
 */
async function* pendingLines(
  input: AsyncGenerator<BatchLine>,
  done: AsyncGenerator<BatchLine> | null,
  counts: BatchCounts,
  stopping: Promise<void>,
): AsyncGenerator<BatchLine, void, undefined> {
  let resume = done;
  // A signal ends the input at once, even while a pipe keeps it waiting; the window then drains.
  const stopped = stopping.then(() => null);
  while (true) {
    const next = await Promise.race([input.next(), stopped]);
    if (next === null || next.done) break;
    const line = next.value;
    if (resume !== null) {
      const written = await resume.next();
      if (written.done) resume = null;
      else {
        const { customId, status } = answeredLine(written.value.bytes);
        const wanted = customIdOf(line.bytes);
        if (customId !== wanted || status === null) {
          throw new Error(
            `the output's line ${counts.skipped + 1} answers custom_id ${JSON.stringify(customId)}, but the input's ` +
              `next line (line ${line.number}) is ${JSON.stringify(wanted)}: ` +
              `the output was written from another input or --shard; give another --output`,
          );
        }
        counts.skipped++;
        if (status < 200 || status >= 300) counts.failed++;
        continue;
      }
    }
    yield line;
  }
  const rest = resume === null ? null : await Promise.race([resume.next(), stopped]);
  if (rest !== null && !rest.done) {
    throw new Error(
      'the output has more lines than this input gives: ' +
        'it was written from another input or --shard; give another --output',
    );
  }
}

function cpuSeconds(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
