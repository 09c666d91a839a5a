/** `pjrt-score score`: score one request from the command line; a table, or the Score API JSON. */
import { loadModelInfo } from '../model/load';
import { ScoringBackend, loadScorerBackend } from '../server/lifecycle/scorer-backend';
import { ALGORITHM_CHOICES, AlgorithmChoice, DEFAULT_MAX_ITEMS, type ScoreResult } from '../scoring';
import { readScoreBody, SCORE_FLOAT_KEYS, scoreResponseBody } from '../wire';
import { MODEL_AND_PLUGIN_HELP, OptionSpec, UsageError, parseCommand, stringFlag } from './args';
import { createLogger, logEvent } from '../server/telemetry/log';
import { stringifyWithFloats } from '../server/http/json-floats';

const SPEC: OptionSpec = {
  query: { type: 'string', short: 'q' },
  items: { type: 'string', multiple: true, short: 'i' },
  labels: { type: 'string', short: 'l' },
  'apply-softmax': { type: 'boolean' },
  'item-first': { type: 'boolean' },
  json: { type: 'boolean' },
  model: { type: 'string' },
  plugin: { type: 'string' },
  algorithm: { type: 'string' },
  verbose: { type: 'boolean' },
};

export function scoreHelp(): string {
  return [
    'Usage: pjrt-score score --query TEXT --items A [--items B ...] --labels LABELS [options]',
    '',
    'Scores the items against the query once and prints, per item, the probability',
    'of each label token after query ++ item (item ++ query with --item-first).',
    '',
    'Options:',
    '  -q, --query TEXT      the query text',
    '  -i, --items TEXT      one item; repeat for more (at least one)',
    '  -l, --labels LABELS   label token ids, comma-separated (9805,787), or label texts',
    '                        (--labels " yes"," no": spaces kept, each text one token),',
    '                        or a JSON array of either (\'[" yes", " no"]\')',
    '  --apply-softmax       softmax over the labels (rows sum to 1)',
    '  --item-first          item before query (runs on the serial path)',
    '  --json                print the Score API response JSON instead of a table',
    ...MODEL_AND_PLUGIN_HELP,
    `  --algorithm NAME      ${ALGORITHM_CHOICES.join('|')} (default auto)`,
    '  --verbose             Scorer log lines on stderr',
    '  -h, --help            show this help',
    '',
  ].join('\n');
}

export async function scoreCommand(args: readonly string[]): Promise<number> {
  const values = parseCommand('score', args, SPEC);
  if (values.help) {
    process.stdout.write(scoreHelp());
    return 0;
  }
  const query = stringFlag(values, 'query');
  const items = (values.items as string[] | undefined) ?? [];
  const labelsText = stringFlag(values, 'labels');
  if (query === undefined) throw new UsageError('--query is required', 'score');
  if (items.length === 0) throw new UsageError('at least one --items is required', 'score');
  if (labelsText === undefined)
    throw new UsageError('--labels is required (token ids or label texts, comma-separated)', 'score');
  const labelSpec = parseLabels(labelsText);
  const algorithm = (stringFlag(values, 'algorithm') ?? 'auto') as AlgorithmChoice;
  if (!ALGORITHM_CHOICES.includes(algorithm)) {
    throw new UsageError(
      `--algorithm must be one of ${ALGORITHM_CHOICES.join(', ')}, got ${JSON.stringify(algorithm)}`,
      'score',
    );
  }
  const model = stringFlag(values, 'model');
  const plugin = stringFlag(values, 'plugin');
  const logger = createLogger((line) => process.stderr.write(line));
  const backend = await loadScorerBackend({
    ...(model !== undefined ? { model } : {}),
    ...(plugin !== undefined ? { plugin } : {}),
    algorithm,
    maxItems: Math.max(DEFAULT_MAX_ITEMS, items.length),
    maxRequestTokens: 1 << 20,
    log: values.verbose ? (event) => logEvent(logger, 'info', 'scorer', event) : () => undefined,
  });
  try {
    const labels = labelSpec.kind === 'ids' ? labelSpec.ids : labelIds(labelSpec.texts, backend);
    const body = {
      query,
      items,
      label_token_ids: labels,
      apply_softmax: values['apply-softmax'] === true,
      item_first: values['item-first'] === true,
    };
    const request = backend.normalizeWith(readScoreBody(body));
    const result = await backend.scoreNormalized(request);
    if (values.json) {
      // The HTTP answer's shape (SGLang's: lib/wire).
      process.stdout.write(
        `${stringifyWithFloats(scoreResponseBody(result, request, result.model), SCORE_FLOAT_KEYS)}\n`,
      );
    } else {
      const decode = labelDecoder(backend.tokenizer, model);
      process.stdout.write(renderTable(items, labels, result, decode));
    }
    return 0;
  } finally {
    backend.dispose();
  }
}

