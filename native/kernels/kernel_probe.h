// A trial of the attention kernels at one instruction set, meant to run in a
// child process (lib/runtime/kernel-probe.ts): whatever a path does wrong on
// this CPU (a tile configuration it rejects, an instruction it lacks, a fault
// of ours) kills the child, not the process that scores. docs/design.md,
// 'Kernel paths are tried in a child first'.
#pragma once

#include <string>

#include "kernels/kernel_isa.h"

namespace pjrt_score {

// Runs the kernels `isa` enables (the f32 items-over-prefix and causal kernels; at avx512bf16 and
// amx also the bf16 tiles' self-check and the bf16 kernel) on small fixed inputs, against the
// portable loops, with the tried ceiling at `isa`: true when they agree, what was run and found in
// *detail. Refuses (false, why in *detail) unless PJRT_SCORE_KERNEL_PROBE_CHILD=1 (only the probe
// child sets it) or `isa` is above the CPU's. PJRT_SCORE_KERNEL_PROBE_FAULT=<isa> (a test hook, in
// the child only) makes the trial of that isa fault on purpose (a store to an unmapped address).
bool ProbeKernelIsa(KernelIsa isa, std::string* detail);

}  // namespace pjrt_score
