'use strict';
// Bounds the docs state once and several tests hold.

/**
 * Two compiled programs that order their f32 sums differently (a grouped
 * cross-request pass against the same request alone, another bucket or
 * layout) agree within f32 rounding, not bit for bit: label probabilities
 * within this much of each other, absolute (docs/design.md, "Batch
 * invariance", states it; the measured distance is a few 1e-6).
 */
const CROSS_PROGRAM_BOUND = 1e-5;

module.exports = { CROSS_PROGRAM_BOUND };
