/**
 * lib/scoring/execution: runs plans on the device. The admission queue
 * (admission.ts) hands the device one turn at a time to the turn executor
 * (turns.ts), which runs a turn's shared passes (run-batch.ts) and each
 * other request's own plan (run-plan.ts) through the decoder runner
 * (decoder-runner.ts): programs compiled once through the JIT cache
 * (jit-cache.ts, compiler.ts, disk-cache.ts, warmup.ts, progress.ts), the
 * query's K/V kept in the prefix cache (prefix-cache.ts). The load's own
 * programs: load-programs.ts.
 * May import: requests, planning, platform.
 */
export { AdmissionQueue } from './admission';
export { JitCache } from './jit-cache';
export { loadProgramCache } from './load-programs';
