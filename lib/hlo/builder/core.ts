/**
 * Builder core: SSA values, blocks, the function being built, and the one
 * place where operations are written out as StableHLO text.
 *
 * Every operation is emitted in the MLIR *generic* form, which is uniform for
 * all ops and independent of each op's pretty syntax:
 *
 *   %3 = "stablehlo.add"(%1, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
 *   %7 = "stablehlo.reduce"(%5, %6) ({ ^bb0(...): ... }) {dimensions = array<i64: 1>} : (...) -> ...
 *
 * Values carry their TensorType, so every op infers and checks its result
 * shape while the program is built, and a mistake is reported where it is made.
 */

import {
  HloBuildError,
  HloElementType,
  TensorType,
  isElementType,
  isFloatType,
  isIntegerType,
  isUnsignedIntType,
  mlirElementType,
} from './types';

/** An SSA value in a function under construction: a name and a tensor type. */
export class HloValue {
  /** @internal */
  constructor(
    /** MLIR reference, e.g. `%12`, `%q`, `%5#1`. */
    readonly ref: string,
    readonly type: TensorType,
    /** @internal the block that defines this value */
    readonly block: Block,
  ) {}

  get dims(): readonly number[] {
    return this.type.dims;
  }
  get elementType(): HloElementType {
    return this.type.elementType;
  }
  get rank(): number {
    return this.type.dims.length;
  }
  toString(): string {
    return `${this.ref}: ${this.type}`;
  }
}

/** A basic block: arguments and lines of text. Regions hold one block each. */
export class Block {
  readonly lines: string[] = [];
  constructor(
    readonly fn: FunctionState,
    readonly args: HloValue[] = [],
    /** Only the function's top-level block may declare parameters and return. */
    readonly isRegion = false,
  ) {}
}

interface FunctionParam {
  name: string;
  value: HloValue;
}

/** State shared by a function and all regions nested in it. */
export class FunctionState {
  private counter = 0;
  private readonly usedNames = new Set<string>();
  readonly params: FunctionParam[] = [];
  results: HloValue[] | undefined;
  readonly body: Block;

  constructor(
    readonly name: string,
    /** precision_config of dots that name none (regions included). */
    readonly dotPrecision?: 'DEFAULT' | 'HIGH' | 'HIGHEST',
    /** 'bf16': f32 dot operands are rounded to bf16 and the product accumulates in f32. */
    readonly dotOperands?: 'bf16',
  ) {
    this.body = new Block(this);
  }

  /** A fresh numeric SSA name (unique in the whole function, regions included). */
  fresh(): string {
    return `%${this.counter++}`;
  }

  claimName(name: string): string {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new HloBuildError(`parameter name ${JSON.stringify(name)} must match [A-Za-z_][A-Za-z0-9_]*`);
    }
    if (this.usedNames.has(name))
      throw new HloBuildError(`parameter name ${JSON.stringify(name)} is used twice in function @${this.name}`);
    this.usedNames.add(name);
    return `%${name}`;
  }
}

/** Something that can stand for a tensor operand: a value, or a JS number to splat. */
export type Operand = HloValue | number;

type Attr = [name: string, text: string];

/** Formats `array<i64: 1, 2>` (DenseI64ArrayAttr). */
export function i64Array(xs: readonly number[]): string {
  return xs.length ? `array<i64: ${xs.join(', ')}>` : 'array<i64>';
}

/** Formats an integer attribute `3 : i64`. */
export function i64Attr(x: number): string {
  return `${x} : i64`;
}

function sameTypeList(types: readonly TensorType[]): string {
  return types.map(String).join(', ');
}

