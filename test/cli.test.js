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
function cli(args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    const out = [];
    const err = [];
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
}

const scoreArgs = (extra = []) => ['score', '--query', QUERY, ...ITEMS.flatMap((i) => ['--items', i]), '--labels', LABELS.join(','), ...extra];

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

test('--help exits 0 for the command and every subcommand', async (t) => {
  for (const args of [['--help'], ['serve', '--help'], ['score', '--help'], ['fetch', '--help'], ['help', 'serve']]) {
    const run = await cli(args);
    t.equal(run.code, 0, `${args.join(' ')}: exit 0`);
    t.match(run.stdout, /^Usage: pjrt-score/, `${args.join(' ')}: usage on stdout`);
  }
  const serve = await cli(['serve', '--help']);
  for (const env of ['PJRT_SCORE_PORT', 'PJRT_SCORE_MAX_ITEMS', 'PJRT_SCORE_QUEUE_SIZE', 'PJRT_SCORE_TIMEOUT_MS', 'PJRT_SCORE_MAX_BODY_BYTES']) {
    t.ok(serve.stdout.includes(env), `serve --help documents ${env}`);
  }
});

test('unknown flags, commands and bad values exit 2 with a message', async (t) => {
  const cases = [
    [['serve', '--bogus'], /--bogus/],
    [['score', '--query', 'q', '--items', 'a', '--labels', '1', '--nope'], /--nope/],
    [['fetch', '--plugin', 'tpu'], /--plugin must be one of cpu, cuda12/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['serve', '--port', 'eighty'], /--port must be an integer/],
    [['serve', '--algorithm', 'fastest'], /--algorithm must be one of auto, serial, packed, prefix/],
    [['serve', '--warmup', '12x'], /warmup shape "12x"/],
    [['score', '--query', 'q', '--items', 'a', '--labels', 'yes'], /--labels must be comma-separated token ids/],
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
