'use strict';
/**
 * A naive float64 forward pass of a Llama-family decoder, in plain loops,
 * written from the model definition and independent of lib/. It is the
 * reference the XLA programs and the loaders are checked against.
 *
 *   referenceLogprobs(weights, config, tokenIds, options?) -> Float64Array[]
 *
 * weights  HF orientation (the shape of lib's HostWeights): { embedding [V, Dm],
 *          layers: [{ attnNorm, wq [Hq*D, Dm], wk, wv [Hkv*D, Dm], wo [Dm, Hq*D],
 *          bq?, bk?, bv?, qNorm? [D], kNorm? [D], ffnNorm, wGate [F, Dm],
 *          wUp [F, Dm], wDown [Dm, F] }], finalNorm [Dm], lmHead [V, Dm] }.
 *          Each entry is a flat row-major array (Float64Array, Float32Array,
 *          number[]) or an object with such a `.data` (a HostTensor).
 * config   { vocabSize, hiddenSize, intermediateSize, numLayers, numHeads,
 *          numKvHeads, headDim, ropeTheta, rmsEps, attentionBias?, qkNorm? }
 *          (a ModelConfig).
 * tokenIds the sequence, number[].
 * options  positions: RoPE position of each token (default 0..T-1);
 *          visible(query, key): may token `query` attend to token `key`
 *            (indices into tokenIds; default causal key <= query; each token
 *            must see at least itself);
 *          outputs: token indices whose log-probabilities to return
 *            (default: every token);
 *          roundProducts(y): applied in place to the q, k, v products (before
 *            their biases) and the gate and up products, e.g. a rounding to
 *            bf16 (default none).
 * returns  one Float64Array(vocabSize) per `outputs` entry: log_softmax of
 *          the logits after that token, over the whole vocabulary.
 *
 * Definition (Hugging Face LlamaForCausalLM / Qwen2 / Qwen3):
 *   x = embedding[token]
 *   per layer: h = rms(x) * attnNorm; q = Wq h + bq; k = Wk h + bk; v = Wv h + bv
 *     Qwen3: q, k = rms(per head) * qNorm / kNorm
 *     RoPE rotate_half: for i < D/2, angle = pos * theta^(-2i/D),
 *       (a, b) = (x[i], x[i + D/2]) -> (a cos - b sin, b cos + a sin)
 *     attention per q head, kv head = floor(h / (Hq / Hkv)), scale 1/sqrt(D)
 *     x += Wo attn;  h = rms(x) * ffnNorm;  x += Wdown (silu(Wgate h) * (Wup h))
 *   logits = lmHead (rms(x) * finalNorm)
 */

function arr(t) {
  if (t == null) return undefined;
  return t.data !== undefined ? t.data : t;
}

/** y = W x (+ b) for W [rows, cols] row-major. */
function matVec(w, x, rows, cols, bias) {
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    const base = r * cols;
    for (let c = 0; c < cols; c++) s += w[base + c] * x[c];
    y[r] = bias ? s + bias[r] : s;
  }
  return y;
}

function rmsNorm(x, weight, eps, offset = 0, length = x.length) {
  let ss = 0;
  for (let i = 0; i < length; i++) ss += x[offset + i] * x[offset + i];
  const scale = 1 / Math.sqrt(ss / length + eps);
  const y = new Float64Array(length);
  for (let i = 0; i < length; i++) y[i] = x[offset + i] * scale * weight[i];
  return y;
}

/** In place on heads x[h*D .. h*D + D). */
function rope(x, heads, headDim, position, theta) {
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    const o = h * headDim;
    for (let i = 0; i < half; i++) {
      const angle = position * Math.pow(theta, (-2 * i) / headDim);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      const a = x[o + i];
      const b = x[o + i + half];
      x[o + i] = a * c - b * s;
      x[o + i + half] = b * c + a * s;
    }
  }
}

function headNorm(x, heads, headDim, weight, eps) {
  for (let h = 0; h < heads; h++) x.set(rmsNorm(x, weight, eps, h * headDim, headDim), h * headDim);
}

