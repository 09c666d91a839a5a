/**
 * pjrt-score: score many items against one query with a language model in
 * one forward pass, on XLA through a PJRT plugin.
 *
 * Rooms (each a folder under lib/):
 *   runtime         typed facade over the native addon (Client, Executable, DeviceBuffer)
 *   hlo             StableHLO builder, the programs, the decoder weight layout
 *   scoring         requests, buckets, plans, JIT cache, the Scorer, scores
 *   model           GGUF / safetensors readers, config, tokenizer, host weights
 *   device-weights  host weights -> the decoder's device arrays, uploaded
 *   server          the HTTP service
 *   cli             the `pjrt-score` command line
 *   util            cache dir, element-type table, shape helpers
 */
export * from './runtime';
export * from './hlo';
export * from './scoring';
export * from './model';
export * from './device-weights';
export * from './server';
