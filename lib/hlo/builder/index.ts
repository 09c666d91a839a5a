/**
 * lib/hlo/builder: the typed StableHLO text builder. `ModuleBuilder` ->
 * `FunctionBuilder` (params, ops in ops-*.ts, regions and loops in
 * control-flow.ts, custom calls, return) -> MLIR text; `buildProgram`
 * (program.ts) wraps that into an `HloProgram` with input/output
 * descriptions and a hash (dump.ts writes it out on request).
 * May import: no sibling.
 */

export { HloBuildError, TensorType, tensorType } from './types';
export type { HloElementType } from './types';
export { HloValue } from './core';
export type { Operand } from './core';
export { FunctionBuilder, ModuleBuilder } from './builder';
export type { ComparisonDirection } from './ops-elementwise';
export type { GatherDims } from './ops-shape';
export type { DotDims } from './ops-dot';
export type { ForLoopOptions } from './control-flow';
export { buildProgram } from './program';
export type { HloProgram, ProgramTensor } from './program';
export { DUMP_ENV } from './dump';
