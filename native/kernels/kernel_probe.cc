#include "kernels/kernel_probe.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "kernels/matmul_bf16.h"
#include "kernels/matmul_f32.h"
#include "kernels/prefix_attention.h"

namespace pjrt_score {
namespace {

// The trial's shapes: a prefix of 37 keys, 3 items of up to 5 tokens, 4 query heads over 2 key
// heads of 64: every path's blocking runs (a partial key block, grouped heads, short items).
constexpr int64_t kN = 3, kL = 5, kHq = 4, kHkv = 2, kD = 64, kP = 37, kT = 19;

std::vector<float> Fill(int64_t count, uint32_t seed) {
  std::vector<float> v(count);
  uint32_t s = seed;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;  // LCG: the same inputs on every machine
    x = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.f;
  }
  return v;
}

struct Trial {
  std::vector<float> q = Fill(kN * kL * kHq * kD, 1), k = Fill(kN * kL * kHkv * kD, 2),
                     v = Fill(kN * kL * kHkv * kD, 3), pk = Fill(kP * kHkv * kD, 4),
                     pv = Fill(kP * kHkv * kD, 5), cq = Fill(kT * kHq * kD, 6),
                     ck = Fill(kT * kHkv * kD, 7), cv = Fill(kT * kHkv * kD, 8);
  std::vector<int32_t> lengths{5, 2, 4};

  // The prefix kernel's and the causal kernel's outputs, one after the other.
  bool Run(bool bf16, std::vector<float>* out, std::string* error) {
    out->assign(kN * kL * kHq * kD + kT * kHq * kD, 0.f);
    PrefixAttentionArgs a;
    a.n = kN, a.l = kL, a.hq = kHq, a.hkv = kHkv, a.d = kD, a.p = kP;
    a.item_q = q.data(), a.item_k = k.data(), a.item_v = v.data();
    a.item_lengths = lengths.data();
    a.prefix_k = pk.data(), a.prefix_v = pv.data(), a.prefix_length = kP - 3;
    a.out = out->data();
    CausalAttentionArgs c;
    c.t = kT, c.hq = kHq, c.hkv = kHkv, c.d = kD;
    c.q = cq.data(), c.k = ck.data(), c.v = cv.data(), c.valid_length = kT - 2;
    c.out = out->data() + kN * kL * kHq * kD;
    return bf16 ? RunPrefixAttentionBf16(a, error) && RunCausalAttentionBf16(c, error)
                : RunPrefixAttention(a, error) && RunCausalAttention(c, error);
  }
};

// The deliberate fault of the test hook, the way a faulting path ends (a rejected tile
// configuration is #GP, which Linux delivers as SIGSEGV too): a store to an unmapped address. Not a
// bad ldtilecfg: test/amx-disassembly.test.js holds every ldtilecfg in the binary to the good one.
[[noreturn]] void Fault() {
  static volatile uintptr_t unmapped = 8;  // volatile: the compiler cannot see the address
  *reinterpret_cast<volatile int*>(unmapped) = 1;
  std::abort();  // not reached where address 8 is unmapped
}

float MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0.f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// One precision's trial at `isa` against the portable loops; appends what it found to *detail.
bool Compare(Trial& trial, KernelIsa isa, bool bf16, float limit, std::string* detail) {
  std::vector<float> got, want;
  std::string error;
  SetTriedKernelIsa(KernelIsa::kPortable);
  const bool ref_ok = trial.Run(bf16, &want, &error);
  SetTriedKernelIsa(isa);
  const char* path = bf16 ? PrefixAttentionBf16Path(kD) : PrefixAttentionPath(kD);
  if (!ref_ok || !trial.Run(bf16, &got, &error)) {
    *detail += std::string(bf16 ? "bf16 " : "f32 ") + path + ": " + error;
    return false;
  }
  const float diff = MaxDiff(got, want);
  const bool ok = diff <= limit;
  char line[160];
  std::snprintf(line, sizeof(line), "%s%s %s: max |diff| %.3g against portable (limit %.3g)",
                detail->empty() ? "" : "; ", bf16 ? "bf16" : "f32", path, diff, limit);
  *detail += line;
  return ok;
}

// The matmul kernel at `isa` against its portable loop: 19 rows (a partial row tile), K 70, N 50 (a
// partial panel), weights f32 and as bf16 bits, and each prologue; appends what it found to
// *detail.
bool CompareMatmul(KernelIsa isa, std::string* detail) {
  constexpr int64_t kRowsT = 19, kDepth = 70, kWidth = 50;
  const std::vector<float> x = Fill(kRowsT * 2 * kDepth, 9), w = Fill(kDepth * kWidth, 10),
                           norm = Fill(kDepth, 11);
  std::vector<uint16_t> bits(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    uint32_t b;
    std::memcpy(&b, &w[i], sizeof(b));
    bits[i] = static_cast<uint16_t>(b >> 16);
  }
  using Prologue = MatmulArgs::Prologue;
  using Weights = MatmulArgs::Weights;
  // The weights packed once, as the load packs a model's (matmul_bf16.h).
  std::vector<uint16_t> packed(((kWidth + kMatmulPanelColumns - 1) / kMatmulPanelColumns) *
                               ((kDepth + 1) / 2) * kMatmulPanelColumns * 2);
  MatmulArgs source;
  source.k = kDepth, source.n = kWidth, source.w = w.data();
  PackMatmulWeights(source, packed.data());
  const struct {
    Weights weights;
    Prologue prologue;
  } kForms[] = {
      {Weights::kF32, Prologue::kNone},    {Weights::kBf16Bits, Prologue::kNone},
      {Weights::kF32, Prologue::kRmsNorm}, {Weights::kF32, Prologue::kSwiGlu},
      {Weights::kF32, Prologue::kGeGlu},   {Weights::kPacked, Prologue::kRmsNorm},
  };
  float worst = 0.f;
  for (const auto& form : kForms) {
    std::vector<float> got(kRowsT * kWidth), want(kRowsT * kWidth);
    MatmulArgs a;
    a.t = kRowsT, a.k = kDepth, a.n = kWidth, a.x = x.data();
    a.prologue = form.prologue, a.norm = norm.data(), a.eps = 1e-5f;
    a.w = form.weights == Weights::kF32        ? static_cast<const void*>(w.data())
          : form.weights == Weights::kBf16Bits ? static_cast<const void*>(bits.data())
                                               : static_cast<const void*>(packed.data());
    a.w_type = form.weights;
    std::string error;
    SetTriedKernelIsa(KernelIsa::kPortable);
    a.out = want.data();
    const bool ref_ok = RunMatmulBf16(a, &error);
    SetTriedKernelIsa(isa);
    a.out = got.data();
    if (!ref_ok || !RunMatmulBf16(a, &error)) {
      *detail += std::string("; matmul ") + MatmulBf16Path() + ": " + error;
      return false;
    }
    worst = std::max(worst, MaxDiff(got, want));
  }
  // The same bf16 products summed in the same order; the rounding inside a pair's sum and, after a
  // prologue, an operand rounded to the other neighbouring bf16 may differ.
  constexpr float kLimit = 5e-2f;
  char line[120];
  std::snprintf(line, sizeof(line), "; matmul %s: max |diff| %.3g against portable (limit %.3g)",
                MatmulBf16Path(), worst, kLimit);
  *detail += line;
  return worst <= kLimit;
}

// The f32 matmul kernel (matmul_f32.h) on this path against its portable loop: the same FMA chains
// over k; the prologues' logistic differs (the attention kernels' 2^t against std::exp).
bool CompareMatmulF32(KernelIsa isa, std::string* detail) {
  constexpr int64_t kRowsT = 19, kDepth = 70, kWidth = 50;
  const std::vector<float> x = Fill(kRowsT * 2 * kDepth, 12), w = Fill(kDepth * kWidth, 13),
                           norm = Fill(kDepth, 14);
  using Prologue = MatmulArgs::Prologue;
  float worst = 0.f;
  for (const Prologue prologue :
       {Prologue::kNone, Prologue::kRmsNorm, Prologue::kSwiGlu, Prologue::kGeGlu}) {
    std::vector<float> got(kRowsT * kWidth), want(kRowsT * kWidth);
    MatmulArgs a;
    a.t = kRowsT, a.k = kDepth, a.n = kWidth, a.x = x.data(), a.w = w.data();
    a.prologue = prologue, a.norm = norm.data(), a.eps = 1e-5f;
    std::string error;
    SetTriedKernelIsa(KernelIsa::kPortable);
    a.out = want.data();
    const bool ref_ok = RunMatmulF32(a, &error);
    SetTriedKernelIsa(isa);
    a.out = got.data();
    if (!ref_ok || !RunMatmulF32(a, &error)) {
      *detail += std::string("; matmul f32 ") + MatmulF32Path() + ": " + error;
      return false;
    }
    worst = std::max(worst, MaxDiff(got, want));
  }
  constexpr float kLimit = 1e-3f;
  char line[120];
  std::snprintf(line, sizeof(line),
                "; matmul f32 %s: max |diff| %.3g against portable (limit %.3g)", MatmulF32Path(),
                worst, kLimit);
  *detail += line;
  return worst <= kLimit;
}

}  // namespace

