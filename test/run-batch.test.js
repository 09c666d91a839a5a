'use strict';
// `pjrt-score run-batch`: every line's answer is what the route answers for
// its body (status and body text, scores to the bit: a real `pjrt-score
// serve` on 127.0.0.1 with the same precision, batching and plans gets the
// same bodies); it resumes after a kill with each custom_id once and nothing
// torn; --shard over 3 processes covers every line once; Scorer.scoreMany
// yields in input order within its window.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { BIN, startService } = require('./helpers/service');
const { Scorer } = require('..');

// Both sides: plans of the shape alone (no prefix cache, so no plan depends on
// which request came first), each request on its own plan, true f32 dots.
const SAME_PLAN = ['--prefix-cache-bytes', '0', '--batching', 'invariant', '--precision', 'highest'];

const FRUIT = 'Is this a fruit? Answer yes or no:';
const VEHICLE = 'Is this a vehicle? Answer yes or no:';
const DOCS = [
  'Paris is the capital and largest city of France.',
  'Bananas are rich in potassium.',
  'Berlin is the capital of Germany.',
];
const QUESTION = 'What is the capital of France?';
const LABELS = [9805, 787];

const line = (id, url, body, method = 'POST') => JSON.stringify({ custom_id: id, method, url, body });
const INPUT = [
  line('score-1', '/v1/score', {
    query: FRUIT,
    items: [' apple', ' car'],
    label_token_ids: LABELS,
    apply_softmax: true,
  }),
  line('score-2', '/v1/score', { query: FRUIT, items: [' banana'], label_token_ids: LABELS }),
  line('score-3', '/v1/score', {
    query: VEHICLE,
    items: [' apple', ' car', ' bus'],
    label_token_ids: LABELS,
    apply_softmax: true,
  }),
  '',
  line('score-ids', '/v1/score', { query: [1, 4093, 314, 260], items: [[2911], [1340, 28]], label_token_ids: LABELS }),
  line('score-item-first', '/v1/score', {
    query: ' is a fruit?',
    items: ['Apple', 'Car'],
    label_token_ids: LABELS,
    item_first: true,
  }),
  line('score-truncate', '/v1/score', {
    query: FRUIT,
    items: [' apple pie with cream and sugar on top'],
    label_token_ids: LABELS,
    truncate_prompt_tokens: 14,
  }),
  '   ',
  line('cohere-v1', '/v1/rerank', { query: QUESTION, documents: DOCS, top_n: 2, return_documents: true }),
  line('jina', '/v1/rerank', { model: 'm', query: QUESTION, documents: DOCS.map((text) => ({ text })) }),
  line('tei', '/rerank', { query: QUESTION, texts: DOCS, raw_scores: true, return_text: true }),
  line('sglang', '/v1/rerank', { query: QUESTION, documents: DOCS, rid: 'r1' }),
  line('cohere-v2', '/v2/rerank', { model: 'm', query: QUESTION, documents: DOCS, max_tokens_per_doc: 6 }),
  line('vllm', '/rerank', { query: QUESTION, documents: DOCS.slice(0, 2) }),
  '{"custom_id": "torn", "method": "POST", "url": "/v1/sco',
  JSON.stringify({ custom_id: 7, method: 'POST', url: '/v1/score', body: {} }),
  line('bad-url', '/v1/nope', { query: FRUIT, items: [' apple'], label_token_ids: LABELS }),
  line('bad-method', '/v1/score', { query: FRUIT, items: [' apple'], label_token_ids: LABELS }, 'GET'),
  line('bad-label', '/v1/score', { query: FRUIT, items: [' apple'], label_token_ids: [10 ** 8] }),
  line('no-body', '/v1/score', undefined),
  line('tei-empty', '/rerank', { query: QUESTION, texts: [] }),
  line('bad-items', '/v2/rerank', { query: QUESTION, documents: 'not a list' }),
  line('score-4', '/v1/score', {
    query: FRUIT,
    items: [' cherry', ' truck'],
    label_token_ids: LABELS,
    apply_softmax: true,
  }),
];
const INPUT_TEXT = `${INPUT.join('\n')}\n`;
const REQUEST_LINES = INPUT.map((text, i) => ({ text, number: i + 1 })).filter((l) => l.text.trim() !== '');

let tmp;
let reference; // the output of one whole run: its lines, in order

