/**
 * pjrt-score: score many items against one query with a language model in
 * one forward pass, on XLA through a PJRT plugin.
 *
 * Rooms (each a folder under lib/):
 *   runtime  typed facade over the native addon (Client, Executable, DeviceBuffer)
 *   hlo      StableHLO builder and the programs
 *   scoring  requests, segments, masks, buckets, JIT cache, plans, scores
 *   model    GGUF / safetensors readers, config, tokenizer, weights
 *   server   the HTTP service and the CLI
 */
export * from './runtime';
export * from './hlo';
export * from './scoring';
export * from './model';
export * from './server';
