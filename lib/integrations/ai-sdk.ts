/**
 * `pjrt-score/ai-sdk`: a reranking model for the AI SDK's `rerank()`
 * (docs/design.md "Integrations"), in both specification versions:
 * `PjrtScoreRerankingModel` is v4 (AI SDK 7, `@ai-sdk/provider` 4),
 * `PjrtScoreRerankingModelV3` is v3 (AI SDK 6, `@ai-sdk/provider` 3, the
 * one npm resolves on Node 20; AI SDK 7 takes it too). The two interfaces
 * have the same call options and result; they are declared here, so this
 * module's types hold with either `@ai-sdk/provider` and it requires
 * nothing of the AI SDK at run time.
 *
 *   const model = PjrtScoreRerankingModel.fromScorer(scorer);
 *   const { ranking } = await rerank({ model, query, documents, topN: 3 });
 */
import type { RerankingModelV3, RerankingModelV4 } from '@ai-sdk/provider';
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

/** A JSON object, as the AI SDK's JSONObject. */
export interface JsonObject {
  [key: string]: JsonValue | undefined;
}
export type JsonValue = null | string | number | boolean | JsonObject | JsonValue[];

/** RerankingModelV3CallOptions and RerankingModelV4CallOptions (the same shape). */
export interface RerankCallOptions {
  readonly documents:
    | { readonly type: 'text'; readonly values: string[] }
    | { readonly type: 'object'; readonly values: Record<string, unknown>[] };
  readonly query: string;
  readonly topN?: number;
  readonly abortSignal?: AbortSignal;
  readonly providerOptions?: Record<string, Record<string, unknown>>;
  readonly headers?: Record<string, string | undefined>;
}

/** RerankingModelV3Result and RerankingModelV4Result (the same shape); this model gives no warnings. */
export interface RerankCallResult {
  ranking: Array<{ index: number; relevanceScore: number }>;
  providerMetadata?: Record<string, JsonObject>;
  warnings?: never[];
  response?: { id?: string; timestamp?: Date; modelId?: string };
}

/** What both specification versions share: the Scorer, the settings, doRerank. */
abstract class RerankingModelBase {
  readonly provider = PROVIDER;
  readonly modelId: string;
  private readonly settings: AiSdkRerankSettings;

  protected constructor(
    private readonly source: ScorerSource,
    settings: AiSdkRerankSettings,
  ) {
    this.modelId = source.scorer.modelName;
    this.settings = settings;
  }

  async doRerank(options: RerankCallOptions): Promise<RerankCallResult> {
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

const checkSettings = (settings: AiSdkRerankSettings | undefined, name: string): AiSdkRerankSettings =>
  adapterSettings(settings, name, ['rankFields']) as AiSdkRerankSettings;

/** The reranking model of provider specification v4 (AI SDK 7). */
export class PjrtScoreRerankingModel extends RerankingModelBase {
  readonly specificationVersion = 'v4' as const;

  /** A model over the app's Scorer; disposing the model leaves the Scorer alone. */
  static fromScorer(scorer: unknown, settings?: AiSdkRerankSettings): PjrtScoreRerankingModel {
    const checked = checkSettings(settings, 'PjrtScoreRerankingModel');
    return new PjrtScoreRerankingModel(ScorerSource.shared(scorer, 'PjrtScoreRerankingModel.fromScorer'), checked);
  }

  /** A model with its own Scorer (Scorer.load(options)); `dispose()` frees it. */
  static async load(options?: ScorerOptions, settings?: AiSdkRerankSettings): Promise<PjrtScoreRerankingModel> {
    const checked = checkSettings(settings, 'PjrtScoreRerankingModel');
    return new PjrtScoreRerankingModel(await ScorerSource.load(options), checked);
  }
}

/** The same model in provider specification v3 (AI SDK 6, which Node 20 installs; AI SDK 7 accepts it too). */
export class PjrtScoreRerankingModelV3 extends RerankingModelBase {
  readonly specificationVersion = 'v3' as const;

  /** A model over the app's Scorer; disposing the model leaves the Scorer alone. */
  static fromScorer(scorer: unknown, settings?: AiSdkRerankSettings): PjrtScoreRerankingModelV3 {
    const checked = checkSettings(settings, 'PjrtScoreRerankingModelV3');
    return new PjrtScoreRerankingModelV3(ScorerSource.shared(scorer, 'PjrtScoreRerankingModelV3.fromScorer'), checked);
  }

  /** A model with its own Scorer (Scorer.load(options)); `dispose()` frees it. */
  static async load(options?: ScorerOptions, settings?: AiSdkRerankSettings): Promise<PjrtScoreRerankingModelV3> {
    const checked = checkSettings(settings, 'PjrtScoreRerankingModelV3');
    return new PjrtScoreRerankingModelV3(await ScorerSource.load(options), checked);
  }
}

/** A model over the app's Scorer (PjrtScoreRerankingModel.fromScorer). */
export function fromScorer(scorer: unknown, settings?: AiSdkRerankSettings): PjrtScoreRerankingModel {
  return PjrtScoreRerankingModel.fromScorer(scorer, settings);
}

/** The model, the plan that ran and the tokens, under `providerMetadata.pjrtScore`. */
function providerMetadata(response: RerankResponse): Record<string, JsonObject> {
  const meta: JsonObject = {
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
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new TypeError(`providerOptions.${OPTIONS_KEY} must be an object`);
  const known = new Set(['instruction', 'rankFields']);
  for (const key of Object.keys(raw)) {
    if (!known.has(key))
      throw new TypeError(
        `providerOptions.${OPTIONS_KEY}: unknown option ${JSON.stringify(key)}; known: instruction, rankFields`,
      );
  }
  return raw as PjrtScoreProviderOptions;
}

// Both classes are the AI SDK's interfaces: checked at build time against
// @ai-sdk/provider 4, which defines v3 and v4 (nothing of it reaches the declarations).
function implementsAiSdk(
  v4: PjrtScoreRerankingModel,
  v3: PjrtScoreRerankingModelV3,
): [RerankingModelV4, RerankingModelV3] {
  return [v4, v3];
}
void implementsAiSdk;
