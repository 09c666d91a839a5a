'use strict';
// The test's own weight conversions (independent of lib/device-weights):
// bf16 bits by round to nearest even, symmetric int8 in blocks of 32 input
// elements, and what each array of a load in a weight type must hold, given
// the arrays of the f32 load.
const { decoderWeightSpecs } = require('../../dist/hlo');

/** f32 -> bf16 bits, round to nearest even, by comparing the dropped half with 0x8000 (not the library's add-and-shift). */
function bf16Bits(values) {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < bits.length; i++) {
    const u = bits[i];
    const hi = u >>> 16;
    const lo = u & 0xffff;
    if (Number.isNaN(values[i])) out[i] = hi | 0x40;
    else out[i] = lo > 0x8000 || (lo === 0x8000 && (hi & 1) === 1) ? (hi + 1) & 0xffff : hi;
  }
  return out;
}

const BLOCK = 32;

/**
 * The int8 rule the project states, written over the device layout: one
 * block is 32 consecutive input elements of one output channel; scale =
 * f32(max|w| / 127), q = round-half-away-from-zero(w / scale) clamped to
 * [-127, 127]; scale 0 gives q 0. The input axis is the last of a [V, Dm]
 * table (a row is a token) and the middle of a stacked [Ly, in, out] matrix
 * (a column is an output channel), so the scales are [V, Dm / 32] and
 * [Ly, in / 32, out].
 */
function quantizeBlocks(values, dims, perLayer) {
  const [layers, rows, cols] = perLayer ? dims : [1, ...dims];
  // blockOf(l, r, c): the scale index of element (l, r, c).
  const blockOf = perLayer
    ? (l, r, c) => (l * (rows / BLOCK) + Math.floor(r / BLOCK)) * cols + c
    : (l, r, c) => r * (cols / BLOCK) + Math.floor(c / BLOCK);
  const max = new Float64Array(values.length / BLOCK);
  for (let l = 0, k = 0; l < layers; l++) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++, k++) {
        const b = blockOf(l, r, c);
        max[b] = Math.max(max[b], Math.abs(values[k]));
      }
    }
  }
  const scales = Float32Array.from(max, (m) => m / 127);
  const q = new Int8Array(values.length);
  for (let l = 0, k = 0; l < layers; l++) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++, k++) {
        const s = scales[blockOf(l, r, c)];
        if (s === 0) continue;
        const x = values[k] / s;
        q[k] = Math.max(-127, Math.min(127, Math.sign(x) * Math.floor(Math.abs(x) + 0.5)));
      }
    }
  }
  return { q, scales };
}

/** What each array of a `weights` load must hold, from the f32 arrays (decoderWeightSpecs order), with a description for messages. */
function expectedArrays(config, weights, reference) {
  const specs = decoderWeightSpecs(config, weights);
  const expected = specs.map(() => null);
  specs.forEach((spec, i) => {
    if (spec.scaleOf !== undefined) return;
    if (spec.elementType === 'f32') expected[i] = { what: `${spec.name} (f32)`, values: reference[i] };
    else if (spec.elementType === 'u16')
      expected[i] = {
        what: `${spec.name} [${spec.dims}] bf16 bits, round to nearest even`,
        values: bf16Bits(reference[i]),
      };
    else {
      const { q, scales } = quantizeBlocks(reference[i], spec.dims, spec.perLayer);
      const scaleIndex = specs.findIndex((s) => s.scaleOf === spec.name);
      expected[i] = { what: `${spec.name} [${spec.dims}] int8 values`, values: q };
      expected[scaleIndex] = {
        what: `${spec.name}Scale [${specs[scaleIndex].dims}]: one per 32 input elements`,
        values: scales,
        dims: spec.perLayer ? [spec.dims[0], spec.dims[1] / BLOCK, spec.dims[2]] : [spec.dims[0], spec.dims[1] / BLOCK],
      };
    }
  });
  return { specs, expected };
}

function firstMismatch(a, b) {
  if (a.length !== b.length) return `length ${a.length} vs ${b.length}`;
  for (let i = 0; i < a.length; i++)
    if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return `index ${i}: ${a[i]} vs ${b[i]}`;
  return null;
}

/** Mismatches of a load's arrays (DeviceBuffers) against expectedArrays(); [] when all equal. */
async function mismatches(buffers, config, weights, reference) {
  const { specs, expected } = expectedArrays(config, weights, reference);
  const bad = [];
  for (let i = 0; i < specs.length; i++) {
    if (expected[i].dims && firstMismatch(specs[i].dims, expected[i].dims))
      bad.push(`${specs[i].name}: dims [${specs[i].dims}]`);
    const m = firstMismatch(await buffers[i].toHost(), expected[i].values);
    if (m) bad.push(`${expected[i].what}: ${m}`);
  }
  return bad;
}

module.exports = { BLOCK, bf16Bits, quantizeBlocks, expectedArrays, firstMismatch, mismatches };