function runBatch(args, { input } = {}) {
  const child = spawn(process.execPath, [BIN, 'run-batch', ...args], {
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  const out = [];
  const err = [];
  child.stdout.on('data', (c) => out.push(c));
  child.stderr.on('data', (c) => err.push(c));
  const done = new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });
  if (input !== undefined) child.stdin.on('error', () => undefined);
  return { child, done };
}

const outputLines = (file) =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
const summaryOf = (stderr) => JSON.parse(stderr.trim().split('\n').pop());

test('setup', (t) => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-run-batch-'));
  fs.writeFileSync(path.join(tmp, 'in.jsonl'), INPUT_TEXT);
  t.end();
});

test('every output line is what the route answers for that body', async (t) => {
  const outFile = path.join(tmp, 'out.jsonl');
  const [run, service] = await Promise.all([
    runBatch(['-i', path.join(tmp, 'in.jsonl'), '-o', outFile, ...SAME_PLAN]).done,
    startService([...SAME_PLAN, '--warmup', 'none']),
  ]);
  try {
    const lines = outputLines(outFile);
    t.equal(
      lines.length,
      REQUEST_LINES.length,
      `one output line per request line (${REQUEST_LINES.length}; blank lines skipped)`,
    );
    let failed = 0;
    for (let i = 0; i < lines.length; i++) {
      const given = REQUEST_LINES[i];
      const out = JSON.parse(lines[i]);
      const id = `batch-line-${given.number}`;
      t.equal(out.id, id, `line ${given.number}: id names the input line`);
      let request = null;
      try {
        request = JSON.parse(given.text);
      } catch {
        request = null;
      }
      if (out.response.status_code !== 200) failed++;
      if (request === null) {
        // Not JSON: the route's answer to the same text as a body.
        const answer = await service.request({
          method: 'POST',
          path: '/v1/score',
          headers: { 'content-type': 'application/json', 'x-request-id': id },
          body: given.text,
        });
        t.equal(out.custom_id, null, `line ${given.number} (not JSON): custom_id null`);
        t.equal(
          out.response.status_code,
          answer.status,
          `line ${given.number} (not JSON): the route's status ${answer.status}`,
        );
        t.ok(
          lines[i].includes(`"body":${answer.text}},`),
          `line ${given.number} (not JSON): the route's body, as text`,
        );
        continue;
      }
      if (typeof request.custom_id !== 'string') {
        t.equal(out.response.status_code, 400, `line ${given.number} (custom_id not a string): 400`);
        t.equal(out.response.body.param, 'custom_id', 'naming custom_id');
        t.equal(out.error.param, 'custom_id', 'and in error');
        continue;
      }
      const answer = await service.request({
        method: request.method,
        path: request.url,
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      });
      t.equal(out.custom_id, request.custom_id, `${request.custom_id}: custom_id`);
      t.equal(out.response.status_code, answer.status, `${request.custom_id}: the route's status ${answer.status}`);
      t.equal(out.response.request_id, answer.headers['x-request-id'], `${request.custom_id}: request_id`);
      // The route's body text inside the line, byte for byte: every score the same double, written the same way.
      t.ok(lines[i].includes(`"body":${answer.text}},`), `${request.custom_id}: the route's body, as text`);
      t.deepEqual(out.response.body, answer.json, `${request.custom_id}: the route's body`);
      if (answer.status === 200) t.equal(out.error, null, `${request.custom_id}: error null`);
      else
        t.deepEqual(
          out.error,
          { message: answer.json.message, type: answer.json.type, param: answer.json.param, code: answer.status },
          `${request.custom_id}: error has the route's fields`,
        );
    }
    t.ok(failed >= 8, `the bad lines failed (${failed})`);
    t.equal(run.code, failed, `exit status ${run.code} = lines failed`);
    const summary = summaryOf(run.stderr);
    t.equal(summary.event, 'batch_done', 'the last stderr line is the summary');
    t.equal(summary.failed, failed, 'which counts the failures');
    t.equal(summary.lines, lines.length, 'and the lines');
    reference = lines;
  } finally {
    await service.stop();
  }
});

