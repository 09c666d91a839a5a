import { GgufArray, GgufError, GgufValue } from './gguf-types';

/**
 * Typed access to GGUF metadata with errors that name the key and what was
 * found instead, so a file from an unexpected converter fails clearly.
 */
export class GgufMetadata {
  constructor(
    private readonly values: ReadonlyMap<string, GgufValue>,
    /** The file name, for messages. */
    private readonly source: string,
  ) {}

  has(key: string): boolean {
    return this.values.has(key);
  }

  raw(key: string): GgufValue | undefined {
    return this.values.get(key);
  }

  string(key: string): string;
  string(key: string, optional: 'optional'): string | undefined;
  string(key: string, optional?: 'optional'): string | undefined {
    const v = this.lookup(key, optional);
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw this.wrongType(key, 'a string', v);
    return v;
  }

  /** Any numeric type (integers, floats) as a JS number. */
  number(key: string): number;
  number(key: string, optional: 'optional'): number | undefined;
  number(key: string, optional?: 'optional'): number | undefined {
    const v = this.lookup(key, optional);
    if (v === undefined) return undefined;
    if (typeof v !== 'number') throw this.wrongType(key, 'a number', v);
    return v;
  }

  /** A non-negative integer (counts, sizes, token ids). */
  integer(key: string): number;
  integer(key: string, optional: 'optional'): number | undefined;
  integer(key: string, optional?: 'optional'): number | undefined {
    const v = optional ? this.number(key, optional) : this.number(key);
    if (v === undefined) return undefined;
    if (!Number.isInteger(v) || v < 0) throw this.wrongType(key, 'a non-negative integer', v);
    return v;
  }

  boolean(key: string): boolean;
  boolean(key: string, optional: 'optional'): boolean | undefined;
  boolean(key: string, optional?: 'optional'): boolean | undefined {
    const v = this.lookup(key, optional);
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') throw this.wrongType(key, 'a boolean', v);
    return v;
  }

  stringArray(key: string): string[];
  stringArray(key: string, optional: 'optional'): string[] | undefined;
  stringArray(key: string, optional?: 'optional'): string[] | undefined {
    const values = this.array(key, optional);
    if (values === undefined) return undefined;
    for (const v of values) if (typeof v !== 'string') throw this.wrongType(key, 'an array of strings', v);
    return values as string[];
  }

  numberArray(key: string): number[];
  numberArray(key: string, optional: 'optional'): number[] | undefined;
  numberArray(key: string, optional?: 'optional'): number[] | undefined {
    const values = this.array(key, optional);
    if (values === undefined) return undefined;
    for (const v of values) if (typeof v !== 'number') throw this.wrongType(key, 'an array of numbers', v);
    return values as number[];
  }

  private array(key: string, optional?: 'optional'): readonly GgufValue[] | undefined {
    const v = this.lookup(key, optional);
    if (v === undefined) return undefined;
    if (!isArray(v)) throw this.wrongType(key, 'an array', v);
    return v.values;
  }

  private lookup(key: string, optional?: 'optional'): GgufValue | undefined {
    const v = this.values.get(key);
    if (v === undefined && !optional) throw new GgufError(`GGUF file ${this.source} lacks the metadata key ${key}`);
    return v;
  }

  private wrongType(key: string, expected: string, got: GgufValue): GgufError {
    return new GgufError(`GGUF file ${this.source}: metadata ${key} should be ${expected}, got ${describe(got)}`);
  }
}

function isArray(v: GgufValue): v is GgufArray {
  return typeof v === 'object' && v !== null && (v as GgufArray).kind === 'array';
}

function describe(v: GgufValue): string {
  if (isArray(v)) return `an array of ${v.values.length}`;
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  return `${typeof v} ${String(v)}`;
}
