// exp(s - shift) as 2^t in the SIMD paths' ExpSum (attention_ops_avx2.h, attention_ops_avx512.h):
// t = s * log2(e) - shift * log2(e) (one FMA), 2^t = 2^n * 2^f with n = round(t) and
// f = t - n in [-1/2, 1/2], 2^f a degree-5 polynomial fitted for relative error (under 1e-7 in
// exact arithmetic, 3e-7 in f32). Each path writes the Horner steps out in its own registers.
#pragma once

namespace pjrt_score {
namespace attention {

constexpr float kLog2e = 1.44269504088896341f;
// 2^f = ((((kExp2Poly[0] f + kExp2Poly[1]) f + kExp2Poly[2]) f + kExp2Poly[3]) f + kExp2Poly[4]) f
//       + kExp2Poly[5].
constexpr float kExp2Poly[6] = {1.327645150e-03f, 9.675540961e-03f, 5.550713465e-02f,
                                2.402212024e-01f, 6.931469440e-01f, 1.000000119e+00f};

}  // namespace attention
}  // namespace pjrt_score
