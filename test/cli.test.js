'use strict';
// The pjrt-score command line: `score` prints what the library computes,
// `--help` works everywhere, bad flags and values exit 2 with a message.
const test = require('tape');
const { spawn } = require('node:child_process');
const { Scorer } = require('..');
const { BIN } = require('./helpers/service');

const QUERY = 'Is the following a fruit? Answer yes or no. Item:';
const ITEMS = [' apple', ' car', ' banana'];
const LABELS = [9805, 787];

/** Runs the CLI; resolves { code, stdout, stderr }. */
function cli(args, env = {}, input = undefined) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    if (input !== undefined) child.stdin.end(input);
    const out = [];
    const err = [];
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }),
    );
  });
}

const scoreArgs = (extra = []) => [
  'score',
  '--query',
  QUERY,
  ...ITEMS.flatMap((i) => ['--items', i]),
  '--labels',
  LABELS.join(','),
  ...extra,
];

test('score --json matches the library', async (t) => {
  const [run, scorer] = await Promise.all([cli(scoreArgs(['--json'])), Scorer.load()]);
  try {
    t.equal(run.code, 0, `exit 0${run.code ? `: ${run.stderr}` : ''}`);
    let body = null;
    try {
      body = JSON.parse(run.stdout);
    } catch (error) {
      t.fail(`stdout is JSON: ${error.message}\n${run.stdout}`);
    }
    t.equal(body.object, 'scoring', 'a Score API response');
    t.equal(body.model, scorer.modelName, 'model name');
    const lib = await scorer.score({ query: QUERY, items: ITEMS, labelTokenIds: LABELS });
    t.equal(body.scores.length, ITEMS.length, 'one row per item');
    const diff = Math.max(...body.scores.flatMap((row, i) => row.map((v, j) => Math.abs(v - lib.scores[i][j]))));
    t.ok(diff <= 1e-6, `scores equal the library's (max abs diff ${diff.toExponential(2)})`);
    t.equal(body.usage.prompt_tokens, lib.usage.promptTokens, 'usage');
  } finally {
    scorer.dispose();
  }
});

test('score prints a table with the decoded label tokens; --apply-softmax rows sum to 1', async (t) => {
  const run = await cli(scoreArgs(['--apply-softmax']));
  t.equal(run.code, 0, `exit 0${run.code ? `: ${run.stderr}` : ''}`);
  const lines = run.stdout.split('\n');
  t.match(lines[0], /" yes" \(9805\)/, 'header names " yes" (9805)');
  t.match(lines[0], /" no" \(787\)/, 'header names " no" (787)');
  const rows = lines.filter((l) => /^\d+\s/.test(l));
  t.equal(rows.length, 3, 'three item rows');
  for (const row of rows) {
    const values = row.trim().split(/\s+/).slice(-2).map(Number);
    t.ok(Math.abs(values[0] + values[1] - 1) < 2e-6, `row sums to 1: ${row.trim()}`);
  }
  t.match(run.stdout, /apple/, 'items are shown');
});

