/**
 * `pjrt-score/ai-sdk`: a reranking model for the AI SDK's `rerank()`
 * (docs/design.md "Integrations"), the specification version the installed
 * `@ai-sdk/provider` defines (v4). Only types come from the AI SDK, so this
 * module requires nothing of it at run time.
 *
 *   const model = PjrtScoreRerankingModel.fromScorer(scorer);
 *   const { ranking } = await rerank({ model, query, documents, topN: 3 });
 */
import type { JSONObject, RerankingModelV4, RerankingModelV4CallOptions, RerankingModelV4Result, SharedV4ProviderMetadata } from '@ai-sdk/provider';
import type { RerankResponse, ScorerOptions } from '../scoring';
import { adapterSettings, ScorerSource, type AdapterSettings } from './scorer-source';

/** The provider name, also the key of this model's providerOptions and providerMetadata. */
export const PROVIDER = 'pjrt-score';
const OPTIONS_KEY = 'pjrtScore';

export interface AiSdkRerankSettings extends AdapterSettings {
  /** Fields of object documents ranked, in order (values joined by newlines); default ['text']. */
  readonly rankFields?: readonly string[];
}

/** Per-call options, as `providerOptions: { pjrtScore: { ... } }`; they win over the model's settings. */
export interface PjrtScoreProviderOptions {
  readonly instruction?: string;
  readonly rankFields?: readonly string[];
}

export class PjrtScoreRerankingModel implements RerankingModelV4 {
  readonly specificationVersion = 'v4' as const;
  readonly provider = PROVIDER;
  readonly modelId: string;
  private readonly settings: AiSdkRerankSettings;

  private constructor(
    private readonly source: ScorerSource,
    settings: AiSdkRerankSettings,
  ) {
    this.modelId = source.scorer.modelName;
    this.settings = settings;
  }

  /** A model over the app's Scorer; disposing the model leaves the Scorer alone. */
  static fromScorer(scorer: unknown, settings?: AiSdkRerankSettings): PjrtScoreRerankingModel {
    const checked = adapterSettings(settings, 'PjrtScoreRerankingModel', ['rankFields']) as AiSdkRerankSettings;
    return new PjrtScoreRerankingModel(ScorerSource.shared(scorer, 'PjrtScoreRerankingModel.fromScorer'), checked);
  }

  /** A model with its own Scorer (Scorer.load(options)); `dispose()` frees it. */
  static async load(options?: ScorerOptions, settings?: AiSdkRerankSettings): Promise<PjrtScoreRerankingModel> {
    const checked = adapterSettings(settings, 'PjrtScoreRerankingModel', ['rankFields']) as AiSdkRerankSettings;
    return new PjrtScoreRerankingModel(await ScorerSource.load(options), checked);
  }

  async doRerank(options: RerankingModelV4CallOptions): Promise<RerankingModelV4Result> {
    const own = readProviderOptions(options.providerOptions?.[OPTIONS_KEY]);
    const rankFields = own.rankFields ?? this.settings.rankFields;
    const instruction = own.instruction ?? this.settings.instruction;
    const response = await this.source.rerank(
      {
        query: options.query,
        documents: options.documents.values,
        ...(options.topN !== undefined ? { topN: options.topN } : {}),
        ...(instruction !== undefined ? { instruction } : {}),
        ...(rankFields !== undefined ? { rankFields } : {}),
      },
      this.settings,
      options.abortSignal,
    );
    return {
      ranking: response.results.map((r) => ({ index: r.index, relevanceScore: r.relevanceScore })),
      providerMetadata: providerMetadata(response),
      response: { modelId: response.model, timestamp: new Date() },
      warnings: [],
    };
  }

  /** Frees the Scorer when this model loaded it; idempotent. */
  dispose(): void {
    this.source.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** A model over the app's Scorer (PjrtScoreRerankingModel.fromScorer). */
export function fromScorer(scorer: unknown, settings?: AiSdkRerankSettings): PjrtScoreRerankingModel {
  return PjrtScoreRerankingModel.fromScorer(scorer, settings);
}

/** The model, the plan that ran and the tokens, under `providerMetadata.pjrtScore`. */
function providerMetadata(response: RerankResponse): SharedV4ProviderMetadata {
  const meta: JSONObject = {
    model: response.model,
    template: response.template,
    algorithm: response.algorithm,
    promptTokens: response.usage.promptTokens,
    totalTokens: response.usage.totalTokens,
  };
  if (response.truncation) {
    meta.truncation = {
      tokensBefore: response.truncation.tokensBefore,
      tokensAfter: response.truncation.tokensAfter,
      truncatedItems: [...response.truncation.truncatedItems],
    };
  }
  return { [OPTIONS_KEY]: meta };
}

function readProviderOptions(raw: unknown): PjrtScoreProviderOptions {
  if (raw === undefined) return {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new TypeError(`providerOptions.${OPTIONS_KEY} must be an object`);
  const known = new Set(['instruction', 'rankFields']);
  for (const key of Object.keys(raw)) {
    if (!known.has(key)) throw new TypeError(`providerOptions.${OPTIONS_KEY}: unknown option ${JSON.stringify(key)}; known: instruction, rankFields`);
  }
  return raw as PjrtScoreProviderOptions;
}
