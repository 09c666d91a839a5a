/**
 * Per-compile XLA options (docs/gpu.md, 'XLA options'): DebugOptions fields by
 * name (xla_allow_excess_precision, xla_dump_to, ...) that one compile sets,
 * where XLA_FLAGS would set them for the whole process. The plugin applies
 * them through the compile options' env_option_overrides; a name XLA does not
 * know is the plugin's INVALID_ARGUMENT error ('No such compile option').
 */

/** A value XLA's option overrides carry: bool, int64 (safe integers), double, string. */
export type XlaOptionValue = boolean | number | string;

export type XlaOptions = Readonly<Record<string, XlaOptionValue>>;

const NAME = /^xla_[a-z0-9_]+$/;

/** Why `value` is not XlaOptions (a sentence naming `what`), or null when it is. */
export function xlaOptionsProblem(value: unknown, what = 'xlaOptions'): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return `${what} must be an object { xla_name: boolean | number | string }`;
  for (const [name, v] of Object.entries(value)) {
    if (!NAME.test(name))
      return (
        `${what}: option name '${name}' must match ${NAME} (an XLA DebugOptions field, ` +
        `e.g. xla_allow_excess_precision)`
      );
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return `${what}.${name} must be a finite number, got ${v}`;
    } else if (typeof v === 'string') {
      if (v.includes('\0')) return `${what}.${name} must not contain a NUL character`;
    } else if (typeof v !== 'boolean') {
      return (
        `${what}.${name} must be a boolean, number or string, ` +
        `got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`
      );
    }
  }
  return null;
}

/** Throws a TypeError unless `value` is XlaOptions; returns a frozen copy. */
export function checkXlaOptions(value: unknown, what = 'xlaOptions'): XlaOptions {
  const problem = xlaOptionsProblem(value, what);
  if (problem !== null) throw new TypeError(problem);
  return Object.freeze({ ...(value as XlaOptions) });
}

/** The options as one canonical line, names sorted: 'xla_a=true xla_b=3'; '' for none. */
export function xlaOptionsLine(options: XlaOptions): string {
  return Object.keys(options)
    .sort()
    .map((name) => `${name}=${JSON.stringify(options[name])}`)
    .join(' ');
}
