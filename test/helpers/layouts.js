'use strict';
/**
 * Test helper: packs a request into the layouts the named attention programs
 * take (docs/design.md "The programs"), as plain host arrays, so the attention tests can
 * feed `programs.maskedAttention` and its float64 reference the same inputs.
 * The Scorer does not use these: its decoder programs take token rows and
 * lengths and derive segments on the device. Everything here is O(T)
 * per-token metadata: the [T, T] attention mask is derived on the device from
 * `segmentIds`; `denseMask` below is only the host reference for tests.
 *
 * Conventions shared by all layouts:
 * - segment id 0 is the query, i (1-based) is item i, -1 is padding;
 * - item token j has position `queryLength + j` (each item is positioned as
 *   if it followed the query alone, which makes packed == serial exactly);
 * - each item is read at its last token, an empty item at the query's last
 *   token; `readIndices` index the rows of the layout's flattened hidden
 *   states, padded with 0 (a valid row, whose result the caller drops);
 * - padding tokens carry `padTokenId` (default 0) and position 0, so they
 *   never index past a position table.
 */
/** Segment id of padding tokens. */
const PADDING_SEGMENT = -1;
/** Segment id of the query's tokens. */
const QUERY_SEGMENT = 0;
function packDense(queryTokens, itemTokens, options = {}) {
  const queryLength = requireQuery(queryTokens);
  const itemCount = itemTokens.length;
  const itemLengths = lengthsOf(itemTokens);
  const tokenCount = queryLength + sum(itemLengths);
  const tokenBucket = fitBucket(options.tokenBucket, tokenCount, 'tokenBucket', 'packed sequence length');
  const countBucket = fitBucket(options.countBucket, itemCount, 'countBucket', 'item count');
  const tokens = new Int32Array(tokenBucket).fill(options.padTokenId ?? 0);
  const positions = new Int32Array(tokenBucket);
  const segmentIds = new Int32Array(tokenBucket).fill(PADDING_SEGMENT);
  const readIndices = new Int32Array(countBucket);
  for (let t = 0; t < queryLength; t++) {
    tokens[t] = queryTokens[t];
    positions[t] = t;
    segmentIds[t] = QUERY_SEGMENT;
  }
  let start = queryLength;
  for (let i = 0; i < itemCount; i++) {
    const item = itemTokens[i];
    const length = itemLengths[i];
    for (let j = 0; j < length; j++) {
      tokens[start + j] = item[j];
      positions[start + j] = queryLength + j;
      segmentIds[start + j] = i + 1;
    }
    readIndices[i] = length > 0 ? start + length - 1 : queryLength - 1;
    start += length;
  }
  return {
    queryLength,
    itemCount,
    tokenCount,
    tokenBucket,
    countBucket,
    itemLengths: Int32Array.from(itemLengths),
    tokens,
    positions,
    segmentIds,
    readIndices,
  };
}
function packFactored(queryTokens, itemTokens, options = {}) {
  const queryLength = requireQuery(queryTokens);
  const itemCount = itemTokens.length;
  const realLengths = lengthsOf(itemTokens);
  const longest = maxOf(realLengths, 1); // a zero-width grid would be a degenerate program
  const queryBucket = fitBucket(options.queryBucket, queryLength, 'queryBucket', 'query length');
  const itemCountBucket = fitBucket(options.itemCountBucket, itemCount, 'itemCountBucket', 'item count');
  const itemLengthBucket = fitBucket(options.itemLengthBucket, longest, 'itemLengthBucket', 'longest item');
  const pad = options.padTokenId ?? 0;
  const qTokens = new Int32Array(queryBucket).fill(pad);
  const queryPositions = new Int32Array(queryBucket);
  const querySegmentIds = new Int32Array(queryBucket).fill(PADDING_SEGMENT);
  for (let t = 0; t < queryLength; t++) {
    qTokens[t] = queryTokens[t];
    queryPositions[t] = t;
    querySegmentIds[t] = QUERY_SEGMENT;
  }
  const cells = itemCountBucket * itemLengthBucket;
  const gridTokens = new Int32Array(cells).fill(pad);
  const itemPositions = new Int32Array(cells);
  const itemSegmentIds = new Int32Array(cells).fill(PADDING_SEGMENT);
  const itemLengths = new Int32Array(itemCountBucket);
  const readIndices = new Int32Array(itemCountBucket);
  for (let i = 0; i < itemCount; i++) {
    const item = itemTokens[i];
    const length = realLengths[i];
    const row = i * itemLengthBucket;
    for (let j = 0; j < length; j++) {
      gridTokens[row + j] = item[j];
      itemPositions[row + j] = queryLength + j;
      itemSegmentIds[row + j] = i + 1;
    }
    itemLengths[i] = length;
    readIndices[i] = length > 0 ? queryBucket + row + length - 1 : queryLength - 1;
  }
  return {
    queryLength,
    queryBucket,
    itemCount,
    itemCountBucket,
    itemLengthBucket,
    queryTokens: qTokens,
    queryPositions,
    querySegmentIds,
    itemLengths,
    itemTokens: gridTokens,
    itemPositions,
    itemSegmentIds,
    readIndices,
  };
}
function packSerial(queryTokens, itemTokens, options = {}) {
  const itemFirst = options.itemFirst ?? false;
  const batchSize = itemTokens.length;
  const rowLengths = lengthsOf(itemTokens).map((length) => length + queryTokens.length);
  for (let b = 0; b < batchSize; b++) {
    if (rowLengths[b] === 0) throw new RangeError(`serial row ${b} is empty: the query and item ${b} have no tokens`);
  }
  const batchBucket = fitBucket(options.batchBucket, batchSize, 'batchBucket', 'batch size');
  const lengthBucket = fitBucket(options.lengthBucket, maxOf(rowLengths, 1), 'lengthBucket', 'longest row');
  const cells = batchBucket * lengthBucket;
  const tokens = new Int32Array(cells).fill(options.padTokenId ?? 0);
  const positions = new Int32Array(cells);
  const lengths = new Int32Array(batchBucket);
  const readIndices = new Int32Array(batchBucket);
  for (let b = 0; b < batchSize; b++) {
    const first = itemFirst ? itemTokens[b] : queryTokens;
    const second = itemFirst ? queryTokens : itemTokens[b];
    const row = b * lengthBucket;
    let t = 0;
    for (let j = 0; j < first.length; j++, t++) tokens[row + t] = first[j];
    for (let j = 0; j < second.length; j++, t++) tokens[row + t] = second[j];
    for (let p = 0; p < t; p++) positions[row + p] = p;
    lengths[b] = t;
    readIndices[b] = row + t - 1;
  }
  return { batchSize, batchBucket, lengthBucket, lengths, tokens, positions, readIndices };
}
/**
 * Host reference of the attention mask, row-major [q * T + k], 1 = visible:
 * k <= q, k is not padding, and k is in the query or in q's own segment.
 * A padding row therefore sees the query keys before it: its softmax stays
 * finite (an all-hidden row would be 0/0 = NaN on the device), and its
 * output is never read. For tests and debugging only: the device computes
 * the same predicate from the segment ids.
 */
