'use strict';
// The three servers of test/service-embed.test.js, each in this process on a
// free 127.0.0.1 port, all over ONE real Scorer (the default model, loaded
// once): the standalone service (startServer), the fastify example and the
// express example (examples/*.js), each mounting our routes beside a route
// of its own. Each server gets its own backend view of the Scorer with a
// gate: while the gate is shut, Scorer calls wait before they start (the
// device "busy"), so queue-full, deadline and drain cases are deterministic.
const { Writable } = require('node:stream');
const pino = require('pino');

/** A ScoringBackend over `scorer` whose calls wait while the gate is shut; dispose() is counted, not done (the Scorer is shared). */
function gatedBackend(scorer) {
  let open = true;
  let waiters = [];
  let heldWaiters = [];
  const gate = {
    held: 0,
    disposed: 0,
    shut() {
      open = false;
    },
    open() {
      open = true;
      const w = waiters;
      waiters = [];
      for (const resolve of w) resolve();
    },
    /** Resolves once `n` calls wait at the gate. */
    whenHeld(n) {
      if (gate.held >= n) return Promise.resolve();
      return new Promise((resolve) => heldWaiters.push({ n, resolve }));
    },
  };
  const backend = {
    modelName: scorer.modelName,
    config: scorer.config,
    get pending() {
      return scorer.pending;
    },
    tokenizer: scorer.tokenizer,
    tokenize: (text) => scorer.tokenize(text),
    normalizeBody: (body) => scorer.normalizeBody(body),
    normalizeRerankBody: (body) => scorer.normalizeRerankBody(body),
    scoreBody: (body, options) => scorer.scoreBody(body, options),
    async scoreBatch(jobs) {
      if (!open) {
        gate.held++;
        heldWaiters = heldWaiters.filter((w) => (gate.held >= w.n ? (w.resolve(), false) : true));
        await new Promise((resolve) => waiters.push(resolve));
        gate.held--;
      }
      return scorer.scoreBatch(jobs);
    },
    stats: () => scorer.stats(),
    warmup: (shapes, progress) => scorer.warmup(shapes, progress),
    dispose() {
      gate.disposed++;
    },
  };
  return { backend, gate };
}

/** A pino logger writing JSON lines into `lines` (parsed). */
function capturingLogger(lines) {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { stream, logger: pino(stream) };
}

/**
 * Starts the three servers with the same service settings. Resolves
 * [{ kind, port, url, gate, logs, registry, scoring?, close() }] once all are ready.
 */
async function startThree(scorer, settings, { registry } = {}) {
  const { startServer } = require('../../dist/server/server');
  const fastifyExample = require('../../examples/fastify');
  const expressExample = require('../../examples/express');
  const servers = [];

  {
    const { backend, gate } = gatedBackend(scorer);
    const logs = [];
    const s = await startServer({ ...settings, port: 0, host: '127.0.0.1', logger: capturingLogger(logs).logger, loadBackend: async () => backend });
    await s.ready;
    servers.push({ kind: 'standalone', port: s.port, url: s.url, gate, logs, registry: s.registry, phase: () => s.phase, close: () => s.close() });
  }
  {
    const { backend, gate } = gatedBackend(scorer);
    const logs = [];
    // fastify's own pino logger, pointed at a stream: our events go through app.log.
    const { stream } = capturingLogger(logs);
    const app = await fastifyExample.start({ port: 0, logger: { level: 'info', stream }, service: { ...settings, loadBackend: async () => backend } });
    await app.scoring.ready;
    servers.push({ kind: 'fastify', port: Number(new URL(app.url).port), url: app.url, gate, logs, registry: app.registry, phase: () => app.scoring.phase, close: app.close });
  }
  {
    const { backend, gate } = gatedBackend(scorer);
    const logs = [];
    const app = await expressExample.start({ port: 0, logger: capturingLogger(logs).logger, registry, service: { ...settings, loadBackend: async () => backend } });
    await app.scoring.ready;
    servers.push({ kind: 'express', port: Number(new URL(app.url).port), url: app.url, gate, logs, registry: app.registry, phase: () => app.scoring.phase, close: app.close });
  }
  return servers;
}

module.exports = { gatedBackend, capturingLogger, startThree };
