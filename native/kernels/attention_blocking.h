// The blocking every path of the fused attention kernels shares
// (prefix_attention.cc; docs/performance.md, 'Items over the prefix').
#pragma once

#include <cstdint>

namespace pjrt_score {
namespace attention {

// Keys per block: K^T and V of one block of one kv head are
// 2 * 256 * D * 4 bytes (128 KB at D = 64), in L2 with the rows' state.
constexpr int64_t kKeyBlock = 256;
// Query rows per register tile of the AVX2 path: 6 rows x 16 keys of scores are 12 AVX2 registers.
constexpr int64_t kRowTile = 6;
// Keys per strip of packed K^T ([D][16] each).
constexpr int64_t kColTile = 16;
// Query rows per step: two AVX2 register tiles read each strip of keys (or of values) in turn, so
// the second reads it from L1 (a strip of K^T is 4 KB, a strip of V 16 KB) instead of L2.
constexpr int64_t kStepRows = 2 * kRowTile;
// Rows of one work unit (items of one chunk x their tokens x the group's heads, or a segment of
// one long item's tokens x the group's heads): their state (D + 2 floats a row) stays in L2
// beside the key block.
constexpr int64_t kRowsPerUnit = 384;
// Items of at most this many tokens do their own keys row by row (unblocked; the prefix keys are
// nearly all of their work); longer items take their own keys in blocks, causally, as the prefix.
constexpr int64_t kRowByRowMaxTokens = 32;

inline int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace attention
}  // namespace pjrt_score
