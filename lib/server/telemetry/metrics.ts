/**
 * The service's Prometheus metrics, through prom-client, in a registry the
 * caller passes (a host's own, so one scrape shows both) or our own: counters
 * and a latency histogram updated per request, and values read from the
 * queue and `scorer.stats()` at scrape time. Names are those of
 * docs/service.md ("Metrics"); prom-client writes the exposition.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ScorerStats } from '../../scoring';

/** Counters from `scorer.stats()`; every field is optional so a newer or older Scorer still renders. */
export type BackendStats = {
  readonly [K in keyof ScorerStats]?: ScorerStats[K] extends object ? Partial<ScorerStats[K]> : ScorerStats[K];
};

/** Upper bounds of the latency histogram, seconds. */
const LATENCY_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** What the scrape-time metrics read. */
interface ScrapeState {
  readonly ready: boolean;
  readonly draining: boolean;
  /** Requests admitted and waiting for the device (the Scorer's admission queue). */
  readonly queueDepth: number;
  /** Requests in the device's turn now (the same queue). */
  readonly inFlight: number;
  readonly queueCapacity: number;
  readonly stats: BackendStats | null;
  /** The served model's name (the label of the SGLang and vLLM gauges); null while loading. */
  readonly modelName: string | null;
}

type Kind = 'counter' | 'gauge';

/** `scorer.stats().jit` field -> metric. */
const FROM_JIT: readonly (readonly [string, string, Kind, string])[] = [
  ['hits', 'pjrt_score_jit_cache_hits_total', 'counter', 'JIT cache lookups answered by a ready program.'],
  ['misses', 'pjrt_score_jit_cache_misses_total', 'counter', 'JIT cache lookups that waited for a load or compile.'],
  ['compiles', 'pjrt_score_jit_compiles_total', 'counter', 'Programs compiled.'],
  ['compileSeconds', 'pjrt_score_jit_compile_seconds_total', 'counter', 'Seconds spent compiling programs.'],
  [
    'diskHits',
    'pjrt_score_jit_disk_hits_total',
    'counter',
    'Executables loaded from the on-disk cache instead of compiled.',
  ],
  ['diskWrites', 'pjrt_score_jit_disk_writes_total', 'counter', 'Executables written to the on-disk cache.'],
  ['diskErrors', 'pjrt_score_jit_disk_errors_total', 'counter', 'On-disk executables that failed to load.'],
  ['evictions', 'pjrt_score_jit_cache_evictions_total', 'counter', 'Programs evicted from the JIT cache.'],
  ['entries', 'pjrt_score_jit_cache_entries', 'gauge', 'Programs in the JIT cache.'],
  ['bytes', 'pjrt_score_jit_cache_bytes', 'gauge', 'Bytes of the programs in the JIT cache.'],
  ['inFlight', 'pjrt_score_jit_loads_in_flight', 'gauge', 'Program loads or compiles in progress.'],
];

/** `scorer.stats().prefixCache` field -> metric. */
const FROM_PREFIX: readonly (readonly [string, string, Kind, string])[] = [
  ['hits', 'pjrt_score_prefix_cache_hits_total', 'counter', 'Queries whose K/V came from the prefix cache.'],
  ['misses', 'pjrt_score_prefix_cache_misses_total', 'counter', 'Queries whose K/V had to be computed.'],
  ['evictions', 'pjrt_score_prefix_cache_evictions_total', 'counter', 'Query K/V entries evicted.'],
  ['entries', 'pjrt_score_prefix_cache_entries', 'gauge', 'Query K/V entries kept on the device.'],
  ['bytes', 'pjrt_score_prefix_cache_bytes', 'gauge', 'Device bytes held by the prefix cache.'],
];

export class ServiceMetrics {
  readonly registry: Registry;
  private readonly requests: Counter<'status' | 'algorithm'>;
  private readonly latency: Histogram<'status' | 'algorithm'>;
  private readonly httpRequests: Counter<'route' | 'status'>;
  private readonly itemsScored: Counter;
  private readonly tokensScored: Counter;
  private readonly refusals: Counter<'reason'>;