bool ProbeKernelIsa(KernelIsa isa, std::string* detail) {
  detail->clear();
  const char* child = std::getenv("PJRT_SCORE_KERNEL_PROBE_CHILD");
  if (child == nullptr || std::strcmp(child, "1") != 0) {
    *detail = "runs only in the probe's child process (PJRT_SCORE_KERNEL_PROBE_CHILD=1)";
    return false;
  }
  if (isa > CpuKernelIsa()) {
    *detail = std::string("this CPU has no ") + KernelIsaName(isa);
    return false;
  }
  const char* fault = std::getenv("PJRT_SCORE_KERNEL_PROBE_FAULT");
  if (fault != nullptr && std::strcmp(fault, KernelIsaName(isa)) == 0) Fault();
  try {
    Trial trial;
    // f32: the same sums in another order (1e-4 of outputs of magnitude <= 1); bf16: the paths
    // round the same operands to bf16, only their f32 sums' order differs.
    bool ok = Compare(trial, isa, false, 1e-4f, detail);
    if (isa >= KernelIsa::kAvx512) ok = CompareMatmulF32(isa, detail) && ok;
    if (isa >= KernelIsa::kAvx512Bf16) {
      std::string why;
      const std::string tiles = isa == KernelIsa::kAmx ? "amx" : "avx512bf16";
      const bool checked = CheckBf16TilePath(tiles, &why);
      *detail += "; " + tiles + " tiles self-check: " + why;
      ok = checked && Compare(trial, isa, true, 1e-3f, detail) && ok;
      ok = CompareMatmul(isa, detail) && ok;
    }
    SetTriedKernelIsa(isa);
    return ok;
  } catch (const std::bad_alloc&) {
    *detail = "could not allocate its inputs";
    return false;
  }
}

}  // namespace pjrt_score
