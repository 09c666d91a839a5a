'use strict';
// The two medians the benchmarks report, each written once:
//   median(xs)       the middle value, or the mean of the two middle values
//                    (the textbook median: a summary of the rounds);
//   upperMedian(xs)  the middle value, or the upper of the two middle values
//                    (always one round that really ran: what the timing loops
//                    that divide one figure by another report, so a ratio is
//                    of two measured rounds).
// Both are the same on an odd count; both are NaN for no values.

function sorted(xs) {
  return [...xs].sort((a, b) => a - b);
}

/** The middle value, or the mean of the two middle values. */
function median(xs) {
  const s = sorted(xs);
  const m = s.length >> 1;
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The middle value, or the upper of the two middle values: always one of `xs`. */
function upperMedian(xs) {
  return xs.length === 0 ? NaN : sorted(xs)[xs.length >> 1];
}

module.exports = { median, upperMedian };
