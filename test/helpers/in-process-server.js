'use strict';
// Starts the service in this process (startServer) on a free local port with
// the real default model: no warmup, a silent logger, and a 600 s request
// timeout so that a slow shared CI machine cannot turn a test into a deadline
// test. One server per test file; close it with `await server.close()`.
// `serverOptions` are added to startServer's (API keys, CORS).
const { Scorer } = require('../../dist/scoring/scorer');
const { startServer } = require('../../dist/server/hosts/standalone-server');
const { silentLogger } = require('../../dist/server/telemetry/log');

/**
 * Resolves the server once it is ready. `scorerOptions` are added to the
 * options Scorer.load gets; `onScorer(scorer)` sees the Scorer the server
 * loads (to keep it, or to instrument it) and returns the one to serve.
 */
async function startInProcessServer({ scorerOptions = {}, onScorer = (scorer) => scorer, serverOptions = {} } = {}) {
  const server = await startServer({
    port: 0,
    host: '127.0.0.1',
    warmup: [],
    timeoutMs: 600_000,
    logger: silentLogger(),
    warmupProgress: false,
    loadBackend: async (options) => onScorer(await Scorer.load({ ...options, ...scorerOptions })),
    ...serverOptions,
  });
  await server.ready;
  return server;
}

module.exports = { startInProcessServer };
