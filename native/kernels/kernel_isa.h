// Which instruction set the fused attention kernels run on: what the CPU has
// (CPUID, and the OS saving the registers: XCR0 via XGETBV; AMX also needs
// the kernel's permission for tile state, arch_prctl(ARCH_REQ_XCOMP_PERM)),
// capped by what a probe in a child process showed to run on this CPU (the
// tried ceiling: docs/design.md, 'Kernel paths are tried in a child first')
// and by PJRT_SCORE_KERNEL_ISA for tests and comparisons.
#pragma once

#include <cstdint>

namespace pjrt_score {

// In order: each one's CPUs have all the ones before it.
enum class KernelIsa : int { kPortable = 0, kAvx2, kAvx512, kAvx512Bf16, kAmx };

const char* KernelIsaName(KernelIsa isa);

// The best the CPU and OS allow (detected once per process; AMX only once
// the permission for tile state was granted).
KernelIsa CpuKernelIsa();

// The highest instruction set a probe in a child process showed to run here (kernel_probe.h); the
// kernels take nothing above it. Portable until SetTriedKernelIsa: an addon loaded without the
// probe (lib/runtime/kernel-probe.ts runs it at load) runs the portable loops only.
KernelIsa TriedKernelIsa();
void SetTriedKernelIsa(KernelIsa isa);

// The instruction set named `name` ("portable", "avx2", ...); false for an unknown name.
bool KernelIsaFromName(const char* name, KernelIsa* isa);

// The CPU's best, capped by the tried ceiling and by
// PJRT_SCORE_KERNEL_ISA=portable|avx2|avx512|avx512bf16|amx (or PJRT_SCORE_KERNEL_PORTABLE=1, as
// portable). Read on every call, so tests can run every path in one process; a cap above what the
// CPU has gets the CPU's best.
KernelIsa AllowedKernelIsa();

}  // namespace pjrt_score