  /**
   * Registers every metric in `registry`. `state` is read once per scrape
   * (and may throw: the scrape then shows the request counters only).
   */
  constructor(registry: Registry, state: () => ScrapeState) {
    this.registry = registry;
    const registers = [registry];
    this.requests = new Counter({
      name: 'pjrt_score_requests_total',
      help:
        'Scoring requests (POST /v1/score, /v1/rerank, /rerank) ' +
        'by HTTP status and the algorithm that ran (none when nothing ran).',
      labelNames: ['status', 'algorithm'],
      registers,
    });
    this.latency = new Histogram({
      name: 'pjrt_score_request_duration_seconds',
      help: 'Scoring request latency from arrival to response, by status and algorithm.',
      labelNames: ['status', 'algorithm'],
      buckets: [...LATENCY_BUCKETS],
      registers,
    });
    this.httpRequests = new Counter({
      name: 'pjrt_score_http_requests_total',
      help: 'HTTP requests by route and status.',
      labelNames: ['route', 'status'],
      registers,
    });
    this.itemsScored = new Counter({
      name: 'pjrt_score_items_scored_total',
      help: 'Items scored in successful requests.',
      registers,
    });
    this.tokensScored = new Counter({
      name: 'pjrt_score_tokens_scored_total',
      help: 'Prompt tokens of successful requests (the query once plus every item).',
      registers,
    });
    this.refusals = new Counter({
      name: 'pjrt_score_auth_refusals_total',
      help:
        'Requests refused with 401 by reason: missing (no Authorization), ' +
        "malformed (not Bearer <key>), wrong (no such key), denied (the mount's authorize hook).",
      labelNames: ['reason'],
      registers,
    });

    // Scrape-time values: prom-client runs every collector of a scrape in one synchronous
    // pass, so the state is read once and forgotten on the next microtask.
    let snapshot: ScrapeState | null | undefined;
    const read = (): ScrapeState | null => {
      if (snapshot === undefined) {
        try {
          snapshot = state();
        } catch {
          snapshot = null;
        }
        queueMicrotask(() => (snapshot = undefined));
      }
      return snapshot;
    };
    const gauge = (name: string, help: string, value: (s: ScrapeState) => number | null): void => {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const s = read();
          const v = s ? value(s) : null;
          if (v === null) this.reset();
          else this.set(v);
        },
      });
    };
    // A cumulative count kept by the Scorer is exposed as a counter set to its value at scrape time.
    const counterFrom = (name: string, help: string, value: (s: ScrapeState) => number | null): void => {
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          const s = read();
          const v = s ? value(s) : null;
          if (v !== null && v > 0) this.inc(v);
        },
      });
    };
    gauge('pjrt_score_ready', '1 once the model is loaded and warm, 0 while loading or draining.', (s) =>
      s.ready && !s.draining ? 1 : 0,
    );
    gauge('pjrt_score_draining', '1 after SIGTERM/SIGINT (or close()) while in-flight requests finish.', (s) =>
      s.draining ? 1 : 0,
    );
    gauge('pjrt_score_queue_depth', 'Requests admitted and waiting for the device.', (s) => s.queueDepth);
    gauge('pjrt_score_queue_capacity', 'Most requests that may wait (--queue-size).', (s) => s.queueCapacity);
    gauge('pjrt_score_in_flight', "Requests in the device's turn now.", (s) => s.inFlight);
    // The same queue under the names autoscalers and gateways read
    // from SGLang and vLLM (docs/service.md, "Running a fleet").
    const modelGauge = (name: string, help: string, value: (s: ScrapeState) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['model_name'],
        registers,
        collect() {
          this.reset();
          const s = read();
          if (s && s.modelName !== null) this.set({ model_name: s.modelName }, value(s));
        },
      });
    };
    modelGauge(
      'sglang:num_queue_reqs',
      "Requests waiting for the device (pjrt_score_queue_depth, under SGLang's name).",
      (s) => s.queueDepth,
    );
    modelGauge(
      'sglang:num_running_reqs',
      "Requests in the device's turn now (pjrt_score_in_flight, under SGLang's name).",
      (s) => s.inFlight,
    );
    modelGauge(
      'vllm:num_requests_waiting',
      "Requests waiting for the device (pjrt_score_queue_depth, under vLLM's name).",
      (s) => s.queueDepth,
    );
    modelGauge(
      'vllm:num_requests_running',
      "Requests in the device's turn now (pjrt_score_in_flight, under vLLM's name).",
      (s) => s.inFlight,
    );
    modelGauge(
      'vllm:kv_cache_usage_perc',
      'Always 0: no KV pool fills with running requests here (the prefix cache is evictable); ' +
        "present because gateways that read vLLM's gauges require it before trusting the two above.",
      () => 0,
    );
    const field = (record: object | undefined, name: string): number | null => {
      const value = (record as Record<string, unknown> | undefined)?.[name];
      return typeof value === 'number' ? value : null;
    };
    for (const [key, name, kind, help] of FROM_JIT) {
      (kind === 'counter' ? counterFrom : gauge)(name, help, (s) => field(s.stats?.jit, key));
    }
    for (const [key, name, kind, help] of FROM_PREFIX) {
      (kind === 'counter' ? counterFrom : gauge)(name, help, (s) => field(s.stats?.prefixCache, key));
    }
    new Counter({
      name: 'pjrt_score_runs_total',
      help: 'Scorer executions by algorithm.',
      labelNames: ['algorithm'],
      registers,
      collect() {
        this.reset();
        for (const [algorithm, value] of Object.entries(read()?.stats?.runs ?? {}))
          if (value > 0) this.inc({ algorithm }, value);
      },
    });
    counterFrom('pjrt_score_scorer_items_total', 'Items the Scorer scored (all callers).', (s) =>
      field(s.stats ?? undefined, 'itemsScored'),
    );
    counterFrom('pjrt_score_scorer_tokens_total', 'Tokens the Scorer ran (all callers).', (s) =>
      field(s.stats ?? undefined, 'tokensScored'),
    );
    counterFrom('pjrt_score_device_passes_total', 'Program executions on the device (every pass of every plan).', (s) =>
      field(s.stats ?? undefined, 'devicePasses'),
    );
    counterFrom(
      'pjrt_score_batched_passes_total',
      'Device passes shared by requests with different queries (--batching cross-request).',
      (s) => field(s.stats ?? undefined, 'batchedPasses'),
    );
    counterFrom(
      'pjrt_score_backend_calls_total',
      'Turns of the device (one turn may serve several requests that share a query).',
      (s) => field(s.stats ?? undefined, 'turns'),
    );
    counterFrom('pjrt_score_backend_call_requests_total', 'Requests served by those turns.', (s) =>
      field(s.stats ?? undefined, 'turnRequests'),
    );
    counterFrom('pjrt_score_batched_requests_total', 'Requests scored in those shared passes.', (s) =>
      field(s.stats ?? undefined, 'batchedRequests'),
    );
  }

  /** One finished scoring request. `algorithm` is 'none' when nothing ran. */
  observeScore(status: number, algorithm: string, seconds: number, items: number, tokens: number): void {
    const labels = { status: String(status), algorithm };
    this.requests.inc(labels);
    this.latency.observe(labels, seconds);
    if (status === 200) {
      this.itemsScored.inc(items);
      this.tokensScored.inc(tokens);
    }
  }

  /** A request refused with 401 (never the key: the reason only). */
  observeRefusal(reason: 'missing' | 'malformed' | 'wrong' | 'denied'): void {
    this.refusals.inc({ reason });
  }

  /** Any HTTP request our routes answered, by route and status. */
  observeHttp(route: string, status: number): void {
    this.httpRequests.inc({ route, status: String(status) });
  }

  /** The registry's exposition (every metric in it, the host's included). */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
