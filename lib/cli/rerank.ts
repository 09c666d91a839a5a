/** `pjrt-score rerank`: rank documents against a query from the command line; a table, or the rerank JSON. */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import { DEFAULT_MAX_ITEMS, rerankResults } from '../scoring';
import { readRerankBody, RERANK_FLOAT_KEYS, rerankResponseBody } from '../wire';
import { loadScorerBackend } from '../server/lifecycle/scorer-backend';
import { stringifyWithFloats } from '../server/http/json-floats';
import { rerankAdviceOf } from '../server/lifecycle/loading';
import { createLogger, logEvent } from '../server/telemetry/log';
import { MODEL_AND_PLUGIN_HELP, OptionSpec, UsageError, parseCommand, stringFlag } from './args';

const SPEC: OptionSpec = {
  query: { type: 'string', short: 'q' },
  doc: { type: 'string', multiple: true, short: 'd' },
  file: { type: 'string', short: 'f' },
  instruction: { type: 'string' },
  'top-n': { type: 'string' },
  template: { type: 'string' },
  json: { type: 'boolean' },
  model: { type: 'string' },
  plugin: { type: 'string' },
  verbose: { type: 'boolean' },
};

export function rerankHelp(): string {
  return [
    'Usage: pjrt-score rerank --query TEXT (--doc A [--doc B ...] | --file PATH) [options]',
    '',
    'Ranks the documents by relevance to the query: the probability that the model',
    'answers "yes" rather than "no" to "does this document meet the query?", every',
    'document in one pass behind the shared prompt.',
    '',
    'Options:',
    '  -q, --query TEXT      the query',
    '  -d, --doc TEXT        one document; repeat for more',
    '  -f, --file PATH       documents from a file (- for stdin): a JSON array of strings',
    '                        (or of {text} objects), else one document per non-empty line',
    "  --instruction TEXT    the task instruction (default: the template's)",
    '  --top-n N             print only the best N',
    '  --template NAME       a built-in template (docs/rerank.md, Templates; default: from the model)',
    '  --json                print the rerank API response JSON instead of a table',
    ...MODEL_AND_PLUGIN_HELP,
    '  --verbose             Scorer log lines on stderr',
    '  -h, --help            show this help',
    '',
  ].join('\n');
}

export async function rerankCommand(args: readonly string[]): Promise<number> {
  const values = parseCommand('rerank', args, SPEC);
  if (values.help) {
    process.stdout.write(rerankHelp());
    return 0;
  }
  const query = stringFlag(values, 'query');
  const file = stringFlag(values, 'file');
  const documents = [
    ...((values.doc as string[] | undefined) ?? []),
    ...(file !== undefined ? readDocuments(file) : []),
  ];
  if (query === undefined) throw new UsageError('--query is required', 'rerank');
  if (documents.length === 0) throw new UsageError('no documents: give --doc or --file', 'rerank');
  const topNText = stringFlag(values, 'top-n');
  if (topNText !== undefined && !/^\d+$/.test(topNText))
    throw new UsageError(`--top-n must be a non-negative integer, got ${JSON.stringify(topNText)}`, 'rerank');
  const model = stringFlag(values, 'model');
  const plugin = stringFlag(values, 'plugin');
  const template = stringFlag(values, 'template');
  const instruction = stringFlag(values, 'instruction');
  const logger = createLogger((line) => process.stderr.write(line));
  const backend = await loadScorerBackend({
    ...(model !== undefined ? { model } : {}),
    ...(plugin !== undefined ? { plugin } : {}),
    ...(template !== undefined ? { rerankTemplate: template } : {}),
    algorithm: 'auto',
    maxItems: Math.max(DEFAULT_MAX_ITEMS, documents.length),
    maxRequestTokens: 1 << 20,
    log: values.verbose ? (event) => logEvent(logger, 'info', 'scorer', event) : () => undefined,
  });
  try {
    // A newcomer's first rerank is often on the default chat model: say so before its answer.
    const advice = rerankAdviceOf(backend);
    if (advice !== null) process.stderr.write(`note: ${advice}\n`);
    const body = {
      query,
      documents,
      ...(instruction !== undefined ? { instruction } : {}),
      ...(topNText !== undefined ? { top_n: Number(topNText) } : {}),
    };
    const rerank = backend.normalizeWith(readRerankBody(body));
    const result = await backend.scoreNormalized(rerank.score);
    const results = rerankResults(rerank, result.scores);
    if (values.json) {
      // The HTTP answer's shape (the common dialect: lib/wire), its id a fresh one.
      const response = rerankResponseBody(result, rerank, backend.modelName, randomUUID());
      process.stdout.write(`${stringifyWithFloats(response, RERANK_FLOAT_KEYS)}\n`);
    } else {
      const rows = results.map((r, rank) => [
        String(rank + 1),
        r.relevanceScore.toFixed(6),
        String(r.index),
        shorten(documents[r.index], 60),
      ]);
      const header = ['rank', 'relevance', 'index', 'document'];
      const widths = header.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c].length)));
      const line = (cells: readonly string[]): string =>
        cells
          .map((cell, c) => (c < 3 ? cell.padStart(widths[c]) : cell))
          .join('  ')
          .trimEnd();
      process.stdout.write(
        [
          line(header),
          line(widths.map((w) => '-'.repeat(w))),
          ...rows.map(line),
          '',
          `model ${backend.modelName}, ${result.usage.promptTokens} prompt tokens`,
          '',
        ].join('\n'),
      );
    }
    return 0;
  } finally {
    backend.dispose();
  }
}

/** Documents from a file or stdin ('-'): a JSON array (strings or {text}), else one per non-empty line. */
function readDocuments(file: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    throw new UsageError(`--file: cannot read ${JSON.stringify(file)}: ${(error as Error).message}`, 'rerank');
  }
  if (text.trimStart().startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`--file: ${file} starts with [ but is not JSON: ${(error as Error).message}`, 'rerank');
    }
    if (!Array.isArray(parsed)) throw new UsageError(`--file: ${file} must hold a JSON array`, 'rerank');
    return parsed.map((d: unknown, i: number) => {
      if (typeof d === 'string') return d;
      if (d !== null && typeof d === 'object' && typeof (d as { text?: unknown }).text === 'string')
        return (d as { text: string }).text;
      throw new UsageError(
        `--file: element ${i} of ${file} must be a string or an object with a text string`,
        'rerank',
      );
    });
  }
  return text.split(/\r?\n/).filter((line) => line.trim() !== '');
}

function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
