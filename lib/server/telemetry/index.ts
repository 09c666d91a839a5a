/**
 * lib/server/telemetry: what the service reports: one log object per event
 * through any pino-compatible logger (log.ts), the Prometheus metrics
 * (metrics.ts; names in docs/service.md, "Metrics") and OpenTelemetry traces
 * (tracing.ts).
 * May import: no sibling.
 */
export {
  createLogger,
  silentLogger,
  type LogDestination,
  type LogFn,
  type Logger,
  type LogLevel,
  type ServiceLogger,
} from './log';
export { type BackendStats } from './metrics';
