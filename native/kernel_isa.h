// Which instruction set the fused attention kernels run on: what the CPU has
// (CPUID, and the OS saving the registers: XCR0 via XGETBV; AMX also needs
// the kernel's permission for tile state, arch_prctl(ARCH_REQ_XCOMP_PERM)),
// capped by PJRT_SCORE_KERNEL_ISA for tests and comparisons.
#pragma once

#include <cstdint>

namespace pjrt_score {

// In order: each one's CPUs have all the ones before it.
enum class KernelIsa : int { kPortable = 0, kAvx2, kAvx512, kAvx512Bf16, kAmx };

const char* KernelIsaName(KernelIsa isa);

// The best the CPU and OS allow (detected once per process; AMX only once
// the permission for tile state was granted).
KernelIsa CpuKernelIsa();

// The CPU's best, capped by PJRT_SCORE_KERNEL_ISA=portable|avx2|avx512|avx512bf16|amx (or
// PJRT_SCORE_KERNEL_PORTABLE=1, as portable). Read on every call, so tests can run every path in
// one process; a cap above what the CPU has gets the CPU's best.
KernelIsa AllowedKernelIsa();

}  // namespace pjrt_score
