/**
 * `pjrt-score/llamaindex`: a node postprocessor for LlamaIndex.TS
 * (docs/design.md "Integrations"), for a query engine's `nodePostprocessors`.
 * It returns the nodes best first, cut to topN, each with its relevance as
 * its score. Only types come from LlamaIndex, so this module requires
 * nothing of it at run time.
 *
 *   const engine = new RetrieverQueryEngine(retriever, synthesizer, [PjrtScoreRerank.fromScorer(scorer, { topN: 3 })]);
 */
import type { BaseNodePostprocessor, MessageContent, MetadataMode, NodeWithScore } from 'llamaindex';
import type { ScorerOptions } from '../scoring';
import { adapterSettings, ScorerSource, type AdapterSettings } from './scorer-source';

const METADATA_MODES = ['NONE', 'ALL', 'EMBED', 'LLM'] as const;

export interface LlamaIndexRerankSettings extends AdapterSettings {
  /** Which of a node's metadata is ranked with its text (node.getContent's mode); default 'NONE': the text alone. */
  readonly metadataMode?: (typeof METADATA_MODES)[number];
}

export class PjrtScoreRerank implements BaseNodePostprocessor {
  private readonly mode: MetadataMode;

  private constructor(
    private readonly source: ScorerSource,
    private readonly settings: LlamaIndexRerankSettings,
  ) {
    const mode = settings.metadataMode ?? 'NONE';
    if (!METADATA_MODES.includes(mode))
      throw new TypeError(
        `PjrtScoreRerank: metadataMode must be one of ${METADATA_MODES.join(', ')}, got ${JSON.stringify(mode)}`,
      );
    // MetadataMode is a string enum whose values are these names.
    this.mode = mode as unknown as MetadataMode;
  }

  /** A postprocessor over the app's Scorer; disposing it leaves the Scorer alone. */
  static fromScorer(scorer: unknown, settings?: LlamaIndexRerankSettings): PjrtScoreRerank {
    const checked = adapterSettings(settings, 'PjrtScoreRerank', ['metadataMode']) as LlamaIndexRerankSettings;
    return new PjrtScoreRerank(ScorerSource.shared(scorer, 'PjrtScoreRerank.fromScorer'), checked);
  }

  /** A postprocessor with its own Scorer (Scorer.load(options)); `dispose()` frees it. */
  static async load(options?: ScorerOptions, settings?: LlamaIndexRerankSettings): Promise<PjrtScoreRerank> {
    const checked = adapterSettings(settings, 'PjrtScoreRerank', ['metadataMode']) as LlamaIndexRerankSettings;
    return new PjrtScoreRerank(await ScorerSource.load(options), checked);
  }

  /** The nodes best first, cut to topN, each `{ node, score: relevance }`. `signal` drops the work when it fires. */
  async postprocessNodes(
    nodes: NodeWithScore[],
    query?: MessageContent,
    options: { signal?: AbortSignal } = {},
  ): Promise<NodeWithScore[]> {
    if (!Array.isArray(nodes)) throw new TypeError(`nodes must be an array, got ${typeof nodes}`);
    if (query === undefined) throw new TypeError('PjrtScoreRerank.postprocessNodes needs the query');
    if (nodes.length === 0) return [];
    const documents = nodes.map((n, i) => {
      if (typeof n?.node?.getContent !== 'function')
        throw new TypeError(`nodes[${i}] is not a NodeWithScore (no node.getContent)`);
      return n.node.getContent(this.mode);
    });
    const response = await this.source.rerank({ query: queryText(query), documents }, this.settings, options.signal);
    return response.results.map((r) => ({ node: nodes[r.index].node, score: r.relevanceScore }));
  }

  /** Frees the Scorer when this postprocessor loaded it; idempotent. */
  dispose(): void {
    this.source.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** A postprocessor over the app's Scorer (PjrtScoreRerank.fromScorer). */
export function fromScorer(scorer: unknown, settings?: LlamaIndexRerankSettings): PjrtScoreRerank {
  return PjrtScoreRerank.fromScorer(scorer, settings);
}

/** The text of a query: a string, or the text parts of a multi-part message. */
function queryText(query: MessageContent): string {
  if (typeof query === 'string') return query;
  if (!Array.isArray(query)) throw new TypeError(`the query must be a string or message parts, got ${typeof query}`);
  const texts = query.filter((p): p is { type: 'text'; text: string } => p?.type === 'text').map((p) => p.text);
  if (texts.length === 0) throw new TypeError('the query has no text part');
  return texts.join('\n');
}