function denseMask(segmentIds) {
  const T = segmentIds.length;
  const mask = new Uint8Array(T * T);
  for (let q = 0; q < T; q++) {
    const sq = segmentIds[q];
    for (let k = 0; k <= q; k++) {
      const sk = segmentIds[k];
      if (sk !== PADDING_SEGMENT && (sk === QUERY_SEGMENT || sk === sq)) mask[q * T + k] = 1;
    }
  }
  return mask;
}
/**
 * ASCII picture of the mask for docs and debugging: one row per query token,
 * one column per key, '#' visible and '.' hidden; the margin and the header
 * label each token's segment ('Q' query, 1-9a-z items (mod 36), '_' padding).
 */
function renderMask(segmentIds) {
  const T = segmentIds.length;
  const mask = denseMask(segmentIds);
  const labels = Array.from({ length: T }, (_, t) => segmentLabel(segmentIds[t]));
  const lines = [`  ${labels.join('')}`];
  for (let q = 0; q < T; q++) {
    let row = `${labels[q]} `;
    for (let k = 0; k < T; k++) row += mask[q * T + k] ? '#' : '.';
    lines.push(row);
  }
  return lines.join('\n');
}
function segmentLabel(segment) {
  if (segment === QUERY_SEGMENT) return 'Q';
  if (segment === PADDING_SEGMENT) return '_';
  return (segment % 36).toString(36);
}
function requireQuery(queryTokens) {
  // An empty item is read at the query's last token, so a packed layout needs one.
  if (queryTokens.length === 0) throw new RangeError('packed layouts need a non-empty query');
  return queryTokens.length;
}
function lengthsOf(itemTokens) {
  return Array.from({ length: itemTokens.length }, (_, i) => itemTokens[i].length);
}
// A loop, not Math.max(...values): spreading a very long list overflows the call stack.
function maxOf(values, floor) {
  let best = floor;
  for (const v of values) if (v > best) best = v;
  return best;
}
function sum(values) {
  let total = 0;
  for (const v of values) total += v;
  return total;
}
/** The bucket to pad to: the given one if it fits, or exactly the real size. */
function fitBucket(bucket, needed, option, what) {
  if (bucket === undefined) return needed;
  if (!Number.isInteger(bucket) || bucket < needed) {
    throw new RangeError(`${option} ${bucket} is smaller than the ${what} ${needed}`);
  }
  return bucket;
}

module.exports = { PADDING_SEGMENT, QUERY_SEGMENT, packDense, packFactored, packSerial, denseMask, renderMask };
