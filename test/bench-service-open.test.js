'use strict';
// npm run bench:service -- --load open (scripts/bench/lib/open-loop.js) against the real CPU plugin and
// the default model, briefly at 1 and 2 requests a second: the harness, never a timing verdict.
// Its table must agree with itself and with the server: every request autocannon counts answered
// is one the server's /metrics counts as a 200, with 10 items and the tokens of text of the PR shape
// (a 300-token query, 10 items of 20: about 500 tokens a request), errors 0, and "held"
// follows its rule (achieved within 3% of offered, 0 errors, p99 <= 100 ms).
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');

test('bench:service --load open: the table counts what autocannon and the server count, 0 errors, held by its rule', (t) => {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-open-')), 'open.json');
  const r = spawnSync(
    process.execPath,
    [
      path.join(root, 'scripts', 'bench', 'service.js'),
      '--load',
      'open',
      '--rates',
      '1',
      '--sweep',
      '2',
      '--duration',
      '2',
      '--warm',
      '0',
      '--out',
      out,
    ],
    {
      cwd: root,
      encoding: 'utf8',
      timeout: 120000,
    },
  );
  t.equal(r.status, 0, `exit 0 ${r.stderr.slice(-400)}`);
  const result = JSON.parse(fs.readFileSync(out, 'utf8'));
  fs.rmSync(path.dirname(out), { recursive: true, force: true });
  t.ok(r.stdout.includes(`machine: ${os.cpus()[0].model.trim()}`), 'the table names the CPU model');
  t.equal(result.machine.cpu, os.cpus()[0].model.trim(), 'and so does the JSON');
  t.same(
    result.tokens.query.map((n) => n >= 295 && n <= 305),
    [true, true],
    `queries of about 300 tokens: ${result.tokens.query}`,
  );
  t.same(
    result.tokens.item.map((n) => n >= 20 && n <= 22),
    [true, true],
    `items of about 20 tokens: ${result.tokens.item}`,
  );
  t.same(
    result.steps.map((s) => [s.kind, s.offered]),
    [
      ['rate', 1],
      ['sweep', 2],
    ],
    'one step per rate, then the sweep',
  );
  const lines = r.stdout.split('\n').filter((l) => /^(rate|sweep) /.test(l));
  t.equal(lines.length, result.steps.length, 'a table line per step');
  result.steps.forEach((s, i) => {
    t.equal(s.sent, s.offered * result.duration, `${s.offered}/s: rate x duration requests sent (${s.sent})`);
    t.equal(s.ok, s.sent, 'all answered 200');
    t.equal(s.server.ok, s.ok, `the server counts as many 200s as autocannon (${s.server.ok})`);
    t.equal(s.server.failed, 0, 'and no failures');
    t.equal(s.errors, 0, 'errors 0');
    t.equal(s.server.items, s.ok * 10, 'the server scored 10 items a request');
    t.equal(
      s.server.tokens,
      s.clientTokens,
      `the server tokenized the text to the tokens the client counted (${s.server.tokens})`,
    );
    t.ok(s.server.tokens >= s.ok * 495 && s.server.tokens <= s.ok * 525, 'about 500 tokens a request');
    t.ok(
      Math.abs(s.itemsPerSec - (s.ok * 10) / s.seconds) < 1e-9 && Math.abs(s.achieved - s.ok / s.seconds) < 1e-9,
      'items/s and req/s from the counts and the time',
    );
    t.ok(s.p50Ms > 0 && s.p50Ms <= s.p99Ms && s.p99Ms <= s.maxMs, `p50 ${s.p50Ms} <= p99 ${s.p99Ms} <= max ${s.maxMs}`);
    const rule = s.errors === 0 && s.achieved >= s.offered * 0.97 && s.p99Ms <= 100;
    t.equal(s.held, rule, `held is ${rule} by the rule`);
    const cols = lines[i].trim().split(/\s+/);
    t.same(
      [Number(cols[1]), Number(cols[3]), Number(cols[4]), Number(cols[7]), Number(cols[8])],
      [s.offered, s.ok, s.server.ok, s.p99Ms, s.errors],
      'the line shows the step',
    );
  });
  const held = result.steps.filter((s) => s.held).map((s) => s.offered);
  t.equal(
    result.highestHeld,
    held.length ? Math.max(...held) : null,
    `the highest rate held is the largest held step (${result.highestHeld})`,
  );
  t.end();
});

test('text requests for a byte-level tokenizer: 300-byte queries, 20-byte items, every query its own', async (t) => {
  // The random models' tokenizer (scripts/bench/lib/random-model.js, what the GPU run serves) has one token per
  // byte, so the bytes of the text are an independent count of its tokens.
  const { PRESETS, writeRandomModel } = require('../scripts/bench/lib/random-model');
  const { textWorkload } = require('../scripts/bench/lib/text-requests');
  const { WORKLOADS } = require('../scripts/bench/lib/workloads');
  const { loadModelInfo } = require(path.join(root, 'dist', 'model'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-text-'));
  await writeRandomModel(dir, PRESETS.qwen3_tiny, { seed: 1 });
  const texts = textWorkload(loadModelInfo(dir).tokenizer, WORKLOADS.pr, { itemPool: 32, queryPool: 8 });
  fs.rmSync(dir, { recursive: true, force: true });
  const bodies = Array.from({ length: 400 }, (_, i) => JSON.parse(texts.body(i)));
  const bytes = (s) => Buffer.byteLength(s, 'utf8');
  t.ok(
    bodies.every((b) => bytes(b.query) === 300),
    'every query is 300 bytes: 300 tokens',
  );
  t.ok(
    bodies.every((b) => b.items.length === 10 && b.items.every((it) => bytes(it) === 20)),
    'ten items of 20 bytes each',
  );
  t.equal(new Set(bodies.map((b) => b.query)).size, bodies.length, '400 requests, 400 different queries');
  t.equal(texts.tokensOf(7), 500, 'tokensOf counts 300 + 10 x 20');
  t.end();
});
