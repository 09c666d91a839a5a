/**
 * JSON with floats that stay floats. `JSON.stringify(1)` is `1`, which
 * Python's json reads as an int: SGLang's clients (and its own tests) expect
 * every score to be a float, and a softmax row can hold exactly 1 or 0. This
 * writer is JSON.stringify with one difference: a number under one of the
 * named keys (at any depth, inside arrays too) is written with a fraction
 * part (`1.0`, `0.0`, `-3.0`). Values are plain JSON data (objects, arrays,
 * strings, numbers, booleans, null); non-finite numbers become null, as in
 * JSON.stringify.
 */
export function stringifyWithFloats(value: unknown, floatKeys: ReadonlySet<string>): string {
  return write(value, false, floatKeys);
}

function write(value: unknown, asFloat: boolean, floatKeys: ReadonlySet<string>): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number') return asFloat ? floatText(value) : JSON.stringify(value);
  if (typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v: unknown) => write(v, asFloat, floatKeys)).join(',')}]`;
  const parts: string[] = [];
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined || typeof v === 'function') continue;
    parts.push(`${JSON.stringify(key)}:${write(v, floatKeys.has(key), floatKeys)}`);
  }
  return `{${parts.join(',')}}`;
}

function floatText(x: number): string {
  if (!Number.isFinite(x)) return 'null';
  const text = String(x);
  // Integers print without '.', 'e' or "Infinity": give them a fraction part. 1e21 and up already read as floats.
  return /^-?\d+$/.test(text) ? `${text}.0` : text;
}
