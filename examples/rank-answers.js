// Rank candidate answers to a question with yes/no labels, in one forward pass.
// Run: node examples/rank-answers.js
const { Scorer } = require('pjrt-score');

async function main() {
  const scorer = await Scorer.load(); // the cached SmolLM2-135M-Instruct and XLA CPU plugin
  const t = (text) => scorer.tokenize(text);

  // SmolLM2's chat template: <|im_start|>=1, <|im_end|>=2 (special tokens go in as ids).
  const query = [1, ...t('user\nQuestion: What is the capital of France?\nProposed answer:')];
  const candidates = [' London', ' Paris', ' Berlin', ' Madrid'];
  const items = candidates.map((c) => [
    ...t(`${c}\nIs the proposed answer correct? Answer yes or no.`),
    2,
    ...t('\n'),
    1,
    ...t('assistant\n'),
  ]);
  const [yes, no] = [t('yes')[0], t('no')[0]];

  const { scores, usage } = await scorer.score({ query, items, labelTokenIds: [yes, no], applySoftmax: true });
  const ranked = candidates.map((c, i) => ({ answer: c.trim(), yes: scores[i][0] })).sort((a, b) => b.yes - a.yes);
  for (const r of ranked) console.log(`${r.answer.padEnd(8)} P(yes) = ${r.yes.toFixed(3)}`);
  console.log(`${usage.promptTokens} prompt tokens (the query once, plus every item)`);
  scorer.dispose();
}

main();
