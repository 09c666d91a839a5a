'use strict';
// A small seeded PRNG (mulberry32) so random tests are reproducible.
function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    uniform: (lo = -1, hi = 1) => lo + (hi - lo) * next(),
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    floats: (n, lo = -1, hi = 1) => Float32Array.from({ length: n }, () => lo + (hi - lo) * next()),
  };
}
module.exports = { prng };
