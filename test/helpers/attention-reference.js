'use strict';
// Naive references for masked attention and the LM-head gather: explicit
// loops, float64 accumulation, written from docs/design.md ("The programs") alone (nothing from lib/).
//
// Layouts (row-major flat arrays):
//   dense:    q [T, Hq, D], k/v [T, Hkv, D], segmentIds [T] (0 query, i item i, -1 padding)
//   factored: queryQ [P, Hq, D], queryK/V [P, Hkv, D], queryLength,
//             itemQ [N, L, Hq, D], itemK/V [N, L, Hkv, D], itemLengths [N]

/** Softmax-weighted sum of values over the visible keys, float64. */
function attendRow(qRow, keys, scale, D) {
  // keys: array of { k: Float32Array-like row of D, v: row of D }
  const out = new Float64Array(D);
  if (keys.length === 0) return out;
  const scores = keys.map(({ k }) => {
    let s = 0;
    for (let d = 0; d < D; d++) s += qRow[d] * k[d];
    return s * scale;
  });
  const max = Math.max(...scores);
  let sum = 0;
  const w = scores.map((s) => {
    const e = Math.exp(s - max);
    sum += e;
    return e;
  });
  keys.forEach(({ v }, i) => {
    for (let d = 0; d < D; d++) out[d] += (w[i] / sum) * v[d];
  });
  return out;
}

function row(arr, offset, D) {
  return arr.subarray(offset, offset + D);
}

/**
 * Dense layout. Key k is visible from query token t iff k <= t, seg[k] != -1,
 * and (seg[k] == 0 or seg[k] == seg[t]). Padding rows (seg[t] == -1) give 0.
 */
function denseAttention({ q, k, v, segmentIds, T, Hq, Hkv, D, scale }) {
  const s = scale ?? 1 / Math.sqrt(D);
  const G = Hq / Hkv;
  const out = new Float64Array(T * Hq * D);
  for (let t = 0; t < T; t++) {
    if (segmentIds[t] === -1) continue;
    for (let h = 0; h < Hq; h++) {
      const kvh = Math.floor(h / G);
      const keys = [];
      for (let j = 0; j <= t; j++) {
        const sk = segmentIds[j];
        if (sk === -1) continue;
        if (sk !== 0 && sk !== segmentIds[t]) continue;
        keys.push({ k: row(k, (j * Hkv + kvh) * D, D), v: row(v, (j * Hkv + kvh) * D, D) });
      }
      out.set(attendRow(row(q, (t * Hq + h) * D, D), keys, s, D), (t * Hq + h) * D);
    }
  }
  return out;
}

/**
 * Factored layout: query token i < queryLength sees query keys j <= i; item
 * token (n, j), j < itemLengths[n], sees query keys < queryLength and its own
 * keys j' <= j. Everything else (padding) gives 0.
 */
function factoredAttention(x) {
  const { queryQ, queryK, queryV, queryLength, itemQ, itemK, itemV, itemLengths, P, N, L, Hq, Hkv, D, scale } = x;
  const s = scale ?? 1 / Math.sqrt(D);
  const G = Hq / Hkv;
  const queryOut = new Float64Array(P * Hq * D);
  const itemOut = new Float64Array(N * L * Hq * D);
  const queryKeys = (kvh, upTo) => {
    const keys = [];
    for (let j = 0; j < upTo; j++)
      keys.push({ k: row(queryK, (j * Hkv + kvh) * D, D), v: row(queryV, (j * Hkv + kvh) * D, D) });
    return keys;
  };
  for (let i = 0; i < queryLength; i++) {
    for (let h = 0; h < Hq; h++) {
      const kvh = Math.floor(h / G);
      queryOut.set(attendRow(row(queryQ, (i * Hq + h) * D, D), queryKeys(kvh, i + 1), s, D), (i * Hq + h) * D);
    }
  }
  for (let n = 0; n < N; n++) {
    for (let j = 0; j < itemLengths[n]; j++) {
      for (let h = 0; h < Hq; h++) {
        const kvh = Math.floor(h / G);
        const keys = queryKeys(kvh, queryLength);
        for (let jj = 0; jj <= j; jj++) {
          const off = ((n * L + jj) * Hkv + kvh) * D;
          keys.push({ k: row(itemK, off, D), v: row(itemV, off, D) });
        }
        const qOff = ((n * L + j) * Hq + h) * D;
        itemOut.set(attendRow(row(itemQ, qOff, D), keys, s, D), qOff);
      }
    }
  }
  return { queryOut, itemOut };
}

