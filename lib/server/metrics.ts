/**
 * Prometheus metrics, written by hand in the text exposition format 0.0.4:
 * counters and a latency histogram the service updates per request, and
 * gauges read at scrape time (queue, JIT cache, process memory).
 */
import type { BackendStats } from './backend';

/** Upper bounds of the latency histogram, seconds. */
export const LATENCY_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

type Labels = Readonly<Record<string, string>>;

class Histogram {
  readonly counts: number[] = new Array<number>(LATENCY_BUCKETS.length).fill(0);
  count = 0;
  sum = 0;

  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
      if (seconds <= LATENCY_BUCKETS[i]) {
        this.counts[i]++;
        break;
      }
    }
  }
}

/** What the metrics endpoint reads at scrape time. */
export interface ScrapeState {
  readonly ready: boolean;
  readonly draining: boolean;
  /** Requests admitted and waiting for the device. */
  readonly queueDepth: number;
  /** Backend calls running or waiting inside the backend. */
  readonly inFlight: number;
  readonly queueCapacity: number;
  readonly stats: BackendStats | null;
}

export class ServiceMetrics {
  private readonly requests = new Map<string, { labels: Labels; count: number }>();
  private readonly latency = new Map<string, { labels: Labels; histogram: Histogram }>();
  private readonly httpRequests = new Map<string, { labels: Labels; count: number }>();
  private itemsScored = 0;
  private tokensScored = 0;
  private batchedRequests = 0;
  private batches = 0;
  private readonly started = Date.now();

  /** One finished POST /v1/score. `algorithm` is 'none' when nothing ran. */
  observeScore(status: number, algorithm: string, seconds: number, items: number, tokens: number): void {
    const labels = { status: String(status), algorithm };
    const key = `${labels.status}|${algorithm}`;
    const counter = this.requests.get(key) ?? { labels, count: 0 };
    counter.count++;
    this.requests.set(key, counter);
    const hist = this.latency.get(key) ?? { labels, histogram: new Histogram() };
    hist.histogram.observe(seconds);
    this.latency.set(key, hist);
    if (status === 200) {
      this.itemsScored += items;
      this.tokensScored += tokens;
    }
  }

  /** Any HTTP request, by route and status. */
  observeHttp(route: string, status: number): void {
    const labels = { route, status: String(status) };
    const key = `${route}|${labels.status}`;
    const counter = this.httpRequests.get(key) ?? { labels, count: 0 };
    counter.count++;
    this.httpRequests.set(key, counter);
  }

  /** One backend call that served `members` requests at once. */
  observeBatch(members: number): void {
    this.batches++;
    this.batchedRequests += members;
  }

  render(state: ScrapeState): string {
    const out: string[] = [];
    const counter = (name: string, help: string, rows: Iterable<{ labels: Labels; value: number }>): void => {
      metric(out, name, 'counter', help, rows);
    };
    const gauge = (name: string, help: string, value: number): void => {
      metric(out, name, 'gauge', help, [{ labels: {}, value }]);
    };

    counter(
      'pjrt_score_requests_total',
      'POST /v1/score requests by HTTP status and the algorithm that ran (none when nothing ran).',
      [...this.requests.values()].map((r) => ({ labels: r.labels, value: r.count })),
    );
    out.push('# HELP pjrt_score_request_duration_seconds POST /v1/score latency from arrival to response, by status and algorithm.');
    out.push('# TYPE pjrt_score_request_duration_seconds histogram');
    for (const { labels, histogram } of this.latency.values()) {
      let cumulative = 0;
      for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
        cumulative += histogram.counts[i];
        out.push(`pjrt_score_request_duration_seconds_bucket${labelText({ ...labels, le: String(LATENCY_BUCKETS[i]) })} ${cumulative}`);
      }
      out.push(`pjrt_score_request_duration_seconds_bucket${labelText({ ...labels, le: '+Inf' })} ${histogram.count}`);
      out.push(`pjrt_score_request_duration_seconds_sum${labelText(labels)} ${num(histogram.sum)}`);
      out.push(`pjrt_score_request_duration_seconds_count${labelText(labels)} ${histogram.count}`);
    }
    counter('pjrt_score_http_requests_total', 'HTTP requests by route and status.', [...this.httpRequests.values()].map((r) => ({ labels: r.labels, value: r.count })));
    counter('pjrt_score_items_scored_total', 'Items scored in successful requests.', [{ labels: {}, value: this.itemsScored }]);
    counter('pjrt_score_tokens_scored_total', 'Prompt tokens of successful requests (the query once plus every item).', [{ labels: {}, value: this.tokensScored }]);
    counter('pjrt_score_backend_calls_total', 'Scorer calls made (one call may serve several requests that share a query).', [{ labels: {}, value: this.batches }]);
    counter('pjrt_score_backend_call_requests_total', 'Requests served by those calls.', [{ labels: {}, value: this.batchedRequests }]);

