/**
 * A rerank request's answer from its documents' score rows (rerank.ts builds the request): each
 * document's relevance, its best chunk's where it was chunked, sorted best first and cut to topN.
 */
import type { TruncationReport } from './truncate';
import type { NormalizedRerank, RerankResult } from './rerank';

/**
 * One item's relevance from its score row. 'yes-vs-no': [no, yes]
 * softmaxed over the two. 'yes-logit': [P(no), P(yes), exp(-logsumexp)]
 * over the vocabulary, so log P(yes) - log of the third is the logit of yes.
 */
function relevanceOf(request: NormalizedRerank, row: readonly number[]): number {
  const [no, yes] = row;
  if (request.relevance === 'yes-logit') {
    const logit = Math.log(yes) - Math.log(row[2]);
    return request.rawScores ? logit : 1 / (1 + Math.exp(-logit));
  }
  return request.rawScores ? Math.log(yes) - Math.log(no) : yes;
}

/** A rerank request's answer from its documents' scores: the results, best first, the template and any truncation. */
export function rerankResponse(
  request: NormalizedRerank,
  scores: readonly (readonly number[])[],
  template: string,
): { results: RerankResult[]; template: string; truncation?: TruncationReport } {
  const truncation = request.score.truncation;
  return { results: rerankResults(request, scores), template, ...(truncation ? { truncation } : {}) };
}

/**
 * Scores (a row per item, as `score` asked: relevanceOf) to results sorted
 * by relevance, best first (ties: request order), cut to topN. A chunked
 * document takes its best chunk's relevance.
 */
export function rerankResults(request: NormalizedRerank, scores: readonly (readonly number[])[]): RerankResult[] {
  const best = new Array<number>(request.documents.length).fill(-Infinity);
  const seen = new Array<boolean>(request.documents.length).fill(false);
  scores.forEach((row, item) => {
    const d = request.itemDocument[item];
    const relevance = relevanceOf(request, row);
    if (relevance > best[d] || !seen[d]) {
      best[d] = relevance;
      seen[d] = true;
    }
  });
  const results = request.documents.map((text, index): RerankResult => {
    if (!seen[index]) throw new Error(`internal: no score for document ${index}`);
    const relevanceScore = best[index];
    return {
      index,
      relevanceScore,
      ...(request.returnDocuments ? { document: text, original: request.originals[index] } : {}),
    };
  });
  results.sort((a, b) => b.relevanceScore - a.relevanceScore || a.index - b.index);
  return results.slice(0, request.topN);
}