/** Exact MLIR text for one element of the given type. */
function formatScalar(value: number | boolean, elementType: HloElementType, context: string): string {
  if (elementType === 'pred') {
    if (typeof value === 'boolean') return value ? 'true' : 'false';
    if (value === 0 || value === 1) return value ? 'true' : 'false';
    throw new HloBuildError(`${context}: pred constant must be a boolean or 0/1, got ${value}`);
  }
  if (typeof value !== 'number')
    throw new HloBuildError(`${context}: ${elementType} constant must be a number, got ${typeof value}`);
  if (isIntegerType(elementType)) {
    if (!Number.isSafeInteger(value))
      throw new HloBuildError(`${context}: ${elementType} constant must be an integer, got ${value}`);
    const bits = Number(elementType.slice(1));
    const lo = isUnsignedIntType(elementType) ? 0 : -(2 ** (bits - 1));
    const hi = isUnsignedIntType(elementType) ? 2 ** bits - 1 : 2 ** (bits - 1) - 1;
    if (value < lo || value > hi)
      throw new HloBuildError(`${context}: ${value} is out of range for ${elementType} [${lo}, ${hi}]`);
    return String(value);
  }
  if (!isFloatType(elementType)) throw new HloBuildError(`${context}: unsupported element type ${elementType}`);
  if (!Number.isFinite(value)) return nonFiniteHex(value, elementType);
  // Round-trip precision: 9 significant digits identify an f32, 17 an f64.
  if (elementType === 'f32') return Math.fround(value).toExponential(8);
  return value.toExponential(elementType === 'f64' ? 16 : 8);
}

function nonFiniteHex(value: number, t: HloElementType): string {
  const table: Record<string, [string, string, string]> = {
    // [+inf, -inf, nan] bit patterns
    f16: ['0x7C00', '0xFC00', '0x7E00'],
    bf16: ['0x7F80', '0xFF80', '0x7FC0'],
    f32: ['0x7F800000', '0xFF800000', '0x7FC00000'],
    f64: ['0x7FF0000000000000', '0xFFF0000000000000', '0x7FF8000000000000'],
  };
  const [pos, neg, nan] = table[t];
  return Number.isNaN(value) ? nan : value > 0 ? pos : neg;
}

/**
 * The core of a block builder: emitting ops, constants and regions. The op
 * families (elementwise, shape, reduction, control flow) extend this class in
 * their own files; `FunctionBuilder` is the end of that chain.
 */
export class CoreBuilder {
  /** @internal */
  constructor(
    /** @internal */ readonly fn: FunctionState,
    /** @internal */ readonly block: Block,
  ) {}

  /** Checks that `v` can be used in this block (same function, not from an enclosing block). */
  protected use(op: string, v: HloValue): HloValue {
    if (!(v instanceof HloValue)) {
      throw new HloBuildError(`${op}: expected an HloValue operand, got ${v === null ? 'null' : typeof v}`);
    }
    if (v.block.fn !== this.fn) {
      throw new HloBuildError(`${op}: operand ${v.ref} belongs to function @${v.block.fn.name}, not @${this.fn.name}`);
    }
    if (v.block !== this.block) {
      throw new HloBuildError(
        `${op}: operand ${v} is defined outside this region; a loop or reduction body may only use its own ` +
          `arguments and values made inside it (pass outer values in as loop-carried invariants)`,
      );
    }
    return v;
  }

  /** Turns a JS number into a scalar-splat constant of the given type; checks a value's scope. */
  protected operand(op: string, x: Operand, like: TensorType): HloValue {
    if (typeof x === 'number') return this.splat(x, like);
    return this.use(op, x);
  }

  /**
   * Writes one operation and returns its results.
   * `regions` are blocks already filled by `buildRegion`.
   */
  protected emit(
    op: string,
    operands: readonly HloValue[],
    resultTypes: readonly TensorType[],
    attrs: readonly Attr[] = [],
    regions: readonly Block[] = [],
  ): HloValue[] {
    for (const v of operands) this.use(op, v);
    const name = this.fn.fresh();
    const results =
      resultTypes.length === 1
        ? [new HloValue(name, resultTypes[0], this.block)]
        : resultTypes.map((t, i) => new HloValue(`${name}#${i}`, t, this.block));
    const lhs =
      resultTypes.length === 0 ? '' : resultTypes.length === 1 ? `${name} = ` : `${name}:${resultTypes.length} = `;
    const args = operands.map((v) => v.ref).join(', ');
    const attrText = attrs.length ? ` {${attrs.map(([k, v]) => `${k} = ${v}`).join(', ')}}` : '';
    const opTypes = `(${sameTypeList(operands.map((v) => v.type))})`;
    const resTypes = resultTypes.length === 1 ? String(resultTypes[0]) : `(${sameTypeList(resultTypes)})`;
    const head = `${lhs}"stablehlo.${op}"(${args})`;
    if (!regions.length) {
      this.block.lines.push(`${head}${attrText} : ${opTypes} -> ${resTypes}`);
    } else {
      this.block.lines.push(`${head} (`);
      regions.forEach((r, i) => {
        this.block.lines.push(`  {`);
        const argList = r.args.map((a) => `${a.ref}: ${a.type}`).join(', ');
        this.block.lines.push(`  ^bb0(${argList}):`);
        for (const line of r.lines) this.block.lines.push(`    ${line}`);
        this.block.lines.push(i + 1 < regions.length ? `  },` : `  }`);
      });
      this.block.lines.push(`)${attrText} : ${opTypes} -> ${resTypes}`);
    }
    return results;
  }

