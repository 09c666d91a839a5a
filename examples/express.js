// Mount pjrt-score's routes in an express app, beside a route of the app's
// own, logging through the app's pino logger and counting into the app's
// prom-client registry (one /metrics shows both).
// Run: node examples/express.js   (PORT=3000 by default; Ctrl-C drains and exits)
//   curl -s localhost:3000/v1/score -H 'content-type: application/json' \
//     -d '{"query":"Is this a fruit? Answer yes or no:","items":[" apple"," car"],"label_token_ids":[9805,787]}'
const express = require('express');
const pino = require('pino');
const client = require('prom-client');
const { createScoringService } = require('pjrt-score/server');

/**
 * Starts the app; resolves once it listens (the scoring routes answer 503
 * until `scoring.ready`). `service` is passed to createScoringService;
 * `registry` is the app's prom-client registry (ours join it).
 */
async function start({
  port = 3000,
  host = '127.0.0.1',
  logger = pino(),
  registry = new client.Registry(),
  service = {},
} = {}) {
  const hellos = new client.Counter({ name: 'app_hello_total', help: 'GET /hello requests.', registers: [registry] });
  const scoring = createScoringService({ ...service, logger, registry });
  const app = express();

  // Mounted before any body parser, so the routes read the body with their own limits.
  app.use(scoring.expressRouter({ health: true }));
  app.use(express.json());
  app.get('/hello', (req, res) => {
    hellos.inc();
    res.json({ hello: 'from the host app' });
  });
  app.get('/metrics', async (req, res) => {
    res.set('content-type', registry.contentType).send(await registry.metrics());
  });

  const server = await new Promise((resolve, reject) => {
    const s = app.listen(port, host, (error) => (error ? reject(error) : resolve(s)));
  });
  const close = async () => {
    // Stop accepting, let requests in flight finish, then dispose the Scorer.
    const stopped = new Promise((resolve) => server.close(resolve));
    server.closeIdleConnections();
    await scoring.close();
    server.closeAllConnections();
    await stopped;
  };
  return { app, server, scoring, registry, url: `http://${host}:${server.address().port}`, close };
}

if (require.main === module) {
  start({ port: Number(process.env.PORT || 3000) }).then(({ scoring, url, close }) => {
    scoring.logger.info({ event: 'app_listening', url });
    scoring.ready.catch((error) => scoring.logger.error({ error: error.message }, 'the model failed to load'));
    for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => close().then(() => process.exit(0)));
  });
}

module.exports = { start };
