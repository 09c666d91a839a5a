'use strict';
// Items over a prefix in several forms at once (lib/hlo/attention/prefix.ts):
// one program with the same inputs through every form, random inputs whose
// padding slots hold large finite garbage, and the float64 JS reference.
const { buildProgram, TensorType, itemsOverPrefix, decoderExtend, decoderPrefill } = require('../../dist/hlo');
const ref = require('./attention-reference');

/**
 * The items-over-prefix inputs of shape `c` as the parameters of the function `f` builds, in makeInputs' order;
 * with `groups`, every input gains a leading group axis of that size (a cross-request pass).
 */
function prefixParams(f, { P, N, L, Hq, Hkv, D }, groups = null) {
  const g = groups === null ? [] : [groups];
  return {
    itemQ: f.param(TensorType.f32([...g, N, L, Hq, D]), 'itemQ'),
    itemK: f.param(TensorType.f32([...g, N, L, Hkv, D]), 'itemK'),
    itemV: f.param(TensorType.f32([...g, N, L, Hkv, D]), 'itemV'),
    itemLengths: f.param(TensorType.s32([...g, N]), 'itemLengths'),
    prefixK: f.param(TensorType.f32([...g, P, Hkv, D]), 'prefixK'),
    prefixV: f.param(TensorType.f32([...g, P, Hkv, D]), 'prefixV'),
    prefixLength: f.param(TensorType.s32(g), 'prefixLength'),
  };
}

/** One program: the same inputs through every form, one output per form. */
function program(c, forms) {
  return buildProgram('items_over_prefix_forms', (f) => {
    const x = prefixParams(f, c);
    return Object.fromEntries(forms.map((form, i) => [`out${i}`, itemsOverPrefix(f, x, form)]));
  });
}

/** Random inputs; padding slots (keys past prefixLength, tokens past an item's length) hold large finite garbage. */
function makeInputs(seed, c) {
  const next = ref.rng(seed);
  const { P, N, L, Hq, Hkv, D, prefixLength, itemLengths } = c;
  const itemQ = ref.randomF32(next, N * L * Hq * D);
  const itemK = ref.randomF32(next, N * L * Hkv * D);
  const itemV = ref.randomF32(next, N * L * Hkv * D);
  const prefixK = ref.randomF32(next, P * Hkv * D);
  const prefixV = ref.randomF32(next, P * Hkv * D);
  for (let p = prefixLength; p < P; p++) {
    for (let j = 0; j < Hkv * D; j++) {
      prefixK[p * Hkv * D + j] = (next() - 0.5) * 1e4;
      prefixV[p * Hkv * D + j] = (next() - 0.5) * 1e6;
    }
  }
  return [itemQ, itemK, itemV, Int32Array.from(itemLengths), prefixK, prefixV, Int32Array.of(prefixLength)];
}

function reference(c, inputs) {
  const [itemQ, itemK, itemV, itemLengths, prefixK, prefixV] = inputs;
  const { P, N, L, Hq, Hkv, D, prefixLength } = c;
  return ref.factoredAttention({
    queryQ: new Float32Array(P * Hq * D),
    queryK: prefixK,
    queryV: prefixV,
    queryLength: prefixLength,
    itemQ,
    itemK,
    itemV,
    itemLengths,
    P,
    N,
    L,
    Hq,
    Hkv,
    D,
  }).itemOut;
}

/**
 * The default model's extend program, once per prefix-attention form, on the
 * same prefill (a 37-token query in a 40 bucket) and the same items
 * (`lengths`, 5 tokens each at most, 2 labels), in true f32:
 * [{ name, logprobs }] in the order of `forms`.
 */
async function extendByForm(client, model, weights, forms, lengths) {
  const P = 40;
  const queryLength = 37;
  const [C, L, B] = [lengths.length, 5, 2];
  const query = Int32Array.from({ length: P }, (_, i) => (i < queryLength ? 100 + ((i * 7919) % 40000) : 0));
  const items = Int32Array.from({ length: C * L }, (_, i) => 200 + ((i * 104729) % 40000));
  const labels = Int32Array.of(9454, 2753);
  const opts = { dotPrecision: 'HIGHEST' };
  const prefill = await client.compile(decoderPrefill(model.config, { prefix: P, labels: B }, opts).text);
  const up = (data, dims) => client.upload(data, dims);
  const inputs = [
    await up(query, [P]),
    await up(Int32Array.of(queryLength), []),
    await up(labels, [B]),
    await up(items, [C, L]),
    await up(Int32Array.from(lengths), [C]),
  ];
  const [qBuf, qLen, lbBuf, itBuf, lenBuf] = inputs;
  const prefilled = await prefill.execute([qBuf, qLen, lbBuf, ...weights.buffers]);
  const [kCache, vCache] = prefilled;
  try {
    const results = [];
    for (const form of forms) {
      const prog = decoderExtend(
        model.config,
        { prefix: P, items: C, itemLength: L, labels: B },
        { ...opts, prefixAttention: form },
      );
      const exe = await client.compile(prog.text);
      const [out] = await exe.execute([itBuf, lenBuf, qLen, kCache, vCache, lbBuf, ...weights.buffers]);
      results.push({ name: prog.name, logprobs: await out.toHost() });
      out.dispose();
      exe.dispose();
    }
    return results;
  } finally {
    for (const b of [...inputs, ...prefilled]) b.dispose();
    prefill.dispose();
  }
}

/**
 * Asserts that the default model's extend program with each of `forms` gives
 * the joint form's label probabilities within 5e-5 relative (closeProbabilities), on
 * items of `lengths`; each form must compile to a program of its own.
 */
async function assertExtendMatchesJoint(t, client, forms, lengths) {
  const { loadModel } = require('../../dist/model');
  const { uploadWeights } = require('../../dist/device-weights');
  const model = loadModel();
  const weights = await uploadWeights(client, model.config, model.weights);
  try {
    const [joint, ...others] = await extendByForm(client, model, weights, [{ kind: 'joint' }, ...forms], lengths);
    const probs = (x) => Float64Array.from(x, Math.exp);
    t.ok(joint.logprobs.every(Number.isFinite), `${joint.name}: finite`);
    for (const r of others) {
      t.notEqual(r.name, joint.name, `its own program name: ${r.name}`);
      const { ok, worst } = ref.closeProbabilities(probs(r.logprobs), probs(joint.logprobs));
      t.ok(
        ok,
        `${r.name}: label probabilities within 5e-5 relative of the joint form (worst ${worst.toFixed(3)} of the bound)`,
      );
    }
  } finally {
    weights.dispose();
  }
}

/** Input `k` of every group's inputs, concatenated into one array of the same kind (a grouped program's input). */
function joinInputs(inputs, k) {
  const parts = inputs.map((x) => x[k]);
  const out = new parts[0].constructor(parts.reduce((a, x) => a + x.length, 0));
  parts.reduce((at, x) => (out.set(x, at), at + x.length), 0);
  return out;
}

module.exports = { prefixParams, program, makeInputs, reference, extendByForm, assertExtendMatchesJoint, joinInputs };
