'use strict';
// The pieces of one decoder pass as programs of their own (npm run
// bench:pieces): each is built with the lib/hlo builders from the same ops,
// in the same order and layout, as lib/hlo/decoder/ and
// lib/hlo/attention/ write them, so that timing a piece alone says what
// that step costs inside the whole program (minus what XLA fuses across the
// cut: the whole program is timed beside them to show that difference).
//
// A per-layer piece runs inside a `while` over the layers, as in the real
// program: its per-layer inputs (weights, the K/V cache) are stacked and
// sliced by the layer index, and its outputs are loop-carried, so XLA
// allocates the temporaries once per execution (not once per layer: a fresh
// 94 MB output per run is mostly page faults) and cannot hoist the work out
// of the loop. Inputs that are activations in the real program are
// loop-invariant here; where nothing else depends on the layer index they
// get `+ layer * 1e-7` in an elementwise op that fuses into their consumer.
//
// FLOPs: a dot counts 2 per multiply-add; an elementwise or reduction step 1
// per element it writes or reads (exp counts 1). Dots carry HIGHEST precision
// like the Scorer's default programs.
const { buildProgram, nn, lmHeadLabelLogprobs, MASKED_SCORE, ModuleBuilder, TensorType } = require('../../../dist/hlo');

const OPTIONS = { dotPrecision: 'HIGHEST' };
const f32 = (dims) => TensorType.f32(dims);
const s32 = (dims) => TensorType.s32(dims);

function programName(name) {
  return `piece_${name.replace(/[^A-Za-z0-9]+/g, '_').replace(/_$/, '')}`;
}

/** The result types of `body` on inputs of these types (built once in a scratch function). */
function resultTypes(types, body) {
  const f = new ModuleBuilder('scratch').func('main', OPTIONS);
  const values = types.map((t, k) => f.param(t, `x${k}`));
  const i = f.param(TensorType.s32([]), 'layer');
  return body(f, i, values).map((v) => v.type);
}

/**
 * A per-layer piece: `stacked` inputs get a leading layer dim and are sliced
 * by layer; `invariant` inputs are the same every layer. `body(b, layer,
 * inputs)` returns the piece's outputs (in `inputs`, stacked ones first, as
 * one layer's slice). Runs `layers` times in one execution.
 */
function layerPiece(name, layers, flopsPerLayer, { stacked = {}, invariant = {} }, body) {
  const stackedEntries = Object.entries(stacked);
  const invariantEntries = Object.entries(invariant);
  const sliceTypes = [...stackedEntries, ...invariantEntries].map(([, t]) => t);
  const outTypes = resultTypes(sliceTypes, body);
  const program = buildProgram(
    programName(name),
    (f) => {
      const stackedParams = stackedEntries.map(([n, t]) => f.param(t.withDims([layers, ...t.dims]), n));
      const invariantParams = invariantEntries.map(([n, t]) => f.param(t, n));
      const outs = f.forLoop(
        {
          count: layers,
          carried: outTypes.map((t) => f.full(t, 0)),
          invariants: [...stackedParams, ...invariantParams],
        },
        (b, i, _carried, inv) => {
          const slices = inv.slice(0, stackedEntries.length).map((s) => {
            const rest = s.dims.slice(1);
            return b.reshape(b.dynamicSlice(s, [i, ...rest.map(() => 0)], [1, ...rest]), rest);
          });
          return body(b, i, [...slices, ...inv.slice(stackedEntries.length)]);
        },
      );
      return Object.fromEntries(outs.map((v, k) => [`out${k}`, v]));
    },
    OPTIONS,
  );
  return { name, where: `${layers} layers, one loop`, flops: flopsPerLayer * layers, program };
}

/** A piece that runs once per pass (no loop). */
function passPiece(name, flops, build) {
  return { name, where: 'once', flops, program: buildProgram(programName(name), build, OPTIONS) };
}

/** x + layer * 1e-7: makes a loop-invariant input depend on the layer, in one fusable elementwise op. */
function perturb(b, x, layer) {
  return b.add(x, b.broadcastScalar(b.multiply(b.convert(layer, 'f32'), 1e-7), x.dims));
}

