/**
 * The parameter and result types of a StableHLO module's `main` function,
 * read from its text. Used to check execute() arguments before they reach
 * the device: the CPU plugin only checks byte sizes, so without this an f32
 * [3, 2] buffer would run silently where an s32 [2, 3] one was expected.
 */
import { elementTypeFromMlir } from '../util/element-types';
import { DType } from './dtype';

export interface TensorSpec {
  readonly dtype: DType;
  readonly dims: readonly number[];
}

export interface Signature {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
}

/** `tensor<2x3xf32>` -> { dtype: 'f32', dims: [2, 3] }; undefined if not static. */
function parseTensorType(text: string): TensorSpec | undefined {
  const match = /^\s*tensor<([^>]*)>\s*$/.exec(text);
  if (!match) return undefined;
  const parts = match[1].split('x').map((p) => p.trim());
  const element = elementTypeFromMlir(parts[parts.length - 1]);
  if (element === undefined) return undefined;
  const dims: number[] = [];
  for (const p of parts.slice(0, -1)) {
    if (!/^\d+$/.test(p)) return undefined; // dynamic or malformed
    dims.push(Number(p));
  }
  return { dtype: element, dims };
}

/** Splits on commas that are not nested in <>, (), [] or {}. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '<' || c === '(' || c === '[' || c === '{') depth++;
    else if (c === '>' || c === ')' || c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (text.slice(start).trim() !== '') parts.push(text.slice(start));
  return parts;
}

/** The text between the bracket at `open` and its partner. */
function bracketed(text: string, open: number): { inner: string; end: number } | undefined {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') {
      depth--;
      if (depth === 0) return { inner: text.slice(open + 1, i), end: i + 1 };
    }
  }
  return undefined;
}

function typeOf(part: string): TensorSpec | undefined {
  const tensor = /tensor<[^>]*>/.exec(part);
  return tensor ? parseTensorType(tensor[0]) : undefined;
}

/**
 * The signature of `@main`, or undefined when it cannot be read statically
 * (no main, dynamic shapes, tuple types): then only the plugin checks.
 */
export function parseMainSignature(mlir: string): Signature | undefined {
  const head = /func\.func\s+(?:public\s+)?@main\s*\(/.exec(mlir);
  if (!head) return undefined;
  const args = bracketed(mlir, head.index + head[0].length - 1);
  if (!args) return undefined;
  const inputs: TensorSpec[] = [];
  for (const part of splitTopLevel(args.inner)) {
    const spec = typeOf(part);
    if (!spec) return undefined;
    inputs.push(spec);
  }
  const rest = mlir.slice(args.end);
  const arrow = /^\s*->\s*/.exec(rest);
  const outputs: TensorSpec[] = [];
  if (arrow) {
    const after = rest.slice(arrow[0].length);
    let resultText: string;
    if (after.startsWith('(')) {
      const results = bracketed(after, 0);
      if (!results) return undefined;
      resultText = results.inner;
    } else {
      resultText = /^[^{]*/.exec(after)?.[0] ?? '';
    }
    for (const part of splitTopLevel(resultText)) {
      const spec = typeOf(part);
      if (!spec) return undefined;
      outputs.push(spec);
    }
  }
  return { inputs, outputs };
}

export function formatSpec(spec: TensorSpec): string {
  return `${spec.dtype}[${spec.dims.join(', ')}]`;
}
