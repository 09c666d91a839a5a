/**
 * The Scorer behind an adapter (docs/design.md "Integrations"): the app's
 * own (shared: the adapter never disposes it) or one loaded for the adapter
 * (owned: disposed with it). Every adapter reranks through `scorer.rerank()`,
 * so requests wait in the Scorer's one admission queue and are built by its
 * one template.
 */
import { Scorer, type RerankRequest, type RerankResponse, type ScorerOptions, type TruncateOption } from '../scoring';

/** What every adapter passes through to `scorer.rerank()` besides the query and documents. */
export interface AdapterSettings {
  /** The task instruction; default the template's. */
  readonly instruction?: string;
  /** Keep the best N; default all (a framework's own topN wins). */
  readonly topN?: number;
  /** Cut documents past the context (docs/rerank.md "Long documents"); default: such a document is an error. */
  readonly truncate?: TruncateOption;
}

/** One ranked document: its index in the request and its relevance. */
export interface RankedIndex {
  readonly index: number;
  readonly relevanceScore: number;
}

const SETTING_KEYS: readonly (keyof AdapterSettings)[] = ['instruction', 'topN', 'truncate'];

/** Checks an adapter's settings object (its values are checked by the Scorer, per request). */
export function adapterSettings(
  settings: unknown,
  where: string,
  extra: readonly string[] = [],
): Record<string, unknown> {
  if (settings === undefined) return {};
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
    throw new TypeError(
      `${where}: settings must be an object, ` +
        `got ${settings === null ? 'null' : Array.isArray(settings) ? 'an array' : typeof settings}`,
    );
  }
  const known = new Set<string>([...SETTING_KEYS, ...extra]);
  for (const key of Object.keys(settings)) {
    if (!known.has(key))
      throw new TypeError(`${where}: unknown setting ${JSON.stringify(key)}; known: ${[...known].join(', ')}`);
  }
  return settings as Record<string, unknown>;
}

export class ScorerSource {
  private disposed = false;

  private constructor(
    readonly scorer: Scorer,
    /** Loaded for the adapter, so disposed with it. */
    readonly owned: boolean,
  ) {}

  /** The app's Scorer, shared: disposing the adapter leaves it alone. */
  static shared(scorer: unknown, where: string): ScorerSource {
    if (!(scorer instanceof Scorer)) {
      const got =
        scorer === null
          ? 'null'
          : typeof scorer === 'object'
            ? (scorer.constructor?.name ?? 'an object')
            : typeof scorer;
      throw new TypeError(`${where}: expected a Scorer (from Scorer.load() of pjrt-score), got ${got}`);
    }
    return new ScorerSource(scorer, false);
  }

  /** A Scorer loaded for the adapter, owned: disposing the adapter disposes it. */
  static async load(options?: ScorerOptions): Promise<ScorerSource> {
    return new ScorerSource(await Scorer.load(options), true);
  }

  /** Reranks through the Scorer's own `rerank()`; a topN of the request wins over the settings'. */
  async rerank(request: RerankRequest, settings: AdapterSettings, signal?: AbortSignal): Promise<RerankResponse> {
    if (this.disposed) throw new Error('this reranker was disposed');
    const topN = request.topN ?? settings.topN;
    const full: RerankRequest = {
      ...request,
      ...(topN !== undefined ? { topN } : {}),
      ...(settings.instruction !== undefined && request.instruction === undefined
        ? { instruction: settings.instruction }
        : {}),
      ...(settings.truncate !== undefined && request.truncate === undefined ? { truncate: settings.truncate } : {}),
    };
    return this.scorer.rerank(full, signal ? { signal } : {});
  }

  /** Disposes the Scorer when the adapter owns it; idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.owned) this.scorer.dispose();
  }
}

/**
 * Requires a framework package at the moment its adapter is loaded, so the
 * package's root entry never needs it; its absence is an error naming the
 * package to install.
 */
export function requirePeer<T>(specifier: string, packageName: string, subpath: string): T {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(specifier) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (
      (code === 'MODULE_NOT_FOUND' || code === 'ERR_PACKAGE_PATH_NOT_EXPORTED') &&
      String((error as Error).message).includes(packageName)
    ) {
      throw new Error(`pjrt-score/${subpath} needs the package ${packageName}: npm install ${packageName}`, {
        cause: error,
      });
    }
    throw error;
  }
}
