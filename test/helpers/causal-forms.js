'use strict';
// The prefill's causal attention per form (lib/hlo/attention/causal.ts):
// random inputs for it alone, and the default model's prefill in a given form.
const ref = require('./attention-reference');
const { decoderPrefill } = require('../../dist/hlo');

/**
 * Inputs of a causal attention over one sequence: q [T, Hq, D], k and v [T, Hkv, D] uniform in
 * [-1, 1), and the valid length; rows past it hold large finite garbage, which no real row may see.
 */
function causalInputs(seed, { T, Hq, Hkv, D, validLength }) {
  const next = ref.rng(seed);
  const q = ref.randomF32(next, T * Hq * D);
  const k = ref.randomF32(next, T * Hkv * D);
  const v = ref.randomF32(next, T * Hkv * D);
  for (let i = validLength * Hkv * D; i < T * Hkv * D; i++) {
    k[i] = (next() - 0.5) * 1e4;
    v[i] = (next() - 0.5) * 1e6;
  }
  return [q, k, v, Int32Array.of(validLength)];
}

/**
 * The model's prefill of a `length`-token query in a P bucket with causal attention `form`:
 * its program name, the valid rows of the K/V caches (every layer) and the label logprobs.
 */
async function prefillByForm(client, model, weights, P, length, form) {
  const { numLayers, numKvHeads, headDim } = model.config;
  const rowWidth = numKvHeads * headDim;
  const query = Int32Array.from({ length: P }, (_, i) => (i < length ? 100 + ((i * 7919) % 40000) : 0));
  const up = [
    await client.upload(query, [P]),
    await client.upload(Int32Array.of(length), []),
    await client.upload(Int32Array.of(9454, 2753), [2]),
  ];
  const prog = decoderPrefill(
    model.config,
    { prefix: P, labels: 2 },
    { dotPrecision: 'HIGHEST', causalAttention: form },
  );
  const exe = await client.compile(prog.text);
  const outs = await exe.execute([...up, ...weights.buffers]);
  const [k, v, logprobs] = await Promise.all(outs.map((o) => o.toHost()));
  [...outs, ...up].forEach((b) => b.dispose());
  exe.dispose();
  // The valid rows of each layer's [P, Hkv, D] slice.
  const valid = (x) =>
    Float32Array.from(
      { length: numLayers * length * rowWidth },
      (_, i) => x[Math.floor(i / (length * rowWidth)) * P * rowWidth + (i % (length * rowWidth))],
    );
  return { name: prog.name, k: valid(k), v: valid(v), logprobs };
}

module.exports = { causalInputs, prefillByForm };
