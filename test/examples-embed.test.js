'use strict';
// examples/fastify.js and examples/express.js run as written: each starts,
// loads the default model, answers POST /v1/score beside its own GET /hello,
// shows its own metric and ours on its /metrics, logs our events through its
// pino logger on stdout, and drains and exits 0 on SIGTERM.
const test = require('tape');
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const { request } = require('./helpers/service');

for (const name of ['fastify', 'express']) {
  test(`examples/${name}.js`, async (t) => {
    const child = spawn(process.execPath, [path.join(__dirname, '..', 'examples', `${name}.js`)], {
      env: { ...process.env, PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines = [];
    const waiters = [];
    readline.createInterface({ input: child.stdout }).on('line', (text) => {
      let entry;
      try {
        entry = JSON.parse(text);
      } catch {
        return;
      }
      lines.push(entry);
      for (const w of waiters.splice(0)) if (!w(entry)) waiters.push(w);
    });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const waitFor = (event) =>
      new Promise((resolve, reject) => {
        const found = lines.find((e) => e.event === event);
        if (found) return resolve(found);
        const timer = setTimeout(() => reject(new Error(`no ${event} line; stderr: ${stderr.slice(-1000)}`)), 300_000);
        waiters.push((e) => e.event === event && (clearTimeout(timer), resolve(e), true));
      });
    try {
      const { url } = await waitFor('app_listening');
      const port = Number(new URL(url).port);
      await waitFor('ready');
      const body = JSON.stringify({
        query: 'Is this a fruit? Answer yes or no:',
        items: [' apple', ' car'],
        label_token_ids: [9805, 787],
        apply_softmax: true,
      });
      const scored = await request({
        port,
        method: 'POST',
        path: '/v1/score',
        headers: { 'content-type': 'application/json', 'x-request-id': `example-${name}` },
        body,
      });
      t.equal(scored.status, 200, 'POST /v1/score: 200');
      const rows = scored.json.scores;
      t.ok(rows.length === 2 && rows.every((r) => Math.abs(r[0] + r[1] - 1) < 1e-9), 'two rows of softmaxed yes/no');
      t.ok(
        rows[0][0] > rows[1][0],
        `an apple is a fruit more than a car (${rows[0][0].toFixed(3)} > ${rows[1][0].toFixed(3)})`,
      );
      t.equal((await request({ port, path: '/hello' })).status, 200, "the app's own route");
      const metrics = (await request({ port, path: '/metrics' })).text;
      t.match(metrics, /^app_hello_total 1$/m, "the app's metric");
      t.match(metrics, /^pjrt_score_requests_total\{status="200",algorithm="[a-z]+"\} 1$/m, 'ours, in the same scrape');
      const line = lines.find((e) => e.event === 'request' && e.id === `example-${name}`);
      t.deepEqual(line && [line.status, line.items], [200, 2], "our request line, in the app's log");
    } finally {
      child.kill('SIGTERM');
    }
    t.deepEqual(await exited, { code: 0, signal: null }, 'SIGTERM: exit 0');
    t.ok(
      lines.some((e) => e.event === 'closed'),
      'drained and closed',
    );
  });
}