/** Layer pieces every pass has: norms, projections, RoPE, MLP, on T rows. */
function rowPieces(c, T) {
  const { hiddenSize: Dm, intermediateSize: F, numLayers: Ly, numHeads: Hq, numKvHeads: Hkv, headDim: D } = c;
  const qkv = (Hq + 2 * Hkv) * D;
  return [
    layerPiece(
      'attn norm + QKV projection',
      Ly,
      2 * T * Dm * qkv + 4 * T * Dm,
      { stacked: { attn_norm: f32([Dm]), w_qkv: f32([Dm, qkv]) }, invariant: { h: f32([T, Dm]) } },
      (b, _i, [norm, w, h]) => [b.matmul(nn.rmsNorm(b, h, norm, c.rmsEps), w)],
    ),
    layerPiece(
      'RoPE (q and k)',
      Ly,
      3 * T * (Hq + Hkv) * D,
      { invariant: { q: f32([T, Hq, D]), k: f32([T, Hkv, D]), cos: f32([T, D / 2]), sin: f32([T, D / 2]) } },
      (b, i, [q, k, cos, sin]) => [
        nn.applyRotary(b, perturb(b, q, i), cos, sin),
        nn.applyRotary(b, perturb(b, k, i), cos, sin),
      ],
    ),
    layerPiece(
      'output projection + residual',
      Ly,
      2 * T * Hq * D * Dm + T * Dm,
      { stacked: { w_o: f32([Hq * D, Dm]) }, invariant: { attended: f32([T, Hq * D]), h: f32([T, Dm]) } },
      (b, _i, [w, a, h]) => [b.add(h, b.matmul(a, w))],
    ),
    layerPiece(
      'MLP (norm, gate/up, SiLU, down, residual)',
      Ly,
      2 * T * Dm * 2 * F + 2 * T * F * Dm + 4 * T * Dm + 4 * T * F,
      {
        stacked: { ffn_norm: f32([Dm]), w_gate_up: f32([Dm, 2 * F]), w_down: f32([F, Dm]) },
        invariant: { h: f32([T, Dm]) },
      },
      (b, _i, [norm, wGateUp, wDown, h]) => {
        const gateUp = b.matmul(nn.rmsNorm(b, h, norm, c.rmsEps), wGateUp);
        const gate = b.slice(gateUp, [0, 0], [T, F]);
        const up = b.slice(gateUp, [0, F], [T, 2 * F]);
        return [b.add(h, b.matmul(b.multiply(b.multiply(gate, b.logistic(gate)), up), wDown))];
      },
    ),
  ];
}

/** Final norm + LM head at `rows` scored rows of T hidden rows (once per pass). */
function lmHeadPiece(c, T, rows) {
  const { hiddenSize: Dm, vocabSize: V } = c;
  return passPiece('final norm + LM head (scored rows)', 2 * rows * V * Dm + 3 * rows * V, (f) => {
    const hidden = f.param(f32([T, Dm]), 'hidden');
    const index = f.param(s32([rows]), 'rows');
    const norm = f.param(f32([Dm]), 'final_norm');
    const head = f.param(f32([V, Dm]), 'lm_head');
    const labels = f.param(s32([2]), 'labels');
    return {
      logprobs: lmHeadLabelLogprobs(
        f,
        { rows: f.take(hidden, index, 0), finalNormWeight: norm, lmHead: head, labels },
        { eps: c.rmsEps },
      ),
    };
  });
}

/**
 * The extend pass: C items of L tokens against a P-key prefix cache
 * (itemsOverPrefixAttention, cut at its three steps). softmaxForm `ones_own`
 * cuts the rows form of lib/hlo/attention/prefix-rows.ts instead: the softmax shifted
 * by the own keys' max (exp only, no pass over the prefix scores for a max or
 * a sum) and the values with a ones column that gives the denominator, plus
 * the overflow probe (its exact redo, which runs 0 times here, is left out).
 */