/** Resolves once `file` holds at least `n` output lines (looked at every 50 ms: a condition, not a timer's verdict). */
function linesWritten(file, n) {
  return new Promise((resolve) => {
    const watcher = setInterval(() => {
      if (fs.existsSync(file) && outputLines(file).length >= n) {
        clearInterval(watcher);
        resolve();
      }
    }, 50);
  });
}

test('killed partway and rerun: each custom_id once, nothing torn, the same lines', async (t) => {
  const outFile = path.join(tmp, 'resumed.jsonl');
  // The input comes through a pipe the test holds open, so the kill lands mid-job whatever the machine's speed.
  const first = runBatch(['-i', '-', '-o', outFile, '--concurrency', '2', ...SAME_PLAN], { input: true });
  first.child.stdin.write(INPUT.slice(0, 12).join('\n'));
  await linesWritten(outFile, 4);
  first.child.kill('SIGKILL');
  const killed = await first.done;
  t.equal(killed.signal, 'SIGKILL', 'the first run was killed');
  const before = outputLines(outFile);
  t.ok(
    before.length >= 4 && before.length < REQUEST_LINES.length,
    `it had written ${before.length} of ${REQUEST_LINES.length} lines`,
  );
  t.deepEqual(before, reference.slice(0, before.length), 'each a whole line, those of the whole run');
  // A crash in the middle of a write: half a line at the end.
  fs.appendFileSync(outFile, reference[before.length].slice(0, 40));
  const rerun = await runBatch(['-i', path.join(tmp, 'in.jsonl'), '-o', outFile, ...SAME_PLAN]).done;
  const after = outputLines(outFile);
  const ids = after.map((l) => JSON.parse(l).custom_id);
  const named = ids.filter((id) => id !== null);
  t.equal(new Set(named).size, named.length, 'each custom_id once');
  t.deepEqual(after, reference, 'the whole output, line for line the uninterrupted run');
  t.ok(fs.readFileSync(outFile, 'utf8').endsWith('\n'), 'ends with a whole line');
  const summary = summaryOf(rerun.stderr);
  t.equal(summary.skipped, before.length, `the rerun skipped the ${before.length} lines written`);
  t.equal(summary.lines, REQUEST_LINES.length - before.length, 'and answered the rest');
  t.equal(
    rerun.code,
    reference.filter((l) => JSON.parse(l).response.status_code !== 200).length,
    'its exit status counts every failed line, those before it too',
  );
});

test('SIGTERM: the lines in flight are written whole, then exit 100; a rerun finishes', async (t) => {
  const outFile = path.join(tmp, 'stopped.jsonl');
  const first = runBatch(['-i', '-', '-o', outFile, '--concurrency', '2', ...SAME_PLAN], { input: true });
  first.child.stdin.write(INPUT.slice(0, 12).join('\n'));
  await linesWritten(outFile, 2);
  first.child.kill('SIGTERM');
  const stopped = await first.done;
  t.equal(stopped.code, 100, 'exit 100: the job did not finish');
  t.match(stopped.stderr, /stopped by SIGTERM after \d+ lines/, 'saying it was stopped, and after how many lines');
  const before = outputLines(outFile);
  t.ok(fs.readFileSync(outFile, 'utf8').endsWith('\n'), 'the output ends with a whole line');
  t.deepEqual(before, reference.slice(0, before.length), `its ${before.length} lines are those of the whole run`);
  const rerun = await runBatch(['-i', path.join(tmp, 'in.jsonl'), '-o', outFile, ...SAME_PLAN]).done;
  t.deepEqual(outputLines(outFile), reference, 'the rerun completes it, line for line the whole run');
  t.equal(summaryOf(rerun.stderr).skipped, before.length, 'skipping the lines written before');
});

test('SIGTERM while the input pipe keeps it waiting: it stops at once with every line written', async (t) => {
  const outFile = path.join(tmp, 'waiting.jsonl');
  const run = runBatch(['-i', '-', '-o', outFile, ...SAME_PLAN], { input: true });
  run.child.stdin.write(`${INPUT.slice(0, 3).join('\n')}\n`); // three whole lines, and the pipe stays open
  await linesWritten(outFile, 3);
  run.child.kill('SIGTERM');
  const stopped = await run.done;
  t.equal(stopped.code, 100, 'exit 100');
  t.deepEqual(outputLines(outFile), reference.slice(0, 3), 'the three lines, whole');
});

