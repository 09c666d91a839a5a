let halfTable: Float32Array | undefined;

/** All 65536 half-precision values as f32, built once: a lookup beats bit twiddling per element. */
export function halfToFloatTable(): Float32Array {
  if (halfTable) return halfTable;
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    let value: number;
    if (exponent === 0)
      value = mantissa * 2 ** -24; // zero and subnormals
    else if (exponent === 31) value = mantissa === 0 ? Infinity : NaN;
    else value = (1 + mantissa / 1024) * 2 ** (exponent - 15);
    table[h] = sign * value;
  }
  halfTable = table;
  return table;
}
