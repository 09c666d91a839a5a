/**
 * The `pjrt-score` command line: serve, score, rerank, run-batch, fetch. `main` returns the exit
 * code: 0 success, 1 failure, 2 usage error (unknown flag, bad value).
 */
import { fetchCommand, fetchHelp } from './fetch';
import { UsageError } from './args';
import { rerankCommand, rerankHelp } from './rerank';
import { runBatchCommand, runBatchHelp } from './run-batch';
import { scoreCommand, scoreHelp } from './score';
import { serveCommand, serveHelp } from './serve';

const COMMANDS: Readonly<
  Record<string, { run: (args: readonly string[]) => number | Promise<number>; help: () => string }>
> = {
  serve: { run: serveCommand, help: serveHelp },
  score: { run: scoreCommand, help: scoreHelp },
  rerank: { run: rerankCommand, help: rerankHelp },
  'run-batch': { run: runBatchCommand, help: runBatchHelp },
  fetch: { run: fetchCommand, help: fetchHelp },
};

function mainHelp(): string {
  return [
    'Usage: pjrt-score <command> [options]',
    '',
    'Score many items against one query with a language model in one forward pass,',
    'on XLA through a PJRT plugin.',
    '',
    'Commands:',
    '  serve      run the scoring service (SGLang-compatible POST /v1/score, POST /v1/rerank)',
    '  score      score one request from the command line',
    '  rerank     rank documents against a query from the command line',
    '  run-batch  answer a JSONL file of score and rerank requests (OpenAI batch format)',
    '  fetch      download the PJRT plugin and the default model into the cache',
    '',
    'Run `pjrt-score <command> --help` for the options of a command.',
    '',
  ].join('\n');
}

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    const topic = command === 'help' ? rest[0] : undefined;
    process.stdout.write(topic !== undefined && COMMANDS[topic] ? COMMANDS[topic].help() : mainHelp());
    return command === undefined ? 2 : 0;
  }
  if (command === '--version' || command === '-v') {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    process.stdout.write(`${(require('../../package.json') as { version: string }).version}\n`);
    return 0;
  }
  const entry = Object.prototype.hasOwnProperty.call(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!entry) {
    process.stderr.write(`pjrt-score: unknown command ${JSON.stringify(command)}\n\n${mainHelp()}`);
    return 2;
  }
  try {
    return await entry.run(rest);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(
        `pjrt-score ${error.command}: ${error.message}\nRun \`pjrt-score ${error.command} --help\` for usage.\n`,
      );
      return 2;
    }
    const err = error as Error & { param?: string; code?: unknown };
    if (err && err.name === 'ScoreInputError') {
      process.stderr.write(`pjrt-score ${command}: ${err.message} (${err.param})\n`);
      return 2;
    }
    process.stderr.write(`pjrt-score ${command}: ${err && err.message ? err.message : String(error)}\n`);
    if (process.env.PJRT_SCORE_DEBUG && err && err.stack) process.stderr.write(`${err.stack}\n`);
    return 1;
  }
}
