'use strict';
// Hostile requests over real HTTP to the service with API keys on
// (startServer, the real Scorer of the default model): the first bytes pick
// the Authorization header (none, the right key, a wrong key of the same or
// another length, malformed ones, bytes of the input), the route and the
// method; the rest is the body. Findings: any 5xx; a request without the
// right key answered other than 401 (GET /health aside); a request without
// the right key that reached the Scorer (every entry point is counted).
const http = require('node:http');
const path = require('node:path');
const { DIST, scriptsUnder } = require('./common');

const { startServer } = require(path.join(DIST, 'server', 'hosts', 'standalone-server'));
const { silentLogger } = require(path.join(DIST, 'server', 'telemetry', 'log'));
const { Scorer } = require(path.join(DIST, 'scoring', 'scorer'));

const KEY = 'pk-fuzz-0123456789abcdef01234567';
const PATHS = [
  '/v1/score',
  '/v1/rerank',
  '/v2/rerank',
  '/rerank',
  '/health',
  '/v1/models',
  '/v1/models/x',
  '/info',
  '/metrics',
  '/openapi.json',
  '/nope',
];
const METHODS = ['POST', 'POST', 'POST', 'GET', 'PUT', 'OPTIONS', 'HEAD', 'DELETE'];
const ENTRY_POINTS = ['tokenize', 'normalizeWith', 'scoreNormalized'];

let server = null;
let scorerCalls = 0;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

async function setup() {
  server = await startServer({
    port: 0,
    host: '127.0.0.1',
    warmup: [],
    timeoutMs: 60_000,
    apiKey: [KEY],
    logger: silentLogger(),
    warmupProgress: false,
    loadBackend: async (options) => {
      const scorer = await Scorer.load(options);
      for (const name of ENTRY_POINTS) {
        const original = scorer[name].bind(scorer);
        scorer[name] = (...args) => {
          scorerCalls++;
          return original(...args);
        };
      }
      return scorer;
    },
  });
  await server.ready;
}

/** Visible ASCII only: what a client can put in a header value. */
const printable = (bytes) => Buffer.from(bytes.filter((b) => b >= 0x20 && b <= 0x7e)).toString('latin1');

/** [authorization header or undefined, whether it is the right key]. */
function authorization(mode, tail) {
  switch (mode % 9) {
    case 0:
      return [undefined, false];
    case 1:
      return [`Bearer ${KEY}`, true];
    case 2:
      return [`Bearer ${KEY.slice(0, -1)}8`, false];
    case 3:
      return [`Bearer ${KEY.slice(0, 8)}`, false];
    case 4:
      return [`Basic ${Buffer.from(`u:${KEY}`).toString('base64')}`, false];
    case 5:
      return [`Bearer ${printable(tail.subarray(0, 40))}`, false];
    case 6:
      return [printable(tail.subarray(0, 60)), false];
    case 7:
      return [`bearer   ${KEY}  `, true];
    default:
      return [`Bearer ${KEY}${printable(tail.subarray(0, 4)) || 'x'}`, false];
  }
}

function send(method, urlPath, auth, body) {
  return new Promise((resolve, reject) => {
    // Content-Length always: node's client sends DELETE and OPTIONS bodies without framing otherwise.
    const headers = { 'content-type': 'application/json', 'content-length': body ? body.length : 0 };
    if (auth !== undefined) headers.authorization = auth;
    const req = http.request({ host: '127.0.0.1', port: server.port, method, path: urlPath, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function seeds() {
  const bodies = [
    [0, { query: 'Is this relevant?', items: ['yes', 'no'], label_token_ids: [9891, 2152] }],
    [1, { query: 'What is a fruit?', documents: ['apple', 'car'], top_n: 1 }],
    [2, { model: 'm', query: 'q', documents: ['a', 'b'] }],
    [3, { query: 'q', texts: ['a', 'b'], raw_scores: true }],
  ];
  const out = [];
  for (const mode of [0, 1, 2, 3, 4, 7]) {
    for (const [route, body] of bodies)
      out.push(Buffer.concat([Buffer.from([mode, route, 0]), Buffer.from(JSON.stringify(body))]));
  }
  for (let route = 4; route < PATHS.length; route++) out.push(Buffer.from([route % 2, route, 3]));
  return out;
}

async function run(data) {
  const [auth, right] = authorization(data[0] ?? 0, data.subarray(3));
  const urlPath = PATHS[(data[1] ?? 0) % PATHS.length];
  const method = METHODS[(data[2] ?? 0) % METHODS.length];
  const body = data.subarray(3);
  const before = scorerCalls;
  const status = await send(method, urlPath, auth, method === 'GET' || method === 'HEAD' ? null : body);
  if (status >= 500) throw new Error(`HTTP ${status} for ${method} ${urlPath}`);
  if (!right) {
    if (scorerCalls !== before) throw new Error(`a request without the key reached the Scorer: ${method} ${urlPath}`);
    if (urlPath !== '/health' && status !== 401)
      throw new Error(`a request without the key got ${status}: ${method} ${urlPath}`);
  }
}

module.exports = {
  name: 'http',
  smokeExecs: 400,
  maxLength: 1 << 12,
  scripts: scriptsUnder('dist/server/'),
  setup,
  seeds,
  run,
  // Every failure of run() is a finding.
  expected: () => false,
  dictionary: [
    '"query"',
    '"items"',
    '"documents"',
    '"texts"',
    '"label_token_ids"',
    '"top_n"',
    'Bearer ',
    'true',
    'null',
    '[]',
    '{}',
    '"\\ud800"',
  ],
};
