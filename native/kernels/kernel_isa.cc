#include "kernels/kernel_isa.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace pjrt_score {
namespace {

#if defined(__x86_64__)
// arch_prctl's request for permission to use an extended state component,
// and AMX's tile data component (Linux 5.16+; older kernels refuse it and
// the CPU then counts as having no AMX).
#if defined(__linux__)
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;
#endif

// Not __builtin_cpu_supports: it reads the runtime library's __cpu_model,
// which the prebuild's toolchain (zig c++, compiler-rt) cannot link into a
// shared object.
KernelIsa Detect() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return KernelIsa::kPortable;
  const bool fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
  if (!(fma && osxsave && avx)) return KernelIsa::kPortable;
  unsigned xcr0 = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0 & 0x6u) != 0x6u) return KernelIsa::kPortable;  // XMM and YMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return KernelIsa::kPortable;
  const unsigned ebx7 = b, edx7 = d;
  if (!((ebx7 >> 5) & 1)) return KernelIsa::kPortable;  // AVX2
  const bool avx512 = ((ebx7 >> 16) & 1) && ((ebx7 >> 30) & 1) && ((ebx7 >> 31) & 1) &&
                      (xcr0 & 0xE0u) == 0xE0u;  // F, BW, VL; opmask, ZMM_Hi256, Hi16_ZMM state
  if (!avx512) return KernelIsa::kAvx2;
  unsigned eax71 = 0;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) eax71 = a;
  if (!((eax71 >> 5) & 1)) return KernelIsa::kAvx512;           // AVX512_BF16
  const bool amx = ((edx7 >> 22) & 1) && ((edx7 >> 24) & 1) &&  // AMX-BF16, AMX-TILE
                   (xcr0 & 0x60000u) == 0x60000u;               // XTILECFG, XTILEDATA state
  if (!amx) return KernelIsa::kAvx512Bf16;
#if defined(__linux__)
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return KernelIsa::kAvx512Bf16;
  return KernelIsa::kAmx;
#else
  return KernelIsa::kAvx512Bf16;  // no way asked here for tile state: no AMX
#endif
}
#else
KernelIsa Detect() { return KernelIsa::kPortable; }
#endif

std::atomic<int> tried{static_cast<int>(KernelIsa::kPortable)};

constexpr KernelIsa kAll[] = {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512,
                              KernelIsa::kAvx512Bf16, KernelIsa::kAmx};

}  // namespace

const char* KernelIsaName(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx2:
      return "avx2";
    case KernelIsa::kAvx512:
      return "avx512";
    case KernelIsa::kAvx512Bf16:
      return "avx512bf16";
    case KernelIsa::kAmx:
      return "amx";
    default:
      return "portable";
  }
}

KernelIsa CpuKernelIsa() {
  static const KernelIsa isa = Detect();
  return isa;
}

KernelIsa TriedKernelIsa() { return static_cast<KernelIsa>(tried.load()); }

void SetTriedKernelIsa(KernelIsa isa) { tried.store(static_cast<int>(isa)); }

bool KernelIsaFromName(const char* name, KernelIsa* isa) {
  for (KernelIsa candidate : kAll) {
    if (std::strcmp(name, KernelIsaName(candidate)) == 0) {
      *isa = candidate;
      return true;
    }
  }
  return false;
}

KernelIsa AllowedKernelIsa() {
  const KernelIsa ceiling = std::min(CpuKernelIsa(), TriedKernelIsa());
  const char* portable = std::getenv("PJRT_SCORE_KERNEL_PORTABLE");
  if (portable != nullptr && std::strcmp(portable, "1") == 0) return KernelIsa::kPortable;
  const char* cap = std::getenv("PJRT_SCORE_KERNEL_ISA");
  if (cap == nullptr || *cap == '\0') return ceiling;
  KernelIsa isa;
  if (KernelIsaFromName(cap, &isa)) return std::min(isa, ceiling);
  return ceiling;  // an unknown name caps nothing
}

}  // namespace pjrt_score
