'use strict';
// The three servers of test/service-embed.test.js, each in this process on a
// free 127.0.0.1 port, all over ONE real Scorer (the default model, loaded
// once): the standalone service (startServer), the fastify example and the
// express example (examples/*.js), each mounting our routes beside a route
// of its own. The Scorer's device turns pass a gate: while it is shut, a
// turn waits before it starts (the device "busy"), so queue-full, deadline
// and drain cases are deterministic.
const { Writable } = require('node:stream');
const pino = require('pino');

/**
 * A gate at the device: while it is shut, a turn of the Scorer's admission
 * queue waits before it starts (the device "busy"), its requests in flight
 * and the rest queued behind it. One gate per Scorer: the three servers
 * share the Scorer, so they share its queue and its gate.
 */
function gateScorer(scorer) {
  let open = true;
  let waiters = [];
  let heldWaiters = [];
  const gate = {
    held: 0,
    shut() {
      open = false;
    },
    open() {
      open = true;
      const w = waiters;
      waiters = [];
      for (const resolve of w) resolve();
    },
    /** Resolves once `n` turns wait at the gate. */
    whenHeld(n) {
      if (gate.held >= n) return Promise.resolve();
      return new Promise((resolve) => heldWaiters.push({ n, resolve }));
    },
  };
  // The queue runs each turn through the engine's turn executor (lib/scoring/engine.ts); the gate waits in front of it.
  const turns = scorer.engine.turns;
  const runTurn = turns.run.bind(turns);
  turns.run = async (jobs) => {
    if (!open) {
      gate.held++;
      heldWaiters = heldWaiters.filter((w) => (gate.held >= w.n ? (w.resolve(), false) : true));
      await new Promise((resolve) => waiters.push(resolve));
      gate.held--;
    }
    return runTurn(jobs);
  };
  return gate;
}

/** A server's view of the shared Scorer: its calls, but dispose() is counted, not done. */
function sharedBackend(scorer) {
  const counts = { disposed: 0 };
  const backend = {
    modelName: scorer.modelName,
    config: scorer.config,
    get queueDepth() {
      return scorer.queueDepth;
    },
    get inFlight() {
      return scorer.inFlight;
    },
    tokenizer: scorer.tokenizer,
    tokenize: (text) => scorer.tokenize(text),
    normalizeWith: (read) => scorer.normalizeWith(read),
    scoreNormalized: (request, options) => scorer.scoreNormalized(request, options),
    retryAfterSeconds: () => scorer.retryAfterSeconds(),
    idle: () => scorer.idle(),
    stats: () => scorer.stats(),
    warmup: (shapes, progress) => scorer.warmup(shapes, progress),
    dispose() {
      counts.disposed++;
    },
  };
  return { backend, counts };
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
 * [{ kind, port, url, gate: gateView(gate, counts), logs, registry, scoring?, close() }] once all are ready.
 */
async function startThree(scorer, settings, { registry } = {}) {
  const { startServer } = require('../../dist/server/hosts/standalone-server');
  const fastifyExample = require('../../examples/fastify');
  const expressExample = require('../../examples/express');
  const servers = [];
  const gate = gateScorer(scorer);

  {
    const { backend, counts } = sharedBackend(scorer);
    const logs = [];
    const s = await startServer({
      ...settings,
      port: 0,
      host: '127.0.0.1',
      logger: capturingLogger(logs).logger,
      loadBackend: async () => backend,
    });
    await s.ready;
    servers.push({
      kind: 'standalone',
      port: s.port,
      url: s.url,
      gate: gateView(gate, counts),
      logs,
      registry: s.registry,
      phase: () => s.phase,
      close: () => s.close(),
    });
  }
  {
    const { backend, counts } = sharedBackend(scorer);
    const logs = [];
    // fastify's own pino logger, pointed at a stream: our events go through app.log.
    const { stream } = capturingLogger(logs);
    const app = await fastifyExample.start({
      port: 0,
      logger: { level: 'info', stream },
      service: { ...settings, loadBackend: async () => backend },
    });
    await app.scoring.ready;
    servers.push({
      kind: 'fastify',
      port: Number(new URL(app.url).port),
      url: app.url,
      gate: gateView(gate, counts),
      logs,
      registry: app.registry,
      phase: () => app.scoring.phase,
      close: app.close,
    });
  }
  {
    const { backend, counts } = sharedBackend(scorer);
    const logs = [];
    const app = await expressExample.start({
      port: 0,
      logger: capturingLogger(logs).logger,
      registry,
      service: { ...settings, loadBackend: async () => backend },
    });
    await app.scoring.ready;
    servers.push({
      kind: 'express',
      port: Number(new URL(app.url).port),
      url: app.url,
      gate: gateView(gate, counts),
      logs,
      registry: app.registry,
      phase: () => app.scoring.phase,
      close: app.close,
    });
  }
  return servers;
}

/** The gate as a server sees it: the shared gate, and that server's dispose() count. */
function gateView(gate, counts) {
  return {
    shut: () => gate.shut(),
    open: () => gate.open(),
    whenHeld: (n) => gate.whenHeld(n),
    get disposed() {
      return counts.disposed;
    },
  };
}

module.exports = { gateScorer, sharedBackend, capturingLogger, startThree };