    gauge('pjrt_score_ready', '1 once the model is loaded and warm, 0 while loading or draining.', state.ready && !state.draining ? 1 : 0);
    gauge('pjrt_score_draining', '1 after SIGTERM/SIGINT while in-flight requests finish.', state.draining ? 1 : 0);
    gauge('pjrt_score_queue_depth', 'Requests admitted and waiting for the device.', state.queueDepth);
    gauge('pjrt_score_queue_capacity', 'Most requests that may wait (--queue-size).', state.queueCapacity);
    gauge('pjrt_score_in_flight', 'Scorer calls running or queued inside the Scorer.', state.inFlight);

    const stats = state.stats;
    if (stats) {
      const jit = (stats.jit ?? {}) as Readonly<Record<string, unknown>>;
      const field = (record: Readonly<Record<string, unknown>>, name: string): number | null =>
        typeof record[name] === 'number' ? (record[name] as number) : null;
      const fromJit: readonly [string, string, 'counter' | 'gauge', string][] = [
        ['hits', 'pjrt_score_jit_cache_hits_total', 'counter', 'JIT cache lookups answered by a ready program.'],
        ['misses', 'pjrt_score_jit_cache_misses_total', 'counter', 'JIT cache lookups that waited for a load or compile.'],
        ['compiles', 'pjrt_score_jit_compiles_total', 'counter', 'Programs compiled.'],
        ['compileSeconds', 'pjrt_score_jit_compile_seconds_total', 'counter', 'Seconds spent compiling programs.'],
        ['diskHits', 'pjrt_score_jit_disk_hits_total', 'counter', 'Executables loaded from the on-disk cache instead of compiled.'],
        ['diskWrites', 'pjrt_score_jit_disk_writes_total', 'counter', 'Executables written to the on-disk cache.'],
        ['diskErrors', 'pjrt_score_jit_disk_errors_total', 'counter', 'On-disk executables that failed to load.'],
        ['evictions', 'pjrt_score_jit_cache_evictions_total', 'counter', 'Programs evicted from the JIT cache.'],
        ['entries', 'pjrt_score_jit_cache_entries', 'gauge', 'Programs in the JIT cache.'],
        ['bytes', 'pjrt_score_jit_cache_bytes', 'gauge', 'Bytes of the programs in the JIT cache.'],
        ['inFlight', 'pjrt_score_jit_loads_in_flight', 'gauge', 'Program loads or compiles in progress.'],
      ];
      for (const [name, metricName, type, help] of fromJit) {
        const value = field(jit, name);
        if (value !== null) metric(out, metricName, type, help, [{ labels: {}, value }]);
      }
      if (stats.runs) {
        counter(
          'pjrt_score_runs_total',
          'Scorer executions by algorithm.',
          Object.entries(stats.runs).map(([algorithm, value]) => ({ labels: { algorithm }, value })),
        );
      }
      const prefix = (stats.prefixCache ?? {}) as Readonly<Record<string, unknown>>;
      const fromPrefix: readonly [string, string, 'counter' | 'gauge', string][] = [
        ['hits', 'pjrt_score_prefix_cache_hits_total', 'counter', 'Queries whose K/V came from the prefix cache.'],
        ['misses', 'pjrt_score_prefix_cache_misses_total', 'counter', 'Queries whose K/V had to be computed.'],
        ['evictions', 'pjrt_score_prefix_cache_evictions_total', 'counter', 'Query K/V entries evicted.'],
        ['entries', 'pjrt_score_prefix_cache_entries', 'gauge', 'Query K/V entries kept on the device.'],
        ['bytes', 'pjrt_score_prefix_cache_bytes', 'gauge', 'Device bytes held by the prefix cache.'],
      ];
      for (const [name, metricName, type, help] of fromPrefix) {
        const value = field(prefix, name);
        if (value !== null) metric(out, metricName, type, help, [{ labels: {}, value }]);
      }
      if (typeof stats.itemsScored === 'number') counter('pjrt_score_scorer_items_total', 'Items the Scorer scored (all callers).', [{ labels: {}, value: stats.itemsScored }]);
      if (typeof stats.tokensScored === 'number') counter('pjrt_score_scorer_tokens_total', 'Tokens the Scorer ran (all callers).', [{ labels: {}, value: stats.tokensScored }]);
    }

    const memory = process.memoryUsage();
    gauge('process_resident_memory_bytes', 'Resident set size in bytes.', memory.rss);
    gauge('nodejs_heap_size_used_bytes', 'V8 heap used in bytes.', memory.heapUsed);
    gauge('nodejs_heap_size_total_bytes', 'V8 heap size in bytes.', memory.heapTotal);
    gauge('nodejs_external_memory_bytes', 'Memory of C++ objects bound to JavaScript objects, in bytes.', memory.external);
    gauge('process_start_time_seconds', 'Start time of the process since the Unix epoch, in seconds.', Math.floor(this.started / 1000));
    return `${out.join('\n')}\n`;
  }
}

function metric(out: string[], name: string, type: 'counter' | 'gauge', help: string, rows: Iterable<{ labels: Labels; value: number }>): void {
  out.push(`# HELP ${name} ${help}`);
  out.push(`# TYPE ${name} ${type}`);
  for (const row of rows) out.push(`${name}${labelText(row.labels)} ${num(row.value)}`);
}

function labelText(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return '';
  return `{${entries.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function num(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}
