/**
 * startServer: the standalone service, `pjrt-score serve`: the scoring
 * service's routes (all of them, 404 for other paths) on a node:http server.
 * It listens at once (so /health answers 503 while the model loads), loads
 * and warms the Scorer, turns ready; close() drains: stop accepting, finish
 * what was accepted, dispose the Scorer. Process metrics are on by default.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { logEvent } from './log';
import { ServeOptions } from './options';
import { Phase } from './service';
import { ScoringServiceOptions, openScoringService } from './scoring-service';

export interface StartServerOptions extends ScoringServiceOptions, Partial<Pick<ServeOptions, 'host' | 'port'>> {}

export interface ScoreServer {
  readonly server: http.Server;
  readonly host: string;
  readonly port: number;
  /** http://host:port */
  readonly url: string;
  /** Resolves once the model is loaded and warm; rejects if loading or warmup failed (the server then stops). */
  readonly ready: Promise<void>;
  readonly phase: Phase;
  /** The prom-client registry GET /metrics exposes. */
  readonly registry: Registry;
  /**
   * Graceful stop: refuse new work (503, /health 503), let accepted
   * requests finish, close connections, dispose the Scorer. Idempotent.
   */
  close(): Promise<void>;
}

/** Starts the service; resolves once it listens (before the model is ready: see `.ready`). */
export async function startServer(options: StartServerOptions = {}): Promise<ScoreServer> {
  const control = openScoringService({ processMetrics: true, ...options });
  const { service, settings } = control;
  const server = http.createServer({ keepAliveTimeout: 5000 }, service.requestListener());
  server.headersTimeout = 30_000;
  server.requestTimeout = Math.max(60_000, settings.timeoutMs + 10_000);
  // headersTimeout starts at a request's first byte: a connection that never sends one would stay open for
  // good (an idle-connection attack holds file descriptors). Close sockets silent for as long as a request may take.
  server.timeout = server.requestTimeout;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logEvent(service.logger, 'info', 'listening', { host: address.address, port: address.port, url });
  control.start();

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    if (closing) return closing;
    closing = (async () => {
      const drained = control.drain();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await drained;
      // Keep-alive connections that finished their last response are idle now.
      server.closeIdleConnections();
      server.closeAllConnections();
      await stopped;
      control.finish();
    })();
    return closing;
  };

  return {
    server,
    host: address.address,
    port: address.port,
    url,
    ready: service.ready,
    get phase() {
      return service.phase;
    },
    registry: service.registry,
    close,
  };
}
