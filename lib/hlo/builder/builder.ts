/**
 * The public builders: `ModuleBuilder` holds functions, `FunctionBuilder`
 * builds one function (and, with the same class, every region inside it).
 *
 *   const m = new ModuleBuilder('example');
 *   const f = m.func('main');
 *   const x = f.param(TensorType.f32([4]), 'x');
 *   f.return([f.exponential(x)]);
 *   const text = m.toText();
 */

import { FunctionState, HloValue } from './core';
import { CustomCallBuilder } from './ops-custom-call';
import { HloBuildError, TensorType } from './types';

export class FunctionBuilder extends CustomCallBuilder {
  /** Declares the next parameter of the function. Only in the function body, before `return`. */
  param(type: TensorType, name?: string): HloValue {
    if (this.block.isRegion) throw new HloBuildError('param: parameters belong to the function, not to a region');
    if (this.fn.results) throw new HloBuildError(`param: function @${this.fn.name} has already returned`);
    if (!(type instanceof TensorType))
      throw new HloBuildError('param: expected a TensorType (e.g. TensorType.f32([2, 3]))');
    const ref = this.fn.claimName(name ?? `arg${this.fn.params.length}`);
    const value = new HloValue(ref, type, this.block);
    this.fn.params.push({ name: ref.slice(1), value });
    return value;
  }

  /** Ends the function with its results (any number, no tuple). */
  return(values: readonly HloValue[]): void {
    if (this.block.isRegion)
      throw new HloBuildError('return: a region ends by returning values from its body callback');
    if (this.fn.results) throw new HloBuildError(`return: function @${this.fn.name} has already returned`);
    if (!Array.isArray(values)) throw new HloBuildError('return: expected an array of values');
    values.forEach((v) => this.use('return', v));
    this.fn.results = values.slice();
  }

  get params(): readonly HloValue[] {
    return this.fn.params.map((p) => p.value);
  }

  get results(): readonly HloValue[] | undefined {
    return this.fn.results;
  }
}

export class ModuleBuilder {
  private readonly functions: { state: FunctionState; builder: FunctionBuilder }[] = [];

  constructor(readonly name = 'module') {
    if (!/^[A-Za-z_][A-Za-z0-9_$.]*$/.test(name))
      throw new HloBuildError(`module name ${JSON.stringify(name)} must match [A-Za-z_][A-Za-z0-9_$.]*`);
  }

  /** Starts a function; XLA runs the one named `main`. */
  func(
    name = 'main',
    options: { readonly dotPrecision?: 'DEFAULT' | 'HIGH' | 'HIGHEST'; readonly dotOperands?: 'bf16' } = {},
  ): FunctionBuilder {
    if (!/^[A-Za-z_][A-Za-z0-9_$.]*$/.test(name))
      throw new HloBuildError(`function name ${JSON.stringify(name)} must match [A-Za-z_][A-Za-z0-9_$.]*`);
    if (this.functions.some((f) => f.state.name === name))
      throw new HloBuildError(`function @${name} is defined twice`);
    const state = new FunctionState(name, options.dotPrecision, options.dotOperands);
    const builder = new FunctionBuilder(state, state.body);
    this.functions.push({ state, builder });
    return builder;
  }

  toText(): string {
    if (!this.functions.length) throw new HloBuildError(`module @${this.name} has no functions`);
    const out: string[] = [`module @${this.name} {`];
    for (const { state } of this.functions) {
      if (!state.results) throw new HloBuildError(`function @${state.name} has no return; call f.return([...])`);
      const params = state.params.map((p) => `${p.value.ref}: ${p.value.type}`).join(', ');
      const results = state.results.map((v) => String(v.type)).join(', ');
      const visibility = state.name === 'main' ? 'public' : 'private';
      out.push(`  func.func ${visibility} @${state.name}(${params}) -> (${results}) {`);
      for (const line of state.body.lines) out.push(`    ${line}`);
      const refs = state.results.map((v) => v.ref).join(', ');
      out.push(`    "func.return"(${refs}) : (${results}) -> ()`);
      out.push('  }');
    }
    out.push('}');
    return out.join('\n') + '\n';
  }
}
