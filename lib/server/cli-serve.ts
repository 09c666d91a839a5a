/** `pjrt-score serve`: run the service until SIGTERM/SIGINT, then drain and exit 0. */
import { OptionSpec, UsageError, parseCommand } from './cli-args';
import { createLogger } from './log';
import { OptionError, SERVE_SETTINGS, resolveServeOptions } from './options';
import { startServer } from './server';

const SPEC: OptionSpec = Object.fromEntries(
  SERVE_SETTINGS.map((s) => [s.flag, { type: s.kind === 'boolean' ? ('boolean' as const) : ('string' as const) }]),
);

export function serveHelp(): string {
  const width = Math.max(...SERVE_SETTINGS.map((s) => flagLabel(s.flag, s.kind).length));
  const flagLines = SERVE_SETTINGS.map((s) => `  ${flagLabel(s.flag, s.kind).padEnd(width)}  ${s.help}`);
  const envWidth = Math.max(...SERVE_SETTINGS.map((s) => s.env.length));
  const envLines = SERVE_SETTINGS.map((s) => `  ${s.env.padEnd(envWidth)}  --${s.flag}`);
  return [
    'Usage: pjrt-score serve [options]',
    '',
    'Runs the scoring service: POST /v1/score (SGLang Score API), GET /health,',
    'GET /v1/models, GET /metrics (Prometheus). Logs are JSON lines on stdout.',
    'SIGTERM/SIGINT stop accepting, finish in-flight requests, and exit 0.',
    '',
    'Options:',
    ...flagLines,
    `  ${'-h, --help'.padEnd(width)}  show this help`,
    '',
    'Environment (a flag wins over its variable):',
    ...envLines,
    '  PJRT_SCORE_CACHE' + ' '.repeat(Math.max(1, envWidth - 16)) + '  cache directory (default ~/.cache/pjrt-score)',
    '',
  ].join('\n');
}

function flagLabel(flag: string, kind: string): string {
  if (kind === 'boolean') return `--${flag}`;
  const metavar = flag === 'algorithm' ? 'NAME' : flag === 'model' || flag === 'plugin' ? 'PATH' : flag === 'host' ? 'HOST' : flag === 'warmup' ? 'SPEC' : 'N';
  return `--${flag} ${metavar}`;
}

export async function serveCommand(args: readonly string[]): Promise<number> {
  const values = parseCommand('serve', args, SPEC);
  if (values.help) {
    process.stdout.write(serveHelp());
    return 0;
  }
  let options;
  try {
    options = resolveServeOptions(values as Record<string, string | boolean | undefined>);
  } catch (error) {
    if (error instanceof OptionError) throw new UsageError(error.message, 'serve');
    throw error;
  }
  const logger = createLogger();
  const server = await startServer({ ...options, logger });

  let signalled: NodeJS.Signals | null = null;
  const stopped = new Promise<number>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      if (signalled) {
        logger.warn('forced_exit', { signal, message: 'second signal during the drain: exiting now' });
        process.exit(1);
      }
      signalled = signal;
      logger.info('signal', { signal });
      // A drain cannot outlive the request deadline by much: every request ends by then.
      const guard = setTimeout(() => {
        logger.error('drain_timeout', { message: 'in-flight requests did not finish in time: exiting' });
        process.exit(1);
      }, options.timeoutMs + 15_000);
      guard.unref();
      server.close().then(
        () => resolve(0),
        (error: unknown) => {
          logger.error('close_failed', { error });
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    server.ready.catch(async (error: unknown) => {
      if (signalled) return; // closing anyway
      logger.error('startup_failed', { error });
      await server.close().catch(() => undefined);
      resolve(error instanceof OptionError ? 2 : 1);
    });
  });
  return stopped;
}
