/**
 * Hugging Face model ids as `--model` takes them (docs/models.md, "Models by
 * hub id"): `org/repo` (a Transformers directory, or a repo holding one GGUF
 * file), `org/repo/path/file.gguf`, node-llama-cpp's `hf:org/repo:QUANT` and
 * `hf:org/repo/file.gguf`, each with an optional `@revision` at the end.
 * An existing local path is never read as an id (the caller checks first).
 */

export interface HubModelId {
  /** `org/repo`. */
  readonly repo: string;
  /** Branch, tag or commit; `main` when none is given. */
  readonly revision: string;
  /** A GGUF file in the repo, when the id names one. */
  readonly file?: string;
  /** A quantization to pick among the repo's GGUF files (`Q4_K_M`), the `hf:` form's `:QUANT`. */
  readonly quant?: string;
  /** The id as given, for messages. */
  readonly text: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const REVISION = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;

/** The id in `text`, or undefined when it is not one (then it is a path that does not exist). */
export function parseHubModelId(text: string): HubModelId | undefined {
  let rest = text;
  const prefixed = rest.startsWith('hf:');
  if (prefixed) rest = rest.slice(3);
  let revision = 'main';
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    revision = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!REVISION.test(revision) || revision.includes('..')) return undefined;
  }
  let quant: string | undefined;
  if (prefixed) {
    const colon = rest.indexOf(':');
    if (colon >= 0) {
      quant = rest.slice(colon + 1);
      rest = rest.slice(0, colon);
      if (!NAME.test(quant)) return undefined;
    }
  }
  const parts = rest.split('/');
  if (parts.length < 2 || !parts.every((p) => NAME.test(p) && p !== '.' && p !== '..')) return undefined;
  const repo = `${parts[0]}/${parts[1]}`;
  if (parts.length === 2) {
    // `models/x.gguf` that is not on disk reads as a missing path, not as a repo named x.gguf.
    if (!prefixed && parts[1].toLowerCase().endsWith('.gguf')) return undefined;
    return { repo, revision, quant, text };
  }
  const file = parts.slice(2).join('/');
  if (!file.toLowerCase().endsWith('.gguf') || quant !== undefined) return undefined;
  return { repo, revision, file, text };
}

/** `org/repo@rev` as messages show it. */
export function describeHubId(id: HubModelId): string {
  const file = id.file ? `/${id.file}` : '';
  const quant = id.quant ? `:${id.quant}` : '';
  const revision = id.revision === 'main' ? '' : `@${id.revision}`;
  return `${id.repo}${file}${quant}${revision}`;
}