test('an output from another input is refused, untouched', async (t) => {
  const outFile = path.join(tmp, 'resumed.jsonl');
  const other = path.join(tmp, 'other.jsonl');
  fs.writeFileSync(other, `${[...INPUT].reverse().join('\n')}\n`);
  const before = fs.readFileSync(outFile);
  const run = await runBatch(['-i', other, '-o', outFile, ...SAME_PLAN]).done;
  t.equal(run.code, 100, 'exit 100: the job could not run');
  t.match(run.stderr, /another input/, 'saying the output came from another input');
  t.ok(fs.readFileSync(outFile).equals(before), 'the output is unchanged');
});

test('--shard i/3 over 3 processes covers every line once', async (t) => {
  const files = [0, 1, 2].map((i) => path.join(tmp, `shard-${i}.jsonl`));
  const runs = await Promise.all(
    files.map(
      (file, i) => runBatch(['-i', path.join(tmp, 'in.jsonl'), '-o', file, '--shard', `${i}/3`, ...SAME_PLAN]).done,
    ),
  );
  const all = files.flatMap((file) => outputLines(file));
  t.equal(all.length, reference.length, `${all.length} lines over 3 shards`);
  t.deepEqual([...all].sort(), [...reference].sort(), 'the lines of the whole run, each once');
  files.forEach((file, i) => {
    const numbers = outputLines(file).map((l) => Number(JSON.parse(l).id.replace('batch-line-', '')));
    t.ok(
      numbers.every((n) => (n - 1) % 3 === i),
      `shard ${i}/3 took lines k with (k - 1) mod 3 = ${i}`,
    );
  });
  const failedBy = files.map(
    (file) => outputLines(file).filter((l) => JSON.parse(l).response.status_code !== 200).length,
  );
  t.deepEqual(
    runs.map((r) => r.code),
    failedBy,
    "each exit status counts its shard's failures",
  );
});

test('bad flags exit 101 with a message', async (t) => {
  for (const args of [
    ['-o', 'x'],
    ['-i', 'x', '--shard', '3/3'],
    ['-i', 'x', '--concurrency', '0'],
    ['-i', 'x', '--precision', 'f17'],
  ]) {
    const run = await runBatch(args).done;
    t.equal(run.code, 101, `${args.join(' ')}: exit 101`);
    t.match(run.stderr, /run-batch --help/, 'pointing at --help');
  }
});

test('Scorer.scoreMany yields in input order within its window, each as score() alone', async (t) => {
  const scorer = await Scorer.load({ prefixCacheBytes: 0 });
  try {
    const requests = [
      { query: FRUIT, items: [' apple', ' car'], labelTokenIds: LABELS },
      { query: VEHICLE, items: [' bus'], labelTokenIds: LABELS, applySoftmax: true },
      { query: FRUIT, items: [' pear'], labelTokenIds: [10 ** 8] },
      { query: FRUIT, items: [' banana', ' plane', ' kiwi'], labelTokenIds: LABELS },
      { query: VEHICLE, items: [], labelTokenIds: LABELS },
    ];
    const concurrency = 2;
    let pulled = 0;
    function* source() {
      for (const r of requests) {
        pulled++;
        yield r;
      }
    }
    const outcomes = [];
    for await (const outcome of scorer.scoreMany(source(), { concurrency })) {
      t.ok(
        pulled <= outcomes.length + concurrency,
        `outcome ${outcomes.length}: ${pulled} requests read, at most ${concurrency} ahead`,
      );
      outcomes.push(outcome);
    }
    t.equal(outcomes.length, requests.length, 'one outcome per request');
    for (let i = 0; i < requests.length; i++) {
      if (i === 2) {
        t.equal(outcomes[i].ok, false, 'the bad request fails on its own');
        t.equal(outcomes[i].error.name, 'ScoreInputError', 'with its ScoreInputError');
        continue;
      }
      const alone = await scorer.score(requests[i]);
      t.deepEqual(outcomes[i].result.scores, alone.scores, `request ${i}: the scores of score() alone, in its place`);
    }
    t.throws(() => scorer.scoreMany([], { concurrency: 10 ** 6 }), /concurrency/, 'a window over the queue is refused');
  } finally {
    scorer.dispose();
  }
});

test('teardown', (t) => {
  fs.rmSync(tmp, { recursive: true, force: true });
  t.end();
});