type LabelSpec =
  { readonly kind: 'ids'; readonly ids: number[] } | { readonly kind: 'texts'; readonly texts: string[] };

/** `--labels`: comma-separated ids, comma-separated texts (kept as written, spaces too), or a JSON array of either. */
function parseLabels(text: string): LabelSpec {
  let parts: unknown[];
  if (text.trimStart().startsWith('[')) {
    try {
      parts = JSON.parse(text) as unknown[];
    } catch {
      throw new UsageError(`--labels: ${JSON.stringify(text)} is not a JSON array`, 'score');
    }
    if (!Array.isArray(parts) || parts.length === 0)
      throw new UsageError('--labels: the JSON array must not be empty', 'score');
  } else {
    parts = text.split(',');
  }
  if (
    parts.every(
      (p) =>
        (typeof p === 'number' && Number.isSafeInteger(p) && p >= 0) ||
        (typeof p === 'string' && /^\s*\d+\s*$/.test(p)),
    )
  ) {
    return { kind: 'ids', ids: parts.map((p) => Number(p)) };
  }
  if (!parts.every((p): p is string => typeof p === 'string' && p !== '')) {
    throw new UsageError(
      `--labels must be token ids or label texts, not a mix or empty labels: ${JSON.stringify(text)}`,
      'score',
    );
  }
  return { kind: 'texts', texts: parts };
}

/** Each label text as its one token id; a text of more (or no) tokens is a usage error naming its tokens. */
function labelIds(texts: readonly string[], backend: ScoringBackend): number[] {
  return texts.map((label) => {
    const ids = backend.tokenize(label);
    if (ids.length !== 1) {
      throw new UsageError(
        `--labels: ${JSON.stringify(label)} is ${ids.length} tokens (${ids.join(', ')}), ` +
          `not one; a label is one token of the model's vocabulary (mind the leading space)`,
        'score',
      );
    }
    return ids[0];
  });
}

/** Label id -> its text, for column headers; falls back to the bare id. */
function labelDecoder(own: ScoringBackend['tokenizer'], model: string | undefined): (id: number) => string {
  try {
    const tokenizer = own ?? loadModelInfo(model).tokenizer;
    return (id) => {
      try {
        return JSON.stringify(tokenizer.decode([id]));
      } catch {
        return `#${id}`;
      }
    };
  } catch {
    return (id) => `#${id}`;
  }
}

function renderTable(
  items: readonly string[],
  labels: readonly number[],
  result: ScoreResult,
  decode: (id: number) => string,
): string {
  const header = ['#', 'item', ...labels.map((id) => `${decode(id)} (${id})`)];
  const rows = result.scores.map((row, i) => [String(i), shorten(items[i] ?? '', 48), ...row.map(formatScore)]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, c) => (c >= 2 ? cell.padStart(widths[c]) : cell.padEnd(widths[c])))
      .join('  ')
      .trimEnd();
  return [
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `model ${result.model}, algorithm ${result.algorithm}, ${result.usage.promptTokens} prompt tokens`,
    '',
  ].join('\n');
}

function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function formatScore(value: number): string {
  if (value === 0 || value >= 1e-4) return value.toFixed(6);
  return value.toExponential(3);
}
