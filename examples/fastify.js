// Mount pjrt-score's routes in a fastify app, beside a route of the app's
// own, logging through the app's pino logger and counting into the app's
// prom-client registry (one /metrics shows both).
// Run: node examples/fastify.js   (PORT=3000 by default; Ctrl-C drains and exits)
//   curl -s localhost:3000/v1/score -H 'content-type: application/json' \
//     -d '{"query":"Is this a fruit? Answer yes or no:","items":[" apple"," car"],"label_token_ids":[9805,787]}'
const Fastify = require('fastify');
const client = require('prom-client');
const { createScoringService } = require('pjrt-score/server');

/**
 * Starts the app; resolves once it listens (the scoring routes answer 503
 * until `scoring.ready`). `logger` is fastify's logger option (its pino);
 * `fastify`, more fastify options; `service`, createScoringService's options.
 */
async function start({ port = 3000, host = '127.0.0.1', logger = true, fastify = {}, service = {} } = {}) {
  const registry = new client.Registry();
  const hellos = new client.Counter({ name: 'app_hello_total', help: 'GET /hello requests.', registers: [registry] });
  const app = Fastify({ logger, ...fastify });
  const scoring = createScoringService({ ...service, logger: app.log, registry });

  app.get('/hello', async () => {
    hellos.inc();
    return { hello: 'from the host app' };
  });
  app.get('/metrics', async (request, reply) => reply.type(registry.contentType).send(await registry.metrics()));
  // POST /v1/score, /v1/rerank, /rerank, and GET /health; `{ prefix: '/api' }` would move them.
  await app.register(scoring.fastifyPlugin({ health: true }));
  // app.close() stops the listener and waits for requests in flight; then the Scorer is disposed.
  app.addHook('onClose', async () => scoring.close());

  await app.listen({ port, host });
  const { port: bound } = app.server.address();
  return { app, scoring, registry, url: `http://${host}:${bound}`, close: () => app.close() };
}

if (require.main === module) {
  start({ port: Number(process.env.PORT || 3000) }).then(({ app, scoring, url, close }) => {
    app.log.info({ event: 'app_listening', url });
    scoring.ready.catch((error) => app.log.error({ error }, 'the model failed to load'));
    for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => close().then(() => process.exit(0)));
  });
}

module.exports = { start };
