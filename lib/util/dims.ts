/** Small helpers on static shapes, shared by the runtime and the HLO builder. */

export function sameDims(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function elementCount(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

/**
 * What is wrong with `dims` as a static shape a device can hold ("dims ..."),
 * or undefined when nothing is:
 * each extent a non-negative safe integer, and the product of the non-zero
 * extents at most 2^53 - 1. XLA multiplies every extent of a shape, a zero
 * among them included, and refuses a product past int64; [2^32, 2^32, 0] has
 * no element but is refused there ("overflow in static extent product").
 */
export function dimsProblem(dims: unknown): string | undefined {
  if (!Array.isArray(dims)) return 'must be an array of non-negative integers';
  let product = 1;
  for (const d of dims as unknown[]) {
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) return 'must be non-negative integers';
    if (d !== 0) product *= d;
    if (product > Number.MAX_SAFE_INTEGER) return 'must have a product (zeros left out) of at most 2^53 - 1';
  }
  return undefined;
}
