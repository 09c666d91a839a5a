/**
 * `stablehlo.custom_call` to a typed XLA FFI handler (api_version 4): the
 * way a program calls a kernel that the runtime registered with the plugin
 * (the addon's prefix-attention kernel, native/kernels/prefix_attention_ffi.h).
 * The builder cannot know what a target computes: the caller gives the
 * result types, and the handler checks its operands when it runs.
 */

import { ControlFlowBuilder } from './control-flow';
import { HloValue } from './core';
import { HloBuildError, TensorType } from './types';

/** CustomCallApiVersion API_VERSION_TYPED_FFI: the handler receives an XLA FFI call frame. */
const TYPED_FFI = 4;

/** CustomCallApiVersion API_VERSION_STATUS_RETURNING: the convention of XLA's own library calls (cuDNN). */
const STATUS_RETURNING = 2;

/** A custom call to a target the compiler itself rewrites (cuDNN's fused attention on XLA GPU). */
interface BackendCustomCall {
  readonly target: string;
  /** The compiler's configuration text for this call, passed through as is (a JSON string for cuDNN). */
  readonly backendConfig: string;
  /** Minor-to-major layout of each operand and result, one list per value. */
  readonly operandLayouts: readonly (readonly number[])[];
  readonly resultLayouts: readonly (readonly number[])[];
}

/** An MLIR string literal: `"` and `\` (the only characters JSON needs escaped there) as hex escapes. */
function mlirString(text: string): string {
  return `"${text.replace(/\\/g, '\\5C').replace(/"/g, '\\22')}"`;
}

/** `[dense<[3, 2, 1, 0]> : tensor<4xindex>, ...]`, the layouts attribute of a custom call. */
function layoutsAttr(layouts: readonly (readonly number[])[]): string {
  return `[${layouts
    .map((l) => `dense<${l.length === 1 ? l[0] : `[${l.join(', ')}]`}> : ` + `tensor<${l.length}xindex>`)
    .join(', ')}]`;
}

export class CustomCallBuilder extends ControlFlowBuilder {
  /** Calls the FFI handler registered as `target` on `operands`; returns one value per result type. */
  customCall(target: string, operands: readonly HloValue[], resultTypes: readonly TensorType[]): HloValue[] {
    if (!/^[A-Za-z_][A-Za-z0-9_.$]*$/.test(target))
      throw new HloBuildError(`customCall: target ${JSON.stringify(target)} must match [A-Za-z_][A-Za-z0-9_.$]*`);
    if (!resultTypes.length || !resultTypes.every((t) => t instanceof TensorType)) {
      throw new HloBuildError('customCall: needs at least one result TensorType');
    }
    return this.emit('custom_call', operands, resultTypes, [
      ['call_target_name', JSON.stringify(target)],
      ['api_version', `${TYPED_FFI} : i32`],
    ]);
  }

  /** A custom call the compiler rewrites itself, with its backend config and explicit layouts. */
  backendCustomCall(
    call: BackendCustomCall,
    operands: readonly HloValue[],
    resultTypes: readonly TensorType[],
  ): HloValue[] {
    if (!/^[A-Za-z_][A-Za-z0-9_.$]*$/.test(call.target))
      throw new HloBuildError(
        `backendCustomCall: target ${JSON.stringify(call.target)} must match [A-Za-z_][A-Za-z0-9_.$]*`,
      );
    const fits = (values: readonly { rank: number }[], layouts: readonly (readonly number[])[]): boolean =>
      values.length === layouts.length &&
      values.every(
        (v, i) =>
          layouts[i].length === Math.max(1, v.rank) && [...layouts[i]].sort((a, b) => a - b).every((d, j) => d === j),
      );
    if (!fits(operands, call.operandLayouts) || !fits(resultTypes, call.resultLayouts)) {
      throw new HloBuildError(
        `backendCustomCall ${call.target}: one layout (a permutation of the dims) per operand and result`,
      );
    }
    return this.emit('custom_call', operands, resultTypes, [
      ['call_target_name', JSON.stringify(call.target)],
      ['api_version', `${STATUS_RETURNING} : i32`],
      ['backend_config', mlirString(call.backendConfig)],
      ['operand_layouts', layoutsAttr(call.operandLayouts)],
      ['result_layouts', layoutsAttr(call.resultLayouts)],
    ]);
  }
}