/**
 * LM-head gather: for each gathered row r = hidden[clamp(idx)], x =
 * rmsnorm(r) * w, logits = x @ lmHead^T, out[i, j] = logits[labels[j]] -
 * logsumexp(logits). Padded indices (< 0) give rows that are only required to
 * be finite; the reference computes them from the clamped index too.
 */
function lmHeadGather({ hidden, gatherIndices, finalNormWeight, lmHead, labels, T, Dm, V, eps }) {
  const K = gatherIndices.length;
  const Lb = labels.length;
  const out = new Float64Array(K * Lb);
  const all = lmHeadLogits({ hidden, gatherIndices, finalNormWeight, lmHead, T, Dm, V, eps });
  for (let i = 0; i < K; i++) {
    const logits = all.subarray(i * V, (i + 1) * V);
    let max = -Infinity;
    for (const l of logits) max = Math.max(max, l);
    let sum = 0;
    for (const l of logits) sum += Math.exp(l - max);
    const lse = max + Math.log(sum);
    for (let j = 0; j < Lb; j++) out[i * Lb + j] = logits[labels[j]] - lse;
  }
  return out;
}

/** The raw logits [K, V] of the gathered rows: rmsnorm(hidden[clamp(idx)]) * w @ lmHead^T. */
function lmHeadLogits({ hidden, gatherIndices, finalNormWeight, lmHead, T, Dm, V, eps }) {
  const K = gatherIndices.length;
  const out = new Float64Array(K * V);
  for (let i = 0; i < K; i++) {
    const t = Math.min(Math.max(gatherIndices[i], 0), T - 1);
    let ms = 0;
    for (let d = 0; d < Dm; d++) ms += hidden[t * Dm + d] * hidden[t * Dm + d];
    const inv = 1 / Math.sqrt(ms / Dm + eps);
    const x = new Float64Array(Dm);
    for (let d = 0; d < Dm; d++) x[d] = hidden[t * Dm + d] * inv * finalNormWeight[d];
    for (let vv = 0; vv < V; vv++) {
      let s = 0;
      for (let d = 0; d < Dm; d++) s += x[d] * lmHead[vv * Dm + d];
      out[i * V + vv] = s;
    }
  }
  return out;
}

/** Deterministic PRNG (mulberry32) for seeded inputs. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Float32Array of n uniform values in [-scale, scale). */
function randomF32(next, n, scale = 1) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (next() * 2 - 1) * scale;
  return a;
}

/** Largest |a[i] - b[i]| over the listed indices (all if omitted). */
function maxAbsDiff(a, b, indices) {
  let m = 0;
  const n = indices ? indices.length : a.length;
  for (let x = 0; x < n; x++) {
    const i = indices ? indices[x] : x;
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}

/**
 * |a - b| <= 1e-6 + 1e-5 |b| everywhere (two forms of one computation agreeing within f32 rounding);
 * `worst` is the largest |a - b| / (1e-6 + 1e-5 |b|) (<= 1 passes; NaN or a length mismatch is Infinity).
 */
function closeRel(a, b) {
  const [rel, abs] = [1e-5, 1e-6];
  let worst = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < a.length && worst <= 1; i++) {
    const d = Math.abs(a[i] - b[i]) / (abs + rel * Math.abs(b[i]));
    worst = Number.isNaN(d) ? Infinity : Math.max(worst, d);
  }
  return { ok: worst <= 1, worst };
}

/**
 * How far apart two f32 programs that order their sums differently put the
 * default model's label probabilities: the StableHLO path's own prefix and
 * packed plans differ by 1.9e-5 relative, serial and prefix by 1.1e-5
 * (yes/no labels of a 4-item request, 2026-11-23). Forms and plans are
 * compared within this bound; a wrong key or mask moves them by 1e-3 or more.
 */
const PROGRAM_REL = 5e-5;

/**
 * Label probabilities within `rel` relative of each other, with no absolute
 * floor: they are often 1e-4 to 1e-7, where closeRel's 1e-6 floor would
 * accept anything. About |log a - log b| <= rel; zeros must match exactly.
 * worst: the largest |a - b| / (rel max(a, b)).
 */
function closeProbabilities(a, b, rel = PROGRAM_REL) {
  let worst = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < a.length && worst <= 1; i++) {
    const scale = Math.max(Math.abs(a[i]), Math.abs(b[i]));
    const d = scale === 0 ? 0 : Math.abs(a[i] - b[i]) / (rel * scale);
    worst = Number.isNaN(d) ? Infinity : Math.max(worst, d);
  }
  return { ok: worst <= 1, worst };
}

module.exports = {
  denseAttention,
  factoredAttention,
  lmHeadGather,
  lmHeadLogits,
  rng,
  randomF32,
  maxAbsDiff,
  closeRel,
  closeProbabilities,
};
