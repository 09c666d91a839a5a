/**
 * startServer: the standalone service, `pjrt-score serve`: the scoring
 * service's routes (all of them, 404 for other paths) on a node:http server.
 * It listens at once (so /health answers 503 while the model loads), loads
 * and warms the Scorer, turns ready; close() drains: refuse new work, finish
 * what was accepted, close the listener, dispose the Scorer. Process metrics are on by default.
 * Facing a network (docs/service.md, "Deploying on a network"): API keys,
 * CORS and TLS from the network settings; reload() re-reads the key file
 * and the TLS files (SIGHUP in `pjrt-score serve`).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { apiKeyGate } from '../network/access';
import { ApiKeys } from '../network/api-keys';
import { corsPolicy } from '../network/cors';
import { logEvent } from '../telemetry/log';
import { NetworkSettingKey } from '../network/network-settings';
import { readTls, tlsFilesOf } from '../network/tls-files';
import { createRequestListener } from './node-handler';
import { ServeOptions } from '../settings/serve-settings';
import { servedRoutes } from '../routes/table';
import { Phase } from '../lifecycle/service-state';
import { openTracing } from '../telemetry/tracing';
import { ScoringServiceOptions, openScoringService } from './mountable-service';

export interface StartServerOptions
  extends ScoringServiceOptions, Partial<Pick<ServeOptions, 'host' | 'port' | 'drainDelayMs' | NetworkSettingKey>> {}

/** What reload() re-read. */
export interface ReloadResult {
  /** Keys accepted now (0 when keys are off). */
  readonly keys: number;
  /** Whether a new certificate and key are in use. */
  readonly tls: boolean;
}

export interface ScoreServer {
  /** node:http's server, or node:https's with --tls-cert. */
  readonly server: http.Server | https.Server;
  readonly host: string;
  readonly port: number;
  /** http://host:port, or https:// with TLS. */
  readonly url: string;
  /** Resolves once the model is loaded and warm; rejects if loading or warmup failed (the server then stops). */
  readonly ready: Promise<void>;
  readonly phase: Phase;
  /** The prom-client registry GET /metrics exposes. */
  readonly registry: Registry;
  /**
   * Graceful stop: with drainDelayMs, first fail readiness (/health 503)
   * while still serving for that long; then refuse new work (503, the
   * probes still answered), let accepted requests finish, close the
   * listener and connections, dispose the Scorer.
   * Idempotent.
   */
  close(): Promise<void>;
  /**
   * Re-reads the API key file (removed keys are refused from now on) and the
   * TLS certificate and key (new connections get them; open ones keep
   * theirs). On an error (OptionError) nothing changes.
   */
  reload(): ReloadResult;
}

/** Starts the service; resolves once it listens (before the model is ready: see `.ready`). */
export async function startServer(options: StartServerOptions = {}): Promise<ScoreServer> {
  const control = openScoringService({ processMetrics: true, ...options });
  const { settings } = control;
  const keys =
    settings.apiKey !== undefined || settings.apiKeyFile !== undefined
      ? new ApiKeys({ keys: settings.apiKey, file: settings.apiKeyFile })
      : null;
  const listener = createRequestListener(control.state, servedRoutes(control.settings.docs), {
    ...(keys ? { gate: apiKeyGate(keys, settings.metricsPublic) } : {}),
    cors: corsPolicy(settings.corsAllowOrigin),
  });
  const tlsFiles = tlsFilesOf(settings);
  const tlsContext = tlsFiles ? readTls(tlsFiles) : null;
  const server = tlsContext
    ? https.createServer({ keepAliveTimeout: 5000, ...tlsContext }, listener)
    : http.createServer({ keepAliveTimeout: 5000 }, listener);
  const service = control.service;
  control.state.tracing = openTracing(settings.otlpEndpoint, process.env, 'pjrt-score');
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
  const url = `${tlsFiles ? 'https' : 'http'}://${host}:${address.port}`;
  logEvent(service.logger, 'info', 'listening', {
    host: address.address,
    port: address.port,
    url,
    tls: tlsFiles !== null,
    api_keys: keys?.size ?? 0,
    cors_allow_origin: settings.corsAllowOrigin,
    traces: control.state.tracing?.endpoint ?? null,
  });
  control.start();

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    if (closing) return closing;
    closing = (async () => {
      // Readiness fails first: gateways and Endpoints stop sending while the listener still answers.
      if (settings.drainDelayMs > 0 && control.state.beginLeave()) {
        logEvent(service.logger, 'info', 'leaving', { drain_delay_ms: settings.drainDelayMs });
        await new Promise<void>((resolve) => setTimeout(resolve, settings.drainDelayMs));
      }
      // The listener stays open through the drain: probes answer (/livez 200, /readyz 503), new scoring
      // requests get 503 with Connection: close, accepted ones finish; only then does it close.
      const drained = control.drain();
      server.closeIdleConnections();
      await drained;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections that finished their last response are idle now.
      server.closeIdleConnections();
      server.closeAllConnections();
      await stopped;
      control.finish();
      // The last spans go out before close() resolves.
      await control.state.tracing
        ?.shutdown()
        .catch((error: unknown) => logEvent(service.logger, 'warn', 'traces_flush_failed', { error }));
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
    reload: () => {
      // Read everything first: a bad file changes nothing.
      const context = tlsFiles ? readTls(tlsFiles) : null;
      const count = keys ? keys.reload() : 0;
      if (context) (server as https.Server).setSecureContext(context);
      return { keys: count, tls: context !== null };
    },
  };
}
