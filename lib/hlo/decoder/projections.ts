/**
 * A layer's projections as StableHLO: each matrix made ready for its dot
 * (bf16 and int8 storage converted, or bf16 kept under bf16 dots), through
 * the addon's matmul kernel where the options run it (its operands, the
 * prologue and the residual epilogue: lib/hlo/nn/matmul-kernel.ts), else
 * XLA's dot; the MLP; the LM head's table for its dot. layers.ts runs them in
 * the layer loop.
 */
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { HloBuildError } from '../builder/types';
import { rmsNorm } from '../nn/functions';
import { MatmulPrologue, matmulBf16Kernel, matmulF32Kernel } from '../nn/matmul-kernel';
import { geluTanh } from './gemma';
import { DecoderWeightName, INT8_BLOCK, KernelMatrixName, MatrixName } from './layout';

export type Weights = Partial<Record<DecoderWeightName, HloValue>>;

/** bf16 bits (as u16) -> f32, exactly: the bits are the top half of the f32. */
function widenBf16(f: FunctionBuilder, bits: HloValue): HloValue {
  return f.bitcastConvert(f.shiftLeft(f.convert(bits, 'u32'), 16), 'f32');
}

/**
 * A matrix for its dot, as f32: bf16 and int8 are converted here, int8
 * scaled by block along `inAxis` (one scale per INT8_BLOCK input elements
 * of each output channel: the scale array is the matrix's dims with that
 * axis divided by the block). f32 passes through with no op, so the f32
 * programs are what they always were. A matrix typed bf16 stays bf16 where
 * `keepBf16` (it goes into a bf16 dot as it is), else is converted exactly.
 */
export function matrixForDot(
  f: FunctionBuilder,
  matrix: HloValue,
  scale: HloValue | undefined,
  inAxis: number,
  keepBf16 = false,
): HloValue {
  if (matrix.elementType === 'f32') return matrix;
  if (matrix.elementType === 'u16') return widenBf16(f, matrix);
  if (matrix.elementType === 'bf16') return keepBf16 ? matrix : f.convert(matrix, 'f32');
  const x = f.convert(matrix, 'f32');
  if (!scale) throw new HloBuildError('decoder: an int8 matrix came without its scales');
  // [.., in, ..] -> [.., in / B, B, ..]: splitting an axis is free in row-major order.
  const dims = x.dims;
  const blocked = [...dims.slice(0, inAxis), dims[inAxis] / INT8_BLOCK, INT8_BLOCK, ...dims.slice(inAxis + 1)];
  const scaleAxes = dims.map((_, i) => (i <= inAxis ? i : i + 1));
  const scaled = f.multiply(f.reshape(x, blocked), f.broadcastInDim(scale, blocked, scaleAxes));
  return f.reshape(scaled, dims);
}

/** The function computes its dots in bf16: a matrix typed bf16 goes into them as it is. */
function bf16Dots(f: FunctionBuilder): boolean {
  return f.dotOperands === 'bf16';
}

/**
 * x [T, in] @ one layer's matrix [in, out] -> f32 [T, out], whatever its
 * storage: through the matmul kernel where `kernel` takes the matrix, else
 * XLA's dot. `bf16Product`: the dot returns bf16 (accumulated in f32, rounded
 * once), converted to f32 for the math after it.
 */
export function project(
  f: FunctionBuilder,
  x: HloValue,
  layer: Weights,
  name: MatrixName,
  bf16Product = false,
  kernel?: LayerMatrices,
): HloValue {
  const byKernel = kernelFor(kernel, name);
  if (byKernel) return kernelProduct(f, x, byKernel);
  const matrix = matrixForDot(f, need(layer, name), layer[`${name}Scale`], 0, bf16Dots(f));
  if (!bf16Product) return f.matmul(x, matrix);
  return f.convert(f.dotGeneral(x, matrix, { lhsContract: [1], rhsContract: [0], result: 'bf16' }), 'f32');
}

/**
 * rmsNorm(x) @ one layer's matrix: through the matmul kernel with the norm as its prologue where the
 * kernel takes the matrix (the normalized rows never leave the call), else the norm, then project().
 */
export function projectNormed(
  f: FunctionBuilder,
  x: HloValue,
  layer: Weights,
  normName: 'attnNorm' | 'ffnNorm',
  name: MatrixName,
  eps: number,
  bf16Product: boolean,
  kernel?: LayerMatrices,
): HloValue {
  const byKernel = kernelFor(kernel, name);
  const norms = kernel?.stacked[normName];
  if (byKernel && norms) return kernelProduct(f, x, byKernel, { kind: 'rmsNorm', weights: norms, eps });
  return project(f, rmsNorm(f, x, need(layer, normName), eps), layer, name, bf16Product, kernel);
}

/**
 * The MLP's down projection of its gate | up product [T, 2F]: SwiGLU (Gemma: GeGLU, tanh GELU) then
 * wDown; the activation inside the matmul kernel's call where it takes wDown (its prologue), and
 * `residual` (where given) added by it too (its epilogue).
 */
