/**
 * Structured logs: one JSON object per line, to stdout by default, so a log
 * shipper can parse every line without a grammar.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  log(level: LogLevel, event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
}

export type LogSink = (line: string) => void;

const stdoutSink: LogSink = (line) => {
  process.stdout.write(line);
};

export function createLogger(sink: LogSink = stdoutSink): Logger {
  const log = (level: LogLevel, event: string, fields: LogFields = {}): void => {
    let line: string;
    try {
      line = JSON.stringify({ time: new Date().toISOString(), level, event, ...fields }, replacer);
    } catch (err) {
      line = JSON.stringify({ time: new Date().toISOString(), level, event, logError: (err as Error).message });
    }
    sink(`${line}\n`);
  };
  return {
    log,
    info: (event, fields) => log('info', event, fields),
    warn: (event, fields) => log('warn', event, fields),
    error: (event, fields) => log('error', event, fields),
  };
}

/** Errors become {name, message, code, stack}; bigints become numbers: every line stays valid JSON. */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: value.message, ...(code !== undefined ? { code } : {}), stack: value.stack };
  }
  if (typeof value === 'bigint') return Number(value);
  return value;
}
