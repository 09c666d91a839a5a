/**
 * Command-line parsing shared by the subcommands: node:util parseArgs in
 * strict mode, with errors turned into UsageError (exit code 2).
 */
import { parseArgs } from 'node:util';
import { PjrtScoreError } from '../util/errors';

/** The help lines of --model and --plugin, as `score` and `rerank` take them. */
export const MODEL_AND_PLUGIN_HELP: readonly string[] = [
  '  --model PATH|ID       GGUF file or Hugging Face directory, or a hub id (org/repo,',
  '                        org/repo/file.gguf, hf:org/repo:QUANT, each with @REVISION),',
  '                        fetched into the hub cache (default PJRT_SCORE_MODEL, else',
  '                        the cached SmolLM2-135M-Instruct)',
  '  --plugin PATH         PJRT plugin (default PJRT_PLUGIN_PATH, else the cached CPU plugin)',
];

export class UsageError extends PjrtScoreError {
  declare readonly code: 'USAGE_INVALID';
  constructor(
    message: string,
    /** The subcommand whose --help explains the fix. */
    readonly command: string,
  ) {
    super(message, 'USAGE_INVALID');
    this.name = 'UsageError';
  }
}

export type OptionSpec = Readonly<Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>>;

type ParsedValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

/** Parses `args` against `spec`; unknown flags, missing values and positionals throw UsageError. */
export function parseCommand(command: string, args: readonly string[], spec: OptionSpec): ParsedValues {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options: { ...spec, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length > 0) {
      throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`, command);
    }
    return values as ParsedValues;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const code = (error as { code?: string }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError((error as Error).message, command);
    }
    throw error;
  }
}

/** A single string flag (the last one wins if repeated is not allowed by the spec). */
export function stringFlag(values: ParsedValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}
