/**
 * Logging through any pino-compatible logger (pino itself, fastify's
 * `app.log`, a child of either): the service writes one object per event,
 * `{ event, ...fields }`, at info, warn or error. The standalone service and
 * the CLI use pino with ISO times and level names, one JSON line per event.
 */
import pino from 'pino';

export type LogLevel = 'info' | 'warn' | 'error';

type LogFields = Readonly<Record<string, unknown>>;

/** pino's `logger.info(obj, msg?)` call shape. */
export type LogFn = (obj: Record<string, unknown>, msg?: string) => void;

/** The part of pino's Logger the service uses; pino, fastify's logger and their children fit. */
export interface ServiceLogger {
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): ServiceLogger;
}

/** @deprecated name kept for callers of the earlier API: a ServiceLogger. */
export type Logger = ServiceLogger;

/** Where the default logger writes: a stream (stdout by default) or a function given each line. */
export type LogDestination = NodeJS.WritableStream | ((line: string) => void);

/**
 * pino writing `{"level":"info","time":"<ISO>","event":...,...}` lines: the
 * same events and fields the service has always logged, without pino's pid
 * and hostname (one process per container makes them noise).
 */
export function createLogger(destination: LogDestination = process.stdout): ServiceLogger {
  const stream = typeof destination === 'function' ? { write: destination } : destination;
  return pino(
    {
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream as pino.DestinationStream,
  );
}

/** A logger that drops everything (tests, embedding without logs). */
export function silentLogger(): ServiceLogger {
  return pino({ level: 'silent' });
}

/**
 * Logs one event. Error values become `{name, message, code?, stack}` here,
 * so they read the same through any logger's serializers.
 */
export function logEvent(logger: ServiceLogger, level: LogLevel, event: string, fields: LogFields = {}): void {
  const out: Record<string, unknown> = { event };
  for (const [key, value] of Object.entries(fields)) out[key] = value instanceof Error ? errorFields(value) : value;
  try {
    logger[level](out);
  } catch {
    // A logger that throws must not turn a served request into a failure.
  }
}

function errorFields(error: Error): Record<string, unknown> {
  const code = (error as { code?: unknown }).code;
  return { name: error.name, message: error.message, ...(code !== undefined ? { code } : {}), stack: error.stack };
}
