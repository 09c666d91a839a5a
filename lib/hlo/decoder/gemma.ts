/**
 * The Gemma parts of the decoder's layer loop (layers.ts): GeGLU, and
 * what a layer reads at the loop counter (its window, its RoPE tables, its
 * attention options), so one loop body serves local and global layers.
 */
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { AttentionOptions } from '../attention';
import { NO_WINDOW } from '../attention';
import { DecoderDims } from './layout';
import { TensorType } from '../builder/types';

/**
 * gelu with the tanh approximation (transformers' gelu_pytorch_tanh): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 */
export function geluTanh(f: FunctionBuilder, x: HloValue): HloValue {
  const inner = f.multiply(f.add(x, f.multiply(f.multiply(f.multiply(x, x), x), 0.044715)), Math.sqrt(2 / Math.PI));
  return f.multiply(f.multiply(x, 0.5), f.add(f.tanh(inner), 1));
}

/**
 * Layer i's window (s32 scalar; NO_WINDOW for a global layer), read from a
 * constant table at the loop counter: one loop body serves local and global
 * layers. Undefined for a model without windows.
 */
export function layerWindow(b: FunctionBuilder, d: DecoderDims, i: HloValue): HloValue | undefined {
  const w = d.slidingWindow;
  if (!w) return undefined;
  const table = b.constant(
    w.layers.map((local) => (local ? w.window : NO_WINDOW)),
    TensorType.s32([d.numLayers]),
  );
  return b.reshape(b.dynamicSlice(table, [i], [1]), []);
}

/**
 * The RoPE tables of layer i: [cos, sin] of the global layers, or, where the
 * local layers have their own (`tables` holds four), the local ones for a
 * layer whose window is below NO_WINDOW.
 */
export function layerRope(
  b: FunctionBuilder,
  tables: readonly HloValue[],
  window: HloValue | undefined,
): [HloValue, HloValue] {
  const [cos, sin] = tables;
  if (tables.length < 4 || !window) return [cos, sin];
  const local = b.broadcastInDim(b.lt(window, NO_WINDOW), cos.dims, []);
  return [b.select(local, tables[2], cos), b.select(local, tables[3], sin)];
}

/**
 * The attention options of a layer: Gemma's score scale and soft cap, the layer's window; undefined for the other
 * families.
 */
export function layerAttentionOptions(d: DecoderDims, window: HloValue | undefined): AttentionOptions | undefined {
  const gemma = d.gemma;
  if (!gemma && !window) return undefined;
  return {
    ...(gemma ? { scale: gemma.attentionScale } : {}),
    ...(gemma?.attentionSoftcap !== undefined ? { softcap: gemma.attentionSoftcap } : {}),
    ...(window ? { window } : {}),
  };
}
