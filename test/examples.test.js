'use strict';
// The README's examples run as written (they live in examples/).
const test = require('tape');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

test('examples/compile-and-run.js prints the product computed on the device', (t) => {
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'examples', 'compile-and-run.js')], {
    encoding: 'utf8',
    timeout: 120000,
  });
  t.equal(r.status, 0, 'exit 0');
  // x @ w by hand: [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
  t.match(r.stdout, /\[ 2, 2 \] Float32Array\(4\) \[ 4, 5, 10, 11 \]/, 'prints [[4, 5], [10, 11]]');
  t.end();
});

test('examples/rank-answers.js (the README example) ranks the right answer first', (t) => {
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'examples', 'rank-answers.js')], {
    encoding: 'utf8',
    timeout: 300000,
  });
  t.equal(r.status, 0, `exit 0${r.status ? `: ${r.stderr.slice(-500)}` : ''}`);
  const lines = r.stdout
    .trim()
    .split('\n')
    .filter((l) => /P\(yes\)/.test(l));
  t.equal(lines.length, 4, 'four candidates ranked');
  t.match(lines[0] || '', /^Paris\s/, `first: ${lines[0]}`);
  const probabilities = lines.map((l) => Number(l.split('=')[1]));
  t.ok(
    probabilities.every((p, i) => i === 0 || p <= probabilities[i - 1]),
    'printed in decreasing P(yes)',
  );
  t.end();
});

test('examples/rerank.js (the README rerank example) prints documents sorted by relevance', (t) => {
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'examples', 'rerank.js')], {
    encoding: 'utf8',
    timeout: 300000,
  });
  t.equal(r.status, 0, `exit 0${r.status ? `: ${r.stderr.slice(-500)}` : ''}`);
  const lines = r.stdout.trim().split('\n');
  const ranked = lines.filter((l) => /^\d\.\d{3}\s+\[\d\]/.test(l));
  t.equal(ranked.length, 4, 'four documents ranked');
  const scores = ranked.map((l) => Number(l.split(/\s+/)[0]));
  t.ok(
    scores.every((s, i) => i === 0 || s <= scores[i - 1]),
    'in decreasing relevance',
  );
  t.match(ranked[0] || '', /Paris is the capital/, `first: ${ranked[0]}`);
  t.match(lines[lines.length - 1], /^template chatml-yes-no, \d+ prompt tokens/, 'says which template served it');
  t.end();
});

test('the framework examples (AI SDK, LangChain, LlamaIndex) retrieve by keywords and print the same reranked top 3', (t) => {
  const printed = {};
  for (const name of ['ai-sdk-rerank', 'langchain-rerank', 'llamaindex-rerank']) {
    const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'examples', `${name}.js`)], {
      encoding: 'utf8',
      timeout: 300000,
    });
    t.equal(r.status, 0, `${name}: exit 0${r.status ? `: ${r.stderr.slice(-500)}` : ''}`);
    const ranked = r.stdout.split('\n').filter((l) => /^\d\.\d{3} {2}/.test(l));
    t.equal(ranked.length, 3, `${name}: three documents ranked`);
    const scores = ranked.map((l) => Number(l.split(/\s+/)[0]));
    t.ok(
      scores.every((s, i) => i === 0 || s <= scores[i - 1]),
      `${name}: in decreasing relevance`,
    );
    t.match(ranked[0] || '', /Paris is the capital and largest city of France/, `${name} first: ${ranked[0]}`);
    // The same Scorer under each framework: the same documents with the same scores.
    printed[name] = ranked.map((l) => l.replace(/\s+\(doc-\d+\)$/, ''));
    if (name === 'ai-sdk-rerank')
      t.match(
        r.stdout,
        /\n\S+, plan (serial|packed|prefix), \d+ prompt tokens, 8 candidates of 30\n/,
        'the provider metadata: model, plan, tokens',
      );
  }
  t.deepEqual(printed['langchain-rerank'], printed['ai-sdk-rerank'], 'LangChain prints what the AI SDK prints');
  t.deepEqual(printed['llamaindex-rerank'], printed['ai-sdk-rerank'], 'LlamaIndex prints what the AI SDK prints');
  t.end();
});

test('examples/service.js (the README service example) answers /v1/score and /v1/rerank over HTTP', (t) => {
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'examples', 'service.js')], {
    encoding: 'utf8',
    timeout: 300000,
  });
  t.equal(r.status, 0, `exit 0${r.status ? `: ${r.stderr.slice(-500)}` : ''}`);
  const lines = r.stdout.trim().split('\n');
  // Score: an apple is a fruit and a car is not, so P(yes) is higher for the apple.
  const pYes = Object.fromEntries(
    lines.filter((l) => /P\(yes\) = /.test(l)).map((l) => [l.split(/\s+/)[0], Number(l.split('=')[1])]),
  );
  t.deepEqual(Object.keys(pYes), ['apple', 'car'], 'one P(yes) per item, in request order');
  t.ok(pYes.apple > 0.5 && pYes.apple <= 1, `apple: P(yes) ${pYes.apple} above one half`);
  t.ok(pYes.car >= 0 && pYes.car < 0.5, `car: P(yes) ${pYes.car} below one half`);
  // Rerank: the one document that answers the query comes first, all four in decreasing relevance.
  const ranked = lines.slice(lines.indexOf('POST /v1/rerank') + 1).filter((l) => /^\d\.\d{3}\s+\[\d\]/.test(l));
  t.equal(ranked.length, 4, 'four documents ranked');
  t.match(ranked[0] || '', /\[1\] Paris is the capital/, `first: ${ranked[0]}`);
  const scores = ranked.map((l) => Number(l.split(/\s+/)[0]));
  t.ok(
    scores.every((s, i) => i === 0 || s <= scores[i - 1]),
    'in decreasing relevance',
  );
  t.end();
});