test('score --labels as text: " yes"," no" are the ids 9805, 787; a label of several tokens exits 2 naming them', async (t) => {
  const [byText, byIds, json] = await Promise.all([
    cli(['score', '--query', QUERY, ...ITEMS.flatMap((i) => ['--items', i]), '--labels', ' yes, no', '--json']),
    cli(scoreArgs(['--json'])),
    cli(['score', '--query', QUERY, '--items', ITEMS[0], '--labels', '[" yes", 787]', '--json']),
  ]);
  t.equal(byText.code, 0, `exit 0${byText.code ? `: ${byText.stderr}` : ''}`);
  t.deepEqual(JSON.parse(byText.stdout).scores, JSON.parse(byIds.stdout).scores, 'the same scores as the ids');
  t.ok(/"scores":\[\[[0-9.e-]+,[0-9.e-]+\]/.test(byText.stdout), 'JSON scores as floats');
  t.equal(json.code, 2, 'a JSON array mixing text and ids: exit 2');
  const long = await cli(['score', '--query', 'q', '--items', 'a', '--labels', ' xqzvjk, no']);
  t.equal(long.code, 2, 'a label of several tokens: exit 2');
  t.match(long.stderr, /" xqzvjk" is \d+ tokens \([0-9, ]+\), not one/, long.stderr.split('\n')[0]);
});

test('rerank --file: documents one per line, or a JSON array from stdin; the same ranking as --doc', async (t) => {
  const docs = ['Paris is the capital of France.', 'Bananas are yellow.', 'Berlin is in Germany.'];
  const file = require('node:path').join(require('node:os').tmpdir(), `pjrt-score-cli-docs-${process.pid}.txt`);
  require('node:fs').writeFileSync(file, `${docs.join('\n')}\n\n`);
  try {
    const q = ['rerank', '--query', 'What is the capital of France?', '--json'];
    const [byDoc, byFile, byStdin] = await Promise.all([
      cli([...q, ...docs.flatMap((d) => ['--doc', d])]),
      cli([...q, '--file', file]),
      cli([...q, '--file', '-'], {}, JSON.stringify(docs.map((text) => ({ text })))),
    ]);
    t.equal(byFile.code, 0, `file: exit 0${byFile.code ? `: ${byFile.stderr}` : ''}`);
    t.equal(byStdin.code, 0, `stdin: exit 0${byStdin.code ? `: ${byStdin.stderr}` : ''}`);
    const results = (run) => JSON.parse(run.stdout).results;
    t.equal(results(byDoc).length, 3, 'three results');
    t.deepEqual(results(byFile), results(byDoc), 'lines: the same results (the empty line skipped)');
    t.deepEqual(results(byStdin), results(byDoc), 'JSON on stdin: the same results');
    // The HTTP answer's shape: an id and Cohere's meta beside the results and usage.
    const body = JSON.parse(byDoc.stdout);
    t.match(body.id, /^[0-9a-f-]{36}$/, `--json has an id (${body.id})`);
    t.notEqual(body.id, JSON.parse(byFile.stdout).id, 'a fresh id each run');
    t.equal(body.meta.tokens.input_tokens, body.usage.prompt_tokens, '--json has meta, its tokens the usage');
    t.deepEqual(body.meta.api_version, { version: '1' }, "meta's api_version, as /v1/rerank's");
    // The default model is a chat model: the CLI says so once, naming a reranker from docs/models.md.
    const models = require('node:fs').readFileSync(
      require('node:path').join(__dirname, '..', 'docs', 'models.md'),
      'utf8',
    );
    const named = /--model (\S+)/.exec(byDoc.stderr);
    t.ok(named, `stderr names a reranker to load: ${byDoc.stderr.trim().split('\n')[0]}`);
    t.ok(
      named && models.includes(`--model ${named[1]}`),
      `the reranker named is the one docs/models.md's "Which model" gives (${named && named[1]})`,
    );
    t.equal(byDoc.stderr.match(/not a reranker/g)?.length, 1, 'said once');
  } finally {
    require('node:fs').unlinkSync(file);
  }
});

test('--help exits 0 for the command and every subcommand', async (t) => {
  for (const args of [['--help'], ['serve', '--help'], ['score', '--help'], ['fetch', '--help'], ['help', 'serve']]) {
    const run = await cli(args);
    t.equal(run.code, 0, `${args.join(' ')}: exit 0`);
    t.match(run.stdout, /^Usage: pjrt-score/, `${args.join(' ')}: usage on stdout`);
  }
  const serve = await cli(['serve', '--help']);
  for (const env of [
    'PJRT_SCORE_PORT',
    'PJRT_SCORE_MAX_ITEMS',
    'PJRT_SCORE_QUEUE_SIZE',
    'PJRT_SCORE_TIMEOUT_MS',
    'PJRT_SCORE_MAX_BODY_BYTES',
  ]) {
    t.ok(serve.stdout.includes(env), `serve --help documents ${env}`);
  }
});

test('unknown flags, commands and bad values exit 2 with a message', async (t) => {
  const cases = [
    [['serve', '--bogus'], /--bogus/],
    [['score', '--query', 'q', '--items', 'a', '--labels', '1', '--nope'], /--nope/],
    [['fetch', '--plugin', 'tpu'], /--plugin must be one of cpu, cuda, cuda12/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['serve', '--port', 'eighty'], /--port must be an integer/],
    [['serve', '--algorithm', 'fastest'], /--algorithm must be one of auto, serial, packed, prefix/],
    [['serve', '--warmup', '12x'], /warmup shape "12x"/],
    [
      ['score', '--query', 'q', '--items', 'a', '--labels', ' yes,'],
      /--labels must be token ids or label texts, not a mix or empty labels/,
    ],
    [['rerank', '--query', 'q'], /no documents: give --doc or --file/],
    [['rerank', '--query', 'q', '--file', '/no/such/file'], /--file: cannot read/],
    [['score', '--items', 'a', '--labels', '1'], /--query is required/],
  ];
  for (const [args, message] of cases) {
    const run = await cli(args);
    t.equal(run.code, 2, `${args.join(' ')}: exit 2`);
    t.match(run.stderr, message, `${args.join(' ')}: ${run.stderr.split('\n')[0]}`);
  }
  const env = await cli(['serve'], { PJRT_SCORE_QUEUE_SIZE: 'lots' });
  t.equal(env.code, 2, 'a bad environment value: exit 2');
  t.match(env.stderr, /PJRT_SCORE_QUEUE_SIZE must be an integer/, 'names the variable');
});

test('serve rejects a delimiter outside the vocabulary', async (t) => {
  const run = await cli(['serve', '--port', '0', '--warmup', 'none', '--multi-item-scoring-delimiter', '4000000']);
  t.equal(run.code, 2, 'exit 2');
  t.match(run.stdout, /multi-item-scoring-delimiter 4000000 is not a token id/, 'the log line says why');
});

test('fetch is idempotent when the plugin and model are cached', async (t) => {
  const run = await cli(['fetch']);
  t.equal(run.code, 0, `exit 0${run.code ? `: ${run.stderr}` : ''}`);
  t.match(run.stderr, /already in/, 'nothing downloaded');
  t.match(run.stdout, /plugin: .*xla_cpu_pjrt\.so/, 'plugin path');
  t.match(run.stdout, /model: .*\.gguf/, 'model path');
});
