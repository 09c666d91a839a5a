'use strict';
// A few dozen short documents and a keyword retriever over them, for the
// framework examples (ai-sdk-rerank.js, langchain-rerank.js,
// llamaindex-rerank.js): the retriever finds candidates by shared words,
// the reranker orders them by relevance.

const DOCUMENTS = [
  'Paris is the capital and largest city of France.',
  'France is a country in Western Europe; its capital is Paris.',
  'Lyon is the third-largest city of France, known for its cuisine.',
  'Marseille is a port city in the south of France.',
  'The Eiffel Tower in Paris was completed in 1889.',
  'Berlin is the capital of Germany.',
  'Madrid is the capital and most populous city of Spain.',
  'Rome is the capital city of Italy.',
  'The Louvre in Paris is the most visited museum in the world.',
  'The Seine river flows through Paris.',
  'The French Revolution began in 1789.',
  'Versailles was the seat of the French court before the Revolution.',
  'Brussels is the capital of Belgium and seat of the European Union.',
  'Lisbon is the capital of Portugal.',
  'Vienna is the capital of Austria.',
  'Bananas are rich in potassium.',
  'Apples come in thousands of varieties.',
  'Water boils at 100 degrees Celsius at sea level.',
  'The speed of light is about 300,000 kilometres per second.',
  'Mount Everest is the highest mountain on Earth.',
  'The Pacific is the largest ocean.',
  'Bordeaux is a French city famous for its wine.',
  'Strasbourg, a city of France, hosts the European Parliament.',
  'Canberra is the capital of Australia.',
  'Ottawa is the capital city of Canada.',
  'The capital of Japan is Tokyo.',
  'French is spoken in France, Belgium, Switzerland and Canada.',
  'The Tour de France is a bicycle race held each July.',
  'Nice lies on the French Riviera.',
  'The euro is the currency of France and most of the European Union.',
];

const STOP = new Set([
  'a',
  'an',
  'and',
  'the',
  'of',
  'is',
  'in',
  'its',
  'on',
  'at',
  'for',
  'what',
  'which',
  'who',
  'to',
]);

/** The lowercase words of a text, without stop words. */
function words(text) {
  return new Set(
    text
      .toLowerCase()
      .match(/[a-z0-9]+/g)
      ?.filter((w) => !STOP.has(w)) ?? [],
  );
}

/** The indices of the k documents sharing most words with the query (ties in corpus order), those sharing none left out. */
function keywordSearch(query, k) {
  const q = words(query);
  return DOCUMENTS.map((text, index) => ({ index, shared: [...words(text)].filter((w) => q.has(w)).length }))
    .filter((d) => d.shared > 0)
    .sort((a, b) => b.shared - a.shared || a.index - b.index)
    .slice(0, k)
    .map((d) => d.index);
}

module.exports = { DOCUMENTS, keywordSearch };
