/** `pjrt-score serve`: run the service until SIGTERM/SIGINT, then drain and exit 0. */
import { OptionSpec, UsageError, parseCommand } from './args';
import { createLogger, logEvent } from '../server/telemetry/log';
import { OptionError, SERVE_SETTINGS, SettingSpec, resolveServeOptions } from '../server/settings/serve-settings';
import { ROUTES } from '../server/routes/table';
import { ScoreServer, startServer } from '../server/hosts/standalone-server';

const SPEC: OptionSpec = Object.fromEntries(
  SERVE_SETTINGS.map((s) => [
    s.flag,
    s.metavar === ''
      ? { type: 'boolean' as const }
      : { type: 'string' as const, ...(s.flag === 'api-key' ? { multiple: true } : {}) },
  ]),
);

/** The header's list of routes, from the route table (as GET /openapi.json is). */
function routeLines(): string[] {
  const labels = ROUTES.map((r) => `${r.methods.filter((m) => m !== 'HEAD').join(', ')} ${r.path}`);
  const width = Math.max(...labels.map((l) => l.length));
  return ROUTES.map((r, i) => `  ${labels[i].padEnd(width)}  ${r.operation.summary}`);
}

export function serveHelp(): string {
  const width = Math.max(...SERVE_SETTINGS.map((s) => flagLabel(s).length));
  const flagLines = SERVE_SETTINGS.map((s) => wrap(`  ${flagLabel(s).padEnd(width)}  `, s.help, 100));
  const envWidth = Math.max(...SERVE_SETTINGS.map((s) => s.env.length));
  const envLines = SERVE_SETTINGS.map((s) => `  ${s.env.padEnd(envWidth)}  --${s.flag}`);
  return [
    'Usage: pjrt-score serve [options]',
    '',
    'Runs the scoring service. Its routes:',
    ...routeLines(),
    '',
    'Logs are JSON lines on stdout. SIGTERM/SIGINT refuse new work (503; the probes',
    'still answer), finish in-flight requests, close the listener and exit 0 (docs/service.md,',
    '"Shutdown"). SIGHUP re-reads --api-key-file and the TLS files.',
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

/** `lead` then `text` wrapped at `columns`, continuation lines indented under the text. */
function wrap(lead: string, text: string, columns: number): string {
  const lines: string[] = [];
  let line = lead;
  for (const word of text.split(' ')) {
    if (line.length + word.length > columns && line.trim().length > 0 && line.length > lead.length) {
      lines.push(line.trimEnd());
      line = ' '.repeat(lead.length);
    }
    line += `${word} `;
  }
  lines.push(line.trimEnd());
  return lines.join('\n');
}

function flagLabel(setting: SettingSpec): string {
  return setting.metavar === '' ? `--${setting.flag}` : `--${setting.flag} ${setting.metavar}`;
}

export async function serveCommand(args: readonly string[]): Promise<number> {
  const values = parseCommand('serve', args, SPEC);
  if (values.help) {
    process.stdout.write(serveHelp());
    return 0;
  }
  let options;
  try {
    options = resolveServeOptions(values as Record<string, string | boolean | string[] | undefined>);
  } catch (error) {
    if (error instanceof OptionError) throw new UsageError(error.message, 'serve');
    throw error;
  }
  const logger = createLogger();
  let server: ScoreServer | null = null;
  let signalled: NodeJS.Signals | null = null;
  let finish: (code: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => (finish = resolve));

  // Installed before anything else, so a signal at any point drains instead of killing.
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled) {
      logEvent(logger, 'warn', 'forced_exit', { signal, message: 'second signal during the drain: exiting now' });
      process.exit(1);
    }
    signalled = signal;
    logEvent(logger, 'info', 'signal', { signal });
    if (!server) {
      finish(0);
      return;
    }
    // A drain cannot outlive the request deadline by much: every request ends by then.
    const guard = setTimeout(
      () => {
        logEvent(logger, 'error', 'drain_timeout', { message: 'in-flight requests did not finish in time: exiting' });
        process.exit(1);
      },
      options.drainDelayMs + options.timeoutMs + 15_000,
    );
    guard.unref();
    server.close().then(
      () => finish(0),
      (error: unknown) => {
        logEvent(logger, 'error', 'close_failed', { error });
        finish(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // SIGHUP: re-read the key file and the TLS files; on an error the old ones stay.
  process.on('SIGHUP', () => {
    if (!server || signalled) return;
    try {
      const result = server.reload();
      logEvent(logger, 'info', 'reloaded', { api_keys: result.keys, tls: result.tls });
    } catch (error) {
      logEvent(logger, 'error', 'reload_failed', { message: error instanceof Error ? error.message : String(error) });
    }
  });

  try {
    server = await startServer({ ...options, logger });
  } catch (error) {
    if (error instanceof OptionError) throw new UsageError(error.message, 'serve');
    throw error;
  }
  const started = server;
  started.ready.catch(async (error: unknown) => {
    if (signalled) return; // closing anyway
    logEvent(logger, 'error', 'startup_failed', { error });
    await started.close().catch(() => undefined);
    finish(error instanceof OptionError ? 2 : 1);
  });
  return stopped;
}
