/**
 * `stablehlo.custom_call` to a typed XLA FFI handler (api_version 4): the
 * way a program calls a kernel that the runtime registered with the plugin
 * (the addon's prefix-attention kernel, native/prefix_attention_ffi.h).
 * The builder cannot know what a target computes: the caller gives the
 * result types, and the handler checks its operands when it runs.
 */

import { ControlFlowBuilder } from './control-flow';
import { HloValue } from './core';
import { HloBuildError, TensorType } from './types';

/** CustomCallApiVersion API_VERSION_TYPED_FFI: the handler receives an XLA FFI call frame. */
const TYPED_FFI = 4;

export class CustomCallBuilder extends ControlFlowBuilder {
  /** Calls the FFI handler registered as `target` on `operands`; returns one value per result type. */
  customCall(target: string, operands: readonly HloValue[], resultTypes: readonly TensorType[]): HloValue[] {
    if (!/^[A-Za-z_][A-Za-z0-9_.$]*$/.test(target)) throw new HloBuildError(`customCall: target ${JSON.stringify(target)} must match [A-Za-z_][A-Za-z0-9_.$]*`);
    if (!resultTypes.length || !resultTypes.every((t) => t instanceof TensorType)) {
      throw new HloBuildError('customCall: needs at least one result TensorType');
    }
    return this.emit('custom_call', operands, resultTypes, [
      ['call_target_name', JSON.stringify(target)],
      ['api_version', `${TYPED_FFI} : i32`],
    ]);
  }
}