function logSoftmax(logits) {
  let max = -Infinity;
  for (const v of logits) if (v > max) max = v;
  let sum = 0;
  for (const v of logits) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(logits.length);
  for (let i = 0; i < logits.length; i++) out[i] = logits[i] - lse;
  return out;
}

function referenceLogprobs(weights, config, tokenIds, options = {}) {
  const { vocabSize: V, hiddenSize: Dm, intermediateSize: F, numHeads: Hq, numKvHeads: Hkv, headDim: D } = config;
  const eps = config.rmsEps;
  const T = tokenIds.length;
  const positions = options.positions || tokenIds.map((_, i) => i);
  const visible = options.visible || ((q, k) => k <= q);
  const outputs = options.outputs || tokenIds.map((_, i) => i);
  const group = Hq / Hkv;
  const product = options.roundProducts ? (y) => (options.roundProducts(y), y) : (y) => y;
  const embedding = arr(weights.embedding);

  let x = tokenIds.map((id) => {
    if (!Number.isInteger(id) || id < 0 || id >= V) throw new RangeError(`token id ${id} outside [0, ${V})`);
    return Float64Array.from(embedding.subarray(id * Dm, (id + 1) * Dm));
  });

  for (let l = 0; l < config.numLayers; l++) {
    const L = weights.layers[l];
    const [wq, wk, wv, wo] = [arr(L.wq), arr(L.wk), arr(L.wv), arr(L.wo)];
    const qs = [];
    const ks = [];
    const vs = [];
    for (let t = 0; t < T; t++) {
      const h = rmsNorm(x[t], arr(L.attnNorm), eps);
      const biased = (y, b) => (b ? y.map((yi, i) => yi + b[i]) : y);
      const q = biased(product(matVec(wq, h, Hq * D, Dm)), arr(L.bq));
      const k = biased(product(matVec(wk, h, Hkv * D, Dm)), arr(L.bk));
      const v = biased(product(matVec(wv, h, Hkv * D, Dm)), arr(L.bv));
      if (config.qkNorm) {
        headNorm(q, Hq, D, arr(L.qNorm), eps);
        headNorm(k, Hkv, D, arr(L.kNorm), eps);
      }
      rope(q, Hq, D, positions[t], config.ropeTheta);
      rope(k, Hkv, D, positions[t], config.ropeTheta);
      qs.push(q);
      ks.push(k);
      vs.push(v);
    }
    const next = [];
    for (let t = 0; t < T; t++) {
      const keys = [];
      for (let s = 0; s < T; s++) if (visible(t, s)) keys.push(s);
      if (!keys.includes(t)) throw new Error(`token ${t} must be visible to itself`);
      const attn = new Float64Array(Hq * D);
      for (let h = 0; h < Hq; h++) {
        const kvh = Math.floor(h / group);
        const scores = keys.map((s) => {
          let dot = 0;
          for (let i = 0; i < D; i++) dot += qs[t][h * D + i] * ks[s][kvh * D + i];
          return dot / Math.sqrt(D);
        });
        const probs = logSoftmax(scores).map(Math.exp);
        keys.forEach((s, j) => {
          for (let i = 0; i < D; i++) attn[h * D + i] += probs[j] * vs[s][kvh * D + i];
        });
      }
      const o = matVec(wo, attn, Dm, Hq * D);
      const y = Float64Array.from(x[t], (xi, i) => xi + o[i]);
      const h2 = rmsNorm(y, arr(L.ffnNorm), eps);
      const g = product(matVec(arr(L.wGate), h2, F, Dm));
      const u = product(matVec(arr(L.wUp), h2, F, Dm));
      const a = g.map((gi, i) => (gi / (1 + Math.exp(-gi))) * u[i]);
      const down = matVec(arr(L.wDown), a, Dm, F);
      next.push(Float64Array.from(y, (yi, i) => yi + down[i]));
    }
    x = next;
  }

  const lmHead = arr(weights.lmHead);
  return outputs.map((t) => logSoftmax(matVec(lmHead, rmsNorm(x[t], arr(weights.finalNorm), eps), V, Dm)));
}

module.exports = { referenceLogprobs, logSoftmax };
