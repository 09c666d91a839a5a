'use strict';
// The service's routes mounted in examples/fastify.js, for npm run
// bench:service --servers fastify: the same settings as the bench's
// `pjrt-score serve` (default warmup, queue 256), fastify's pino on stdout
// without fastify's own two lines per request (ours stays), and a
// `listening` line as the standalone service prints.
const { LogController } = require('fastify');
const { start } = require('../../../examples/fastify');

start({
  port: 0,
  logger: { level: 'info' },
  fastify: { logController: new LogController({ disableRequestLogging: true }) },
  service: { queueSize: 256 },
}).then(({ url, scoring, close }) => {
  console.log(JSON.stringify({ event: 'listening', port: Number(new URL(url).port) }));
  scoring.ready.catch((error) => {
    console.error(error);
    process.exit(1);
  });
  process.once('SIGTERM', () => close().then(() => process.exit(0)));
});
