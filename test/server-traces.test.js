'use strict';
// OpenTelemetry traces against a real OTLP/HTTP receiver started here (a
// node:http endpoint that decodes the JSON export requests): one server span
// per request, the caller's traceparent honoured (same trace id, its span as
// parent), child spans for the body, tokenization, the queue wait, each
// device pass and the reply, nested in time inside the request's span. The
// number of device-pass spans is checked against the Scorer's own
// devicePasses counter.
const test = require('tape');
const http = require('node:http');
const { startInProcessServer } = require('./helpers/in-process-server');

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const received = [];
let receiver;
let server;
let scorer;

const attr = (span, key) => {
  const a = (span.attributes || []).find((x) => x.key === key);
  if (!a) return undefined;
  const v = a.value;
  return v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.doubleValue);
};
const nanos = (x) => BigInt(x);

test('setup: an OTLP/HTTP receiver and the service sending traces to it', async (t) => {
  receiver = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && /json/.test(req.headers['content-type'] || '')) {
        received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } else received.push({ unexpected: `${req.method} ${req.url} ${req.headers['content-type']}` });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  server = await startInProcessServer({
    onScorer: (s) => (scorer = s),
    serverOptions: { otlpEndpoint: `http://127.0.0.1:${receiver.address().port}`, algorithm: 'prefix' },
  }); // prefix: a prefill pass, then the items
  t.pass(server.url);
});

let passesForScore = 0;
test('requests with and without traceparent, then close() flushes the spans', async (t) => {
  const before = scorer.stats().devicePasses;
  const scored = await fetch(`${server.url}/v1/score`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    body: JSON.stringify({
      query: 'Is this a fruit?',
      items: [' apple', ' car', ' pear'],
      label_token_ids: [9805, 787],
    }),
  });
  t.equal(scored.status, 200, 'scored');
  passesForScore = scorer.stats().devicePasses - before;
  t.ok(passesForScore >= 2, `${passesForScore} device passes by the Scorer's counter`);
  const health = await fetch(`${server.url}/health`);
  t.equal(health.status, 200, '/health');
  await server.close();
  t.ok(received.length > 0, `${received.length} export request(s) received`);
});

test('the span tree', (t) => {
  t.deepEqual(
    received.filter((r) => r.unexpected).map((r) => r.unexpected),
    [],
    'only JSON posts to /v1/traces',
  );
  const spans = received.flatMap((r) =>
    (r.resourceSpans || []).flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)),
  );
  const service = received
    .flatMap((r) => r.resourceSpans || [])
    .map((rs) => (rs.resource.attributes.find((a) => a.key === 'service.name') || {}).value?.stringValue);
  t.ok(
    service.every((n) => n === 'pjrt-score'),
    'service.name pjrt-score',
  );
  const root = spans.find((s) => s.name === 'POST /v1/score');
  t.ok(root, 'a span POST /v1/score');
  if (!root) return t.end();
  t.equal(root.traceId, TRACE_ID, "the caller's trace id (traceparent)");
  t.equal(root.parentSpanId, PARENT_ID, "the caller's span as parent");
  t.equal(root.kind, 2, 'kind SERVER');
  t.equal(attr(root, 'http.response.status_code'), 200, 'status attribute');
  t.equal(attr(root, 'pjrt_score.items'), 3, 'items attribute');
  const children = spans.filter((s) => s.parentSpanId === root.spanId);
  const names = children.map((s) => s.name);
  for (const name of ['read body', 'tokenize', 'queue wait', 'reply'])
    t.equal(names.filter((n) => n === name).length, 1, `one ${name} span`);
  const passes = children.filter((s) => s.name === 'device pass');
  t.equal(passes.length, passesForScore, `one device pass span per pass (${passesForScore})`);
  t.deepEqual(
    passes.map((s) => attr(s, 'pjrt_score.pass')),
    passes.map((_, i) => i),
    'passes numbered 0..n-1',
  );
  t.ok(
    children.every((s) => s.traceId === TRACE_ID),
    'children in the same trace',
  );
  t.ok(
    children.every(
      (s) =>
        nanos(s.startTimeUnixNano) >= nanos(root.startTimeUnixNano) &&
        nanos(s.endTimeUnixNano) <= nanos(root.endTimeUnixNano) &&
        nanos(s.startTimeUnixNano) <= nanos(s.endTimeUnixNano),
    ),
    'each child lies inside the request span',
  );
  const at = (name) => children.find((s) => s.name === name);
  t.ok(
    nanos(at('tokenize').endTimeUnixNano) <= nanos(at('queue wait').startTimeUnixNano) + 1000n,
    'tokenize before the queue wait',
  );
  t.ok(
    passes.every((p) => nanos(p.startTimeUnixNano) >= nanos(at('queue wait').endTimeUnixNano) - 1000000n),
    'passes after the queue wait',
  );
  t.ok(
    passes.every((p) => nanos(p.endTimeUnixNano) <= nanos(at('reply').startTimeUnixNano) + 1000n),
    'the reply after the passes',
  );
  const health = spans.find((s) => s.name === 'GET /health');
  t.ok(
    health && health.traceId !== TRACE_ID && !health.parentSpanId,
    'a request without traceparent starts its own trace',
  );
  t.end();
});

test('teardown', async (t) => {
  await new Promise((resolve) => receiver.close(resolve));
  t.pass('closed');
});
