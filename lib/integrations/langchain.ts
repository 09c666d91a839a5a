/**
 * `pjrt-score/langchain`: a document compressor for LangChain.js
 * (docs/design.md "Integrations"), so `ContextualCompressionRetriever` takes
 * it unchanged. Each document it returns is a copy with its relevance in
 * `metadata.relevanceScore`, best first, cut to topN. `@langchain/core` is
 * required when this module loads, never by the package's root entry.
 *
 *   const compressor = PjrtScoreRerank.fromScorer(scorer, { topN: 3 });
 *   const retriever = new ContextualCompressionRetriever({ baseCompressor: compressor, baseRetriever });
 */
import type { DocumentInterface } from '@langchain/core/documents';
import type { ScorerOptions } from '../scoring';
import { adapterSettings, requirePeer, ScorerSource, type AdapterSettings, type RankedIndex } from './scorer-source';

const { BaseDocumentCompressor } = requirePeer<typeof import('@langchain/core/retrievers/document_compressors')>(
  '@langchain/core/retrievers/document_compressors',
  '@langchain/core',
  'langchain',
);
const { Document } = requirePeer<typeof import('@langchain/core/documents')>(
  '@langchain/core/documents',
  '@langchain/core',
  'langchain',
);

export type LangChainRerankSettings = AdapterSettings;

export class PjrtScoreRerank extends BaseDocumentCompressor {
  private constructor(
    private readonly source: ScorerSource,
    private readonly settings: LangChainRerankSettings,
  ) {
    super();
  }

  /** A compressor over the app's Scorer; disposing it leaves the Scorer alone. */
  static fromScorer(scorer: unknown, settings?: LangChainRerankSettings): PjrtScoreRerank {
    const checked = adapterSettings(settings, 'PjrtScoreRerank') as LangChainRerankSettings;
    return new PjrtScoreRerank(ScorerSource.shared(scorer, 'PjrtScoreRerank.fromScorer'), checked);
  }

  /** A compressor with its own Scorer (Scorer.load(options)); `dispose()` frees it. */
  static async load(options?: ScorerOptions, settings?: LangChainRerankSettings): Promise<PjrtScoreRerank> {
    const checked = adapterSettings(settings, 'PjrtScoreRerank') as LangChainRerankSettings;
    return new PjrtScoreRerank(await ScorerSource.load(options), checked);
  }

  /** The model that scores. */
  get modelName(): string {
    return this.source.scorer.modelName;
  }

  /**
   * Ranks the documents' page contents against the query: [{ index, relevanceScore }], best first,
   * cut to topN (the option's, else the settings'). `signal` drops the work when it fires.
   */
  async rerank(
    documents: readonly (DocumentInterface | string)[],
    query: string,
    options: { topN?: number; signal?: AbortSignal } = {},
  ): Promise<RankedIndex[]> {
    if (!Array.isArray(documents)) throw new TypeError(`documents must be an array, got ${typeof documents}`);
    const texts = documents.map((d) => (typeof d === 'string' ? d : d?.pageContent));
    const response = await this.source.rerank(
      { query, documents: texts as string[], ...(options.topN !== undefined ? { topN: options.topN } : {}) },
      this.settings,
      options.signal,
    );
    return response.results.map((r) => ({ index: r.index, relevanceScore: r.relevanceScore }));
  }

  /**
   * The documents best first, cut to topN, each a copy with `metadata.relevanceScore`. The callbacks
   * (LangChain's third argument) are typed unknown: LangChain's CommonJS and ES module typings of
   * them are distinct classes, and an app may compile against either.
   */
  async compressDocuments(
    documents: DocumentInterface[],
    query: string,
    _callbacks?: unknown,
  ): Promise<DocumentInterface[]> {
    if (documents.length === 0) return [];
    const ranked = await this.rerank(documents, query);
    return ranked.map(({ index, relevanceScore }) => {
      const d = documents[index];
      return new Document({
        pageContent: d.pageContent,
        metadata: { ...d.metadata, relevanceScore },
        ...(d.id !== undefined ? { id: d.id } : {}),
      });
    });
  }

  /** Frees the Scorer when this compressor loaded it; idempotent. */
  dispose(): void {
    this.source.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** A compressor over the app's Scorer (PjrtScoreRerank.fromScorer). */
export function fromScorer(scorer: unknown, settings?: LangChainRerankSettings): PjrtScoreRerank {
  return PjrtScoreRerank.fromScorer(scorer, settings);
}
