/**
 * A built program: StableHLO text plus the description of its inputs and
 * outputs (names, element types, dims), and a content hash for caches.
 */

import { createHash } from 'node:crypto';
import { FunctionBuilder, ModuleBuilder } from './builder';
import { HloValue } from './core';
import { maybeDumpProgram } from './dump';
import type { DotPrecision } from './ops-dot';
import { HloBuildError, HloElementType } from './types';

export interface ProgramTensor {
  name: string;
  dtype: HloElementType;
  dims: number[];
}

export interface HloProgram {
  /** Module name, e.g. `masked_attention_dense`. */
  name: string;
  /** StableHLO MLIR text, entry function `main`. */
  text: string;
  /** sha256 of `text`, hex. */
  hash: string;
  /** Parameters of `main`, in order. */
  inputs: ProgramTensor[];
  /** Results of `main`, in order. */
  outputs: ProgramTensor[];
}

/** How a program computes, beyond its shapes. */
export interface ProgramOptions {
  /**
   * precision_config of every dot that names none (docs/design.md "Platforms and precision"):
   * HIGHEST is true f32 arithmetic on every platform; DEFAULT lets the
   * platform use its fast mode (TF32 on NVIDIA GPUs). Unset: no attribute,
   * which XLA treats as DEFAULT.
   */
  readonly dotPrecision?: DotPrecision;
  /**
   * 'bf16': every f32 dot rounds its operands to bf16 and accumulates in f32
   * (bf16 x bf16 -> f32, what tensor cores run fastest: 778 TFLOP/s against
   * 397 for TF32 on an H100). Unset: dots take their operands as they are.
   */
  readonly dotOperands?: 'bf16';
}

/**
 * Builds a one-function program: `build` declares parameters with `f.param`
 * and returns the named outputs, in order.
 *
 *   buildProgram('scale', (f) => {
 *     const x = f.param(TensorType.f32([4]), 'x');
 *     return { y: f.multiply(x, 2) };
 *   });
 */
export function buildProgram(
  name: string,
  build: (f: FunctionBuilder) => Record<string, HloValue>,
  options: ProgramOptions = {},
): HloProgram {
  const m = new ModuleBuilder(name);
  const f = m.func('main', {
    ...(options.dotPrecision !== undefined ? { dotPrecision: options.dotPrecision } : {}),
    ...(options.dotOperands !== undefined ? { dotOperands: options.dotOperands } : {}),
  });
  const outs = build(f);
  if (!outs || typeof outs !== 'object')
    throw new HloBuildError(`${name}: the build callback must return an object of named outputs`);
  const entries = Object.entries(outs);
  if (!entries.length) throw new HloBuildError(`${name}: a program needs at least one output`);
  f.return(entries.map(([, v]) => v));
  const text = m.toText();
  const hash = createHash('sha256').update(text).digest('hex');
  maybeDumpProgram(name, hash, text);
  const describe = (n: string, v: HloValue): ProgramTensor => ({ name: n, dtype: v.elementType, dims: v.dims.slice() });
  return {
    name,
    text,
    hash,
    inputs: f.params.map((v) => describe(v.ref.slice(1), v)),
    outputs: entries.map(([n, v]) => describe(n, v)),
  };
}