  /** Emits an op with one result. */
  protected emit1(
    op: string,
    operands: readonly HloValue[],
    resultType: TensorType,
    attrs: readonly Attr[] = [],
    regions: readonly Block[] = [],
  ): HloValue {
    return this.emit(op, operands, [resultType], attrs, regions)[0];
  }

  /**
   * Builds a region: a new block with the given argument types, filled by
   * `fill` with a builder of the same class, ending in `stablehlo.return`.
   */
  protected buildRegion(
    op: string,
    argTypes: readonly TensorType[],
    fill: (b: this, args: HloValue[]) => HloValue[],
    expectResults: readonly TensorType[],
  ): Block {
    const block = new Block(this.fn, [], true);
    const bound = argTypes.map((t) => new HloValue(this.fn.fresh(), t, block));
    block.args.push(...bound);
    const Ctor = this.constructor as new (fn: FunctionState, block: Block) => this;
    const child = new Ctor(this.fn, block);
    const out = fill(child, bound);
    if (!Array.isArray(out)) throw new HloBuildError(`${op}: the region body must return an array of values`);
    if (out.length !== expectResults.length) {
      throw new HloBuildError(`${op}: the region body returned ${out.length} values, expected ${expectResults.length}`);
    }
    out.forEach((v, i) => {
      child.use(`${op} region return`, v);
      if (!v.type.equals(expectResults[i])) {
        throw new HloBuildError(`${op}: region result ${i} has type ${v.type}, expected ${expectResults[i]}`);
      }
    });
    block.lines.push(
      `"stablehlo.return"(${out.map((v) => v.ref).join(', ')}) : (${sameTypeList(out.map((v) => v.type))}) -> ()`,
    );
    return block;
  }

  // ---- constants ---------------------------------------------------------

  /** A constant filled with one value (a scalar when `type` has no dims). */
  splat(value: number | boolean, type: TensorType): HloValue {
    const text = formatScalar(value, type.elementType, 'constant');
    return this.emit1('constant', [], type, [['value', `dense<${text}> : ${type}`]]);
  }

  /** A scalar constant: `f.scalar(0.5)` (f32), `f.scalar(3, 's32')`. */
  scalar(value: number | boolean, elementType: HloElementType = 'f32'): HloValue {
    if (!isElementType(elementType))
      throw new HloBuildError(`scalar: unknown element type ${JSON.stringify(elementType)}`);
    return this.splat(value, new TensorType(elementType, []));
  }

  /** A constant from a flat, row-major array of values. */
  constant(values: ArrayLike<number | boolean>, type: TensorType): HloValue {
    if (values.length !== type.size) {
      throw new HloBuildError(`constant: ${values.length} values given for ${type}, which holds ${type.size}`);
    }
    const flat = Array.from(values, (v) => formatScalar(v, type.elementType, 'constant'));
    return this.emit1('constant', [], type, [['value', `dense<${nest(flat, type.dims)}> : ${type}`]]);
  }

  /** The MLIR element type name of `t` (for custom attributes). */
  protected mlirType(t: HloElementType): string {
    return mlirElementType(t);
  }
}

function nest(flat: string[], dims: readonly number[]): string {
  if (dims.length === 0) return flat[0];
  let pos = 0;
  const rec = (d: number): string => {
    const parts: string[] = [];
    for (let i = 0; i < dims[d]; i++) parts.push(d + 1 === dims.length ? flat[pos++] : rec(d + 1));
    return `[${parts.join(', ')}]`;
  };
  return rec(0);
}