export function mlpDown(
  f: FunctionBuilder,
  gateUp: HloValue,
  layer: Weights,
  gemma: boolean,
  kernel?: LayerMatrices,
  residual?: HloValue,
): HloValue {
  const byKernel = kernelFor(kernel, 'wDown');
  if (byKernel) return kernelProduct(f, gateUp, byKernel, { kind: gemma ? 'geglu' : 'swiglu' }, residual);
  const [t, width] = gateUp.dims;
  const F = width / 2;
  const gate = f.slice(gateUp, [0, 0], [t, F]);
  const up = f.slice(gateUp, [0, F], [t, 2 * F]);
  const activated = f.multiply(gemma ? geluTanh(f, gate) : f.multiply(gate, f.logistic(gate)), up);
  const down = project(f, activated, layer, 'wDown', false, kernel);
  return residual ? f.add(residual, down) : down;
}

/**
 * A layer's matrices as the matmul kernel takes them: the stacked arrays, the layer's index, the ones
 * its projections take (options.ts, kernelMatrices) and their widths (packed arrays round them up).
 */
export interface LayerMatrices {
  /** Which kernel: bf16 products with f32 sums, or f32 throughout. */
  readonly arithmetic: 'bf16' | 'f32';
  readonly stacked: Partial<Record<DecoderWeightName, HloValue>>;
  readonly index: HloValue;
  readonly takes: readonly KernelMatrixName[];
  readonly columns: Partial<Record<DecoderWeightName, number>>;
  /** The pass's live rows (LayerLoopInputs.liveRows), where it says which rows are padding. */
  readonly live: HloValue | undefined;
}

interface KernelOperands {
  readonly arithmetic: 'bf16' | 'f32';
  readonly stacked: HloValue;
  readonly index: HloValue;
  readonly columns: number | undefined;
  readonly live: HloValue | undefined;
}

/** The kernel's operands for matrix `name`, where it takes it. */
function kernelFor(kernel: LayerMatrices | undefined, name: MatrixName): KernelOperands | undefined {
  const stacked = kernel?.stacked[name];
  if (!kernel || !stacked || !(kernel.takes as readonly string[]).includes(name)) return undefined;
  return {
    arithmetic: kernel.arithmetic,
    stacked,
    index: kernel.index,
    columns: kernel.columns[name],
    live: kernel.live,
  };
}

/** [residual +] x (after `prologue`) . the layer's matrix, through the kernel the operands name. */
function kernelProduct(
  f: FunctionBuilder,
  x: HloValue,
  k: KernelOperands,
  prologue?: MatmulPrologue,
  residual?: HloValue,
): HloValue {
  const rows = { live: k.live, residual };
  if (k.arithmetic === 'f32') return matmulF32Kernel(f, x, k.stacked, k.index, prologue, rows, k.columns);
  return matmulBf16Kernel(f, x, k.stacked, k.index, prologue, k.columns, rows);
}

/**
 * residual + x @ one layer's matrix (a residual add): the kernel's epilogue where the kernel takes the
 * matrix, else XLA's add after project().
 */
export function projectAdd(
  f: FunctionBuilder,
  residual: HloValue,
  x: HloValue,
  layer: Weights,
  name: MatrixName,
  kernel?: LayerMatrices,
): HloValue {
  const byKernel = kernelFor(kernel, name);
  if (byKernel) return kernelProduct(f, x, byKernel, undefined, residual);
  return f.add(residual, project(f, x, layer, name, false, kernel));
}

/** The LM head as lib/hlo/nn/lm-head.ts reads it: the table, and where it is widened, how its rows are. */
export interface LmHeadForDot {
  readonly lmHead: HloValue;
  readonly readRows?: (b: FunctionBuilder, rows: HloValue) => HloValue;
}

/**
 * The LM head [V, Dm] for its dot: f32, or bf16 as stored under bf16 dots (the whole table: its logsumexp needs every
 * row). A bf16 table under f32 dots stays as stored, its rows widened where they are read (the label rows alone where
 * a pass skips the full product); an int8 one is scaled whole.
 */
export function lmHeadForDot(f: FunctionBuilder, w: Weights): LmHeadForDot {
  const table = need(w, 'lmHead');
  // u16 bits under bf16 dots: the bf16 table itself, exactly as a table typed bf16 (never an f32 table, which
  // few rows would read unrounded: lib/hlo/nn/lm-head.ts).
  if (table.elementType === 'u16' && bf16Dots(f)) return { lmHead: f.bitcastConvert(table, 'bf16') };
  if ((table.elementType === 'u16' || table.elementType === 'bf16') && !bf16Dots(f))
    return { lmHead: table, readRows: (b, rows) => matrixForDot(b, rows, undefined, 1) };
  return { lmHead: matrixForDot(f, table, w.lmHeadScale, 1, bf16Dots(f)) };
}

export function need(w: Weights, name: DecoderWeightName): HloValue {
  const v = w[name];
  if (!v) throw new HloBuildError(`decoder: weight ${name} is missing`);
  return v;
}
