/**
 * The service's state: the backend (once loaded), the metrics, and the phase
 * it is in: loading -> ready -> [leaving ->] draining -> closed. Readiness
 * (GET /health, /readyz) is true in `ready` only; `leaving` (the standalone
 * server's --drain-delay-ms after SIGTERM) still serves work while readiness
 * already fails, so gateways and Kubernetes stop sending before the listener
 * closes. The queue is the Scorer's (scoring/execution/admission.ts).
 */
import { ScoringBackend } from './scorer-backend';
import type { Registry } from 'prom-client';
import { ServiceLogger, logEvent } from '../telemetry/log';
import { ServiceMetrics } from '../telemetry/metrics';
import { ServeOptions } from '../settings/serve-settings';
import type { Tracing } from '../telemetry/tracing';

export type Phase = 'loading' | 'ready' | 'leaving' | 'draining' | 'closed';

export class ServiceState {
  readonly metrics: ServiceMetrics;
  /** OpenTelemetry traces, when on (the standalone service's --otlp-endpoint). */
  tracing: Tracing | null = null;
  readonly startedAt = Date.now();
  private phaseValue: Phase = 'loading';
  private backendValue: ScoringBackend | null = null;
  /** HTTP requests being handled (any route); the drain waits for 0. */
  private active = 0;
  private activeWaiters: (() => void)[] = [];
  private requestSerial = 0;
  private readonly idPrefix = Math.random().toString(36).slice(2, 8);

  constructor(
    readonly options: ServeOptions,
    readonly logger: ServiceLogger,
    registry: Registry,
  ) {
    this.metrics = new ServiceMetrics(registry, () => ({
      ready: this.phaseValue === 'ready',
      draining: this.phaseValue === 'leaving' || this.phaseValue === 'draining',
      queueDepth: this.backendValue?.queueDepth ?? 0,
      inFlight: this.backendValue?.inFlight ?? 0,
      queueCapacity: this.options.queueSize,
      stats: this.statsOrNull(),
      modelName: this.backendValue?.modelName ?? null,
    }));
  }

  private statsOrNull(): ReturnType<ScoringBackend['stats']> | null {
    if (!this.backendValue || this.phaseValue === 'closed') return null;
    try {
      return this.backendValue.stats();
    } catch (error) {
      logEvent(this.logger, 'warn', 'stats_failed', { error });
      return null;
    }
  }

  get phase(): Phase {
    return this.phaseValue;
  }

  get backend(): ScoringBackend | null {
    return this.backendValue;
  }

  /** The backend is loaded (warm or not): it may be disposed on close. */
  attach(backend: ScoringBackend): void {
    this.backendValue = backend;
  }

  markReady(): void {
    if (this.phaseValue === 'loading') this.phaseValue = 'ready';
  }

  /** Readiness fails while work is still taken (ready -> leaving); true if it changed the phase. */
  beginLeave(): boolean {
    if (this.phaseValue !== 'ready') return false;
    this.phaseValue = 'leaving';
    return true;
  }

  /** Work is taken in these phases. */
  get serving(): boolean {
    return this.phaseValue === 'ready' || this.phaseValue === 'leaving';
  }

  /** Stop taking work; true the first time. */
  beginDrain(): boolean {
    if (this.phaseValue === 'draining' || this.phaseValue === 'closed') return false;
    this.phaseValue = 'draining';
    return true;
  }

  markClosed(): void {
    this.phaseValue = 'closed';
  }

  nextRequestId(): string {
    this.requestSerial++;
    return `${this.idPrefix}-${this.requestSerial}`;
  }

  enter(): void {
    this.active++;
  }

  leave(): void {
    this.active--;
    if (this.active === 0) {
      const waiters = this.activeWaiters;
      this.activeWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  /** Resolves once no HTTP request is being handled and the queue is empty. */
  async settled(): Promise<void> {
    if (this.backendValue) await this.backendValue.idle();
    if (this.active > 0) await new Promise<void>((resolve) => this.activeWaiters.push(resolve));
  }

  /** Seconds a client should wait before retrying a 503 or 429. */
  retryAfterSeconds(): number {
    if (this.phaseValue === 'loading' || this.phaseValue === 'leaving' || this.phaseValue === 'draining') return 5;
    return this.backendValue?.retryAfterSeconds() ?? 1;
  }
}
