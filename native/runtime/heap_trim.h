// Gives the allocator's free pages back to the OS after a compile or a load.
// XLA's compiler (and the loader of serialized executables) allocates
// hundreds of MiB of scratch on several threads and frees it at the end;
// glibc keeps those pages in its per-thread arenas, so a long-running
// service that compiles a few new shapes would hold them for good (measured
// on the CPU plugin: about 100 MiB of RSS kept after a handful of compiles,
// given back by malloc_trim). Compiles take seconds; a trim takes
// milliseconds, so it runs after each one. Executions free their
// temporaries the same way: the Scorer trims (the addon's releaseFreeHeap)
// when no call waits for the device.
#pragma once

namespace pjrt_score {

// malloc_trim(0) where the C library has it (glibc); a no-op elsewhere.
// Returns whether any memory was given back.
bool ReleaseFreeHeap();

}  // namespace pjrt_score