function extendPieces(c, { P, C, L }, softmaxForm = 'joint') {
  const { numLayers: Ly, numHeads: Hq, numKvHeads: Hkv, headDim: D } = c;
  const G = Hq / Hkv;
  const T = C * L;
  const scale = 1 / Math.sqrt(D);
  const prefixScores = [Hkv, C, L, G, P];
  const ownScores = [Hkv, C, L, G, L];
  const grouped = (b, q) => b.reshape(b.multiply(q, scale), [C, L, Hkv, G, D]);
  return [
    ...rowPieces(c, T),
    layerPiece(
      'attention scores vs prefix',
      Ly,
      2 * T * Hq * (D + 1) * P,
      { stacked: { prefix_k: f32([P, Hkv, D]) }, invariant: { item_q: f32([C, L, Hq, D]), prefix_length: s32([]) } },
      (b, _i, [k, q, plen]) => {
        const valid = b.lt(b.iota(s32([P]), 0), b.broadcastScalar(plen, [P]));
        const bias = b.select(valid, b.full(f32([P]), 0), b.full(f32([P]), MASKED_SCORE));
        const qWithOne = b.concatenate([grouped(b, q), b.full(f32([C, L, Hkv, G, 1]), 1)], 4);
        const kWithBias = b.concatenate([k, b.broadcastInDim(bias, [P, Hkv, 1], [0])], 2);
        return [
          b.dotGeneral(qWithOne, kWithBias, { lhsBatch: [2], rhsBatch: [1], lhsContract: [4], rhsContract: [2] }),
        ];
      },
    ),
    layerPiece(
      'attention scores, own keys',
      Ly,
      2 * T * Hq * D * L,
      { invariant: { item_q: f32([C, L, Hq, D]), item_k: f32([C, L, Hkv, D]) } },
      (b, i, [q, k]) => [
        b.dotGeneral(grouped(b, perturb(b, q, i)), k, {
          lhsBatch: [2, 0],
          rhsBatch: [2, 0],
          lhsContract: [4],
          rhsContract: [3],
        }),
      ],
    ),
    ...(softmaxForm === 'ones_own'
      ? [
          layerPiece(
            'softmax, own-max shift (own max, exp)',
            Ly,
            2 * T * Hq * (P + L),
            { invariant: { prefix_scores: f32(prefixScores), own_scores: f32(ownScores) } },
            (b, i, [spIn, so]) => {
              const sp = perturb(b, spIn, i);
              const causal = b.le(b.iota(s32([L, L]), 1), b.iota(s32([L, L]), 0));
              const own = b.select(b.broadcastInDim(causal, ownScores, [2, 4]), so, -Infinity);
              const shift = b.reduceMax(own, [4]);
              return [
                b.exponential(b.subtract(sp, b.expandReduced(shift, prefixScores, [4]))),
                b.exponential(b.subtract(own, b.expandReduced(shift, ownScores, [4]))),
              ];
            },
          ),
          layerPiece(
            'weighted values, ones column (+ divide, probe, layout)',
            Ly,
            2 * T * Hq * (D + 1) * (P + L) + 2 * T * Hq * D,
            {
              stacked: { prefix_v: f32([P, Hkv, D]) },
              invariant: {
                prefix_weights: f32(prefixScores),
                own_weights: f32(ownScores),
                item_v: f32([C, L, Hkv, D]),
                item_lengths: s32([C]),
              },
            },
            (b, _i, [v, wp, wo, iv, lens]) => {
              const ones = (x) => b.concatenate([x, b.full(f32([...x.dims.slice(0, -1), 1]), 1)], x.rank - 1);
              const acc = b.add(
                b.dotGeneral(wp, ones(v), { lhsBatch: [0], rhsBatch: [1], lhsContract: [4], rhsContract: [0] }),
                b.dotGeneral(wo, ones(iv), { lhsBatch: [0, 1], rhsBatch: [2, 0], lhsContract: [4], rhsContract: [1] }),
              );
              const rows = [Hkv, C, L, G];
              const num = b.slice(acc, [0, 0, 0, 0, 0], [...rows, D]);
              const den = b.reshape(b.slice(acc, [0, 0, 0, 0, D], [...rows, D + 1]), rows);
              const probe = b.reduceSum(b.multiply(acc, 0), [0, 1, 2, 3, 4]);
              const safe = b.select(b.gt(den, 0), den, 1);
              const out = b.transpose(b.divide(num, b.expandReduced(safe, num.dims, [4])), [1, 2, 0, 3, 4]);
              const real = b.lt(b.iota(s32([C, L]), 1), b.broadcastInDim(lens, [C, L], [0]));
              return [b.reshape(b.select(b.broadcastInDim(real, out.dims, [0, 1]), out, 0), [C, L, Hq, D]), probe];
            },
          ),
        ]
      : [
          layerPiece(
            'softmax (max, exp, sum)',
            Ly,
            4 * T * Hq * (P + L),
            { invariant: { prefix_scores: f32(prefixScores), own_scores: f32(ownScores) } },
            (b, i, [spIn, so]) => {
              const sp = perturb(b, spIn, i);
              const causal = b.le(b.iota(s32([L, L]), 1), b.iota(s32([L, L]), 0));
              const own = b.select(b.broadcastInDim(causal, ownScores, [2, 4]), so, -Infinity);
              const max = b.maximum(b.reduceMax(sp, [4]), b.reduceMax(own, [4]));
              const shift = b.select(b.gt(max, -Infinity), max, 0);
              const wp = b.exponential(b.subtract(sp, b.expandReduced(shift, prefixScores, [4])));
              const wo = b.exponential(b.subtract(own, b.expandReduced(shift, ownScores, [4])));
              return [wp, wo, b.add(b.reduceSum(wp, [4]), b.reduceSum(wo, [4]))];
            },
          ),
          layerPiece(
            'weighted values (+ divide, layout)',
            Ly,
            2 * T * Hq * D * (P + L) + 2 * T * Hq * D,
            {
              stacked: { prefix_v: f32([P, Hkv, D]) },
              invariant: {
                prefix_weights: f32(prefixScores),
                own_weights: f32(ownScores),
                denominator: f32([Hkv, C, L, G]),
                item_v: f32([C, L, Hkv, D]),
                item_lengths: s32([C]),
              },
            },
            (b, _i, [v, wp, wo, den, iv, lens]) => {
              const num = b.add(
                b.dotGeneral(wp, v, { lhsBatch: [0], rhsBatch: [1], lhsContract: [4], rhsContract: [0] }),
                b.dotGeneral(wo, iv, { lhsBatch: [0, 1], rhsBatch: [2, 0], lhsContract: [4], rhsContract: [1] }),
              );
              const safe = b.select(b.gt(den, 0), den, 1);
              const out = b.transpose(b.divide(num, b.expandReduced(safe, num.dims, [4])), [1, 2, 0, 3, 4]);
              const real = b.lt(b.iota(s32([C, L]), 1), b.broadcastInDim(lens, [C, L], [0]));
              return [b.reshape(b.select(b.broadcastInDim(real, out.dims, [0, 1]), out, 0), [C, L, Hq, D])];
            },
          ),
        ]),
    lmHeadPiece(c, T, C),
  ];
}

