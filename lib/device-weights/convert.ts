/**
 * Host-side conversions for the weight upload: f32 -> bf16 bits (round to
 * nearest even, as PyTorch converts), f32 -> int8 by blocks (symmetric, one
 * f32 scale per block), and the blocked transpose that puts a Hugging Face
 * [out, in] matrix into the columns of an [in, width] device slice.
 */

type WeightArray = Float32Array | Uint16Array | Int8Array;

/** f32 -> bf16 bits, round to nearest even; NaN stays NaN (quiet). */
export function f32ToBf16(src: Float32Array): Uint16Array {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  const out = new Uint16Array(src.length);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i];
    out[i] = (b & 0x7fffffff) > 0x7f800000 ? (b >>> 16) | 0x40 : (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
  }
  return out;
}

/**
 * Symmetric int8 by blocks of `block` consecutive elements (Q8_0's rule, with
 * an f32 scale): scale = fround(max|block| / 127), q = round(x / scale) with
 * halves away from zero, in [-127, 127]; an all-zero block has scale 0 and
 * q 0. The value an element stands for is q * scale. The length must be a
 * multiple of `block`; scales[b] belongs to elements [b * block, (b + 1) * block).
 */
export function quantizeBlocksInt8(src: Float32Array, block: number): { data: Int8Array; scales: Float32Array } {
  if (src.length % block !== 0)
    throw new RangeError(`quantizeBlocksInt8: ${src.length} elements are not whole blocks of ${block}`);
  const data = new Int8Array(src.length);
  const scales = new Float32Array(src.length / block);
  for (let b = 0; b < scales.length; b++) {
    const base = b * block;
    let max = 0;
    for (let c = 0; c < block; c++) max = Math.max(max, Math.abs(src[base + c]));
    const scale = Math.fround(max / 127);
    scales[b] = scale;
    if (scale === 0) continue;
    for (let c = 0; c < block; c++) {
      const x = src[base + c] / scale;
      const q = x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
      data[base + c] = q > 127 ? 127 : q < -127 ? -127 : q;
    }
  }
  return { data, scales };
}

/** Copies `src` into `out` (same element type) from element `offset`. */
export function copyInto(src: WeightArray, out: WeightArray, offset: number): void {
  if (src.constructor !== out.constructor)
    throw new TypeError(`copyInto: ${src.constructor.name} into ${out.constructor.name}`);
  (out as Float32Array).set(src as Float32Array, offset);
}

// Square tiles keep both the reads and the writes in cache: a plain loop over
// a 1536 x 8960 matrix misses on every write.
const TILE = 64;

/**
 * Writes the transpose of a row-major [rows, cols] matrix into `out` (same
 * element type) as [cols, rows] columns: out[offset + c * outCols + colOffset + r] = src[r * cols + c].
 */
export function transposeInto(
  src: WeightArray,
  rows: number,
  cols: number,
  out: WeightArray,
  offset: number,
  outCols: number,
  colOffset: number,
): void {
  if (src.constructor !== out.constructor)
    throw new TypeError(`transposeInto: ${src.constructor.name} into ${out.constructor.name}`);
  for (let r0 = 0; r0 < rows; r0 += TILE) {
    const r1 = Math.min(rows, r0 + TILE);
    for (let c0 = 0; c0 < cols; c0 += TILE) {
      const c1 = Math.min(cols, c0 + TILE);
      for (let c = c0; c < c1; c++) {
        const base = offset + c * outCols + colOffset;
        for (let r = r0; r < r1; r++) out[base + r] = src[r * cols + c];
      }
    }
  }
}
