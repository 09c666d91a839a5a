// The self-check of a bf16 tile implementation (the interface of
// bf16_tiles_portable.h) against a reference one, on a fixed pseudo-random
// problem that runs the real Dot and Round: depths 32, 96 and 256 (a head's
// padded D, the PV product's key block), accumulating and not, a's rows
// `lda` bf16 apart both tight and not a multiple of 32, c's tile inside wider
// rows (ldc 40, at column 8) whose other floats must stay untouched, and
// Round on 37 floats (vector body and tail) with ties. bf16_tiles_gate.h runs
// it once per process before a matrix-unit path's first use; it costs six
// 16 x 16 tile products of each implementation (about 0.2 MFLOP).
//
// The tolerance: a product of two bf16 (8-bit significands) is exact in f32,
// so two correct implementations differ only in the order and grouping of
// their f32 additions (and in flushing denormals, which these inputs do not
// have). A sum of k terms is off by at most k u sum|term| (u = 2^-24), so at
// depth 256 each result (257 terms with c's) is within 1.6e-5 of the
// magnitude M = |c| + sum |a b| and two results within 3.1e-5 M: the limit is
// 1e-4 M. A layout slip (a pair, a row or a stride misread) moves a result by
// whole terms, about M / depth = 4e-3 M at depth 256: 40 times the limit.
// Round is nearest-even in both: equal bits (no denormal inputs).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/bf16_tiles_portable.h"

namespace pjrt_score {
namespace attention {

// Writes what it found to *detail ("agrees with portable: ..." or "failed its self-check against
// portable: ..."); true when Candidate agrees with Reference. Candidate's Begin and End bracket its
// products (AMX's tile configuration is per thread: the calling thread's).
template <class Candidate, class Reference>
bool CheckBf16Tiles(std::string* detail) {
  constexpr int64_t kMaxDepth = 256, kWideLda = kMaxDepth + 48, kLdc = 40, kCol = 8, kRound = 37;
  constexpr double kLimit = 1e-4;
  struct Case {
    int64_t depth, lda;
    bool add;
  };
  constexpr Case kCases[] = {{32, 32, false}, {32, kWideLda, true},   {96, kWideLda, false},
                             {96, 96, true},  {256, kWideLda, false}, {256, kWideLda, true}};
  uint32_t state = 0x2545f491u;  // xorshift32, fixed seed: the same problem in every process
  auto next = [&state]() {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
  };
  // Uniform in [-scale, scale), never 0 or denormal (bf16 of it is exact in f32).
  auto uniform = [&next](float scale) {
    return scale * (static_cast<float>(next() >> 8) / 8388608.f - 1.f + 1.f / 16777216.f);
  };

  std::vector<uint16_t> a(16 * kWideLda), b(kMaxDepth * 16);
  for (uint16_t& x : a) x = F32ToBf16(uniform(1.f));
  for (uint16_t& x : b) x = F32ToBf16(uniform(1.f));
  std::vector<float> init(16 * kLdc), got(init.size()), want(init.size());
  for (float& x : init) x = uniform(4.f);

  char text[200];
  double worst = 0;  // the largest |diff| / limit over all results
  Candidate::Begin();
  for (const Case& c : kCases) {
    got = init;
    want = init;
    Candidate::Dot(a.data(), c.lda, b.data(), c.depth, got.data() + kCol, kLdc, c.add);
    Reference::Dot(a.data(), c.lda, b.data(), c.depth, want.data() + kCol, kLdc, c.add);
    for (int64_t m = 0; m < 16; ++m) {
      for (int64_t x = 0; x < kLdc; ++x) {
        const int64_t at = m * kLdc + x, n = x - kCol;
        const double diff = std::fabs(static_cast<double>(got[at]) - want[at]);
        double limit = 0;  // outside the tile: untouched
        if (n >= 0 && n < 16) {
          double magnitude = c.add ? std::fabs(init[at]) : 0.0;
          for (int64_t k = 0; k < c.depth; ++k)
            magnitude +=
                std::fabs(Bf16ToF32(a[m * c.lda + k]) * Bf16ToF32(b[(k / 2) * 32 + n * 2 + k % 2]));
          limit = kLimit * magnitude;
        }
        if (!(diff <= limit)) {  // also a NaN
          Candidate::End();
          std::snprintf(
              text, sizeof(text),
              "failed its self-check against %s: Dot depth %lld lda %lld%s: c[%lld][%lld] "
              "is %.6g, %s %.6g (limit %.2g)",
              Reference::kName, static_cast<long long>(c.depth), static_cast<long long>(c.lda),
              c.add ? " accumulating" : "", static_cast<long long>(m), static_cast<long long>(n),
              static_cast<double>(got[at]), Reference::kName, static_cast<double>(want[at]), limit);
          *detail = text;
          return false;
        }
        if (limit > 0) worst = std::max(worst, diff / limit);
      }
    }
  }
  Candidate::End();

  float s[kRound];
  for (int64_t i = 0; i < kRound; ++i) {
    uint32_t bits;
    const float f = uniform(1000.f);
    std::memcpy(&bits, &f, sizeof(bits));
    if (i % 3 == 0) bits = (bits & 0xffff0000u) | 0x8000u;  // a tie: to even
    std::memcpy(&s[i], &bits, sizeof(bits));
  }
  uint16_t p_got[kRound], p_want[kRound];
  Candidate::Round(s, kRound, p_got);
  Reference::Round(s, kRound, p_want);
  for (int64_t i = 0; i < kRound; ++i) {
    if (p_got[i] != p_want[i]) {
      std::snprintf(
          text, sizeof(text), "failed its self-check against %s: Round(%.9g) is 0x%04x, %s 0x%04x",
          Reference::kName, static_cast<double>(s[i]), p_got[i], Reference::kName, p_want[i]);
      *detail = text;
      return false;
    }
  }
  std::snprintf(text, sizeof(text),
                "agrees with %s: 6 tile products (depths 32-256), worst |diff| %.2g of the limit; "
                "Round exact",
                Reference::kName, worst);
  *detail = text;
  return true;
}

}  // namespace attention
}  // namespace pjrt_score
