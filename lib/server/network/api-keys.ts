/**
 * API keys (docs/service.md, "Deploying on a network"): the keys given on
 * the command line or in its variable, and those of a key file, re-read on
 * reload() (SIGHUP). A presented key is compared with every accepted one in
 * constant time: both sides are sha256 digests of equal length, compared
 * with timingSafeEqual, and every accepted key is tried whatever the earlier
 * ones gave, so neither the key's length nor a common prefix shows in the
 * time taken. Keys never leave this module: no log line, no error names one.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { OptionError } from '../../scoring';
import { API_KEY_PATTERN } from './network-settings';

/** Why a request was refused: no Authorization header, not `Bearer <token>`, or a key not accepted. */
export type RefusalReason = 'missing' | 'malformed' | 'wrong';

interface ApiKeySource {
  /** Keys from the command line or the variable: fixed for the process's life. */
  readonly keys?: readonly string[];
  /** A file of keys, one a line; re-read by reload(). */
  readonly file?: string;
}

const BEARER = /^Bearer +([^ ]+) *$/i;

export class ApiKeys {
  private digests: readonly Buffer[];
  private fileKeys = 0;

  /** Reads the key file (OptionError if unreadable, malformed, or holding no key). */
  constructor(private readonly source: ApiKeySource) {
    this.digests = this.read(true);
  }

  /** How many keys are accepted now. */
  get size(): number {
    return this.digests.length;
  }

  /** Keys that came from the file at the last read. */
  get fromFile(): number {
    return this.fileKeys;
  }

  /**
   * Re-reads the key file: keys removed from it are refused from now on. On
   * an error (file gone, a bad line) the keys in use stay and OptionError
   * says why. An empty file is allowed here: every file key is revoked.
   */
  reload(): number {
    this.digests = this.read(false);
    return this.digests.length;
  }

  /** 'ok', or why an `Authorization` header value is refused. */
  check(header: string | readonly string[] | undefined): 'ok' | RefusalReason {
    if (header === undefined || header === '') return 'missing';
    if (typeof header !== 'string') return 'malformed';
    const match = BEARER.exec(header);
    if (match === null) return 'malformed';
    const presented = digest(match[1]);
    let accepted = false;
    for (const known of this.digests) accepted = timingSafeEqual(presented, known) || accepted;
    return accepted ? 'ok' : 'wrong';
  }

  private read(atStart: boolean): readonly Buffer[] {
    const keys = [...(this.source.keys ?? [])];
    const file = this.source.file;
    let fromFile: string[] = [];
    if (file !== undefined) {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (error) {
        throw new OptionError(
          `--api-key-file ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
        );
      }
      fromFile = parseKeyFile(text, file);
      if (atStart && fromFile.length === 0) throw new OptionError(`--api-key-file ${file} holds no key`);
    }
    this.fileKeys = fromFile.length;
    return [...keys, ...fromFile].map(digest);
  }
}

/** One key a line; blank lines and lines starting with # skipped; a bad line is named by number, never shown. */
function parseKeyFile(text: string, file: string): string[] {
  const keys: string[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    if (!API_KEY_PATTERN.test(line))
      throw new OptionError(`--api-key-file ${file}: line ${i + 1} is not a key (visible ASCII, no spaces or commas)`);
    keys.push(line);
  });
  return keys;
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}