/** The prefill pass: P query tokens, causal (causalPrefixAttention, cut at its three steps). */
function prefillPieces(c, { P }) {
  const { numLayers: Ly, numHeads: Hq, numKvHeads: Hkv, headDim: D } = c;
  const G = Hq / Hkv;
  const scale = 1 / Math.sqrt(D);
  const scores = [Hkv, P * G, P];
  return [
    ...rowPieces(c, P),
    layerPiece(
      'causal scores (+ bias), all P x P',
      Ly,
      2 * Hq * D * P * P + Hq * P * P,
      { stacked: { k: f32([P, Hkv, D]) }, invariant: { q: f32([P, Hq, D]) } },
      (b, _i, [k, q]) => {
        const qFlat = b.reshape(b.transpose(b.reshape(b.multiply(q, scale), [P, Hkv, G, D]), [1, 0, 2, 3]), [
          Hkv,
          P * G,
          D,
        ]);
        const causal = b.le(b.iota(s32([P, P]), 1), b.iota(s32([P, P]), 0));
        const bias = b.select(causal, b.full(f32([P, P]), 0), b.full(f32([P, P]), MASKED_SCORE));
        const causalBias = b.reshape(b.broadcastInDim(bias, [P, G, P], [0, 2]), [P * G, P]);
        return [
          b.add(
            b.dotGeneral(qFlat, b.transpose(k, [1, 2, 0]), {
              lhsBatch: [0],
              rhsBatch: [0],
              lhsContract: [2],
              rhsContract: [1],
            }),
            b.broadcastInDim(causalBias, scores, [1, 2]),
          ),
        ];
      },
    ),
    layerPiece('softmax (max, exp, sum)', Ly, 4 * Hq * P * P, { invariant: { scores: f32(scores) } }, (b, i, [sIn]) => {
      const s = perturb(b, sIn, i);
      const max = b.reduceMax(s, [2]);
      const w = b.exponential(b.subtract(s, b.expandReduced(max, scores, [2])));
      return [w, b.reduceSum(w, [2])];
    }),
    layerPiece(
      'weighted values (+ divide, layout)',
      Ly,
      2 * Hq * D * P * P + 2 * P * Hq * D,
      {
        stacked: { v: f32([P, Hkv, D]) },
        invariant: { weights: f32(scores), denominator: f32([Hkv, P * G]), prefix_length: s32([]) },
      },
      (b, _i, [v, w, den, plen]) => {
        const num = b.dotGeneral(w, b.transpose(v, [1, 0, 2]), {
          lhsBatch: [0],
          rhsBatch: [0],
          lhsContract: [2],
          rhsContract: [1],
        });
        const out = b.divide(num, b.expandReduced(den, num.dims, [2]));
        const attended = b.reshape(b.transpose(b.reshape(out, [Hkv, P, G, D]), [1, 0, 2, 3]), [P, Hq, D]);
        const real = b.lt(b.iota(s32([P]), 0), b.broadcastScalar(plen, [P]));
        return [b.select(b.broadcastInDim(real, [P, Hq, D], [0]), attended, 0)];
      },
    ),
    lmHeadPiece(c, P, 1),
  ];
}

module.exports = { extendPieces, prefillPieces };
