/**
 * Traces (docs/service.md, "Deploying on a network"): with --otlp-endpoint
 * or the standard OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT variables, one
 * OpenTelemetry span per request (kind server, child of the caller's
 * `traceparent` when it sends one), with child spans for reading the body,
 * tokenization, the queue wait, each device pass and the reply, sent over
 * OTLP/HTTP. The OpenTelemetry packages are optional peer dependencies,
 * loaded only when traces are on. Spans are built after the fact from the
 * times the route recorded (explicit start and end times), so no context
 * manager is needed.
 */
import type { IncomingMessage } from 'node:http';
import { OptionError } from '../../scoring';

/** One timed step of a request. */
export interface StepTiming {
  readonly name: string;
  /** performance.now() milliseconds. */
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes?: Readonly<Record<string, string | number>>;
}

interface RequestTrace {
  /** Ends the request's span with its children; `attributes` on the request span. */
  end(
    endMs: number,
    status: number,
    steps: readonly StepTiming[],
    attributes: Readonly<Record<string, string | number>>,
  ): void;
}

export interface Tracing {
  /** Where spans go (for the log). */
  readonly endpoint: string;
  startRequest(req: IncomingMessage, method: string, route: string, startMs: number): RequestTrace;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** The packages traces need, all optional peer dependencies. */
const TRACE_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/core',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/exporter-trace-otlp-http',
];

/**
 * Traces on when `endpoint` (--otlp-endpoint: a base URL, `/v1/traces`
 * added unless present) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT /
 * OTEL_EXPORTER_OTLP_ENDPOINT are set; null otherwise. OptionError if the
 * packages are missing.
 */
export function openTracing(endpoint: string | undefined, env: NodeJS.ProcessEnv, serviceName: string): Tracing | null {
  const fromEnv = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (endpoint === undefined && !fromEnv) return null;
  const url =
    endpoint === undefined
      ? undefined
      : /\/v1\/traces\/?$/.test(endpoint)
        ? endpoint
        : `${endpoint.replace(/\/+$/, '')}/v1/traces`;
  /* eslint-disable @typescript-eslint/no-require-imports */
  let api: typeof import('@opentelemetry/api');
  let core: typeof import('@opentelemetry/core');
  let resources: typeof import('@opentelemetry/resources');
  let sdk: typeof import('@opentelemetry/sdk-trace-base');
  let exporterModule: typeof import('@opentelemetry/exporter-trace-otlp-http');
  try {
    api = require('@opentelemetry/api');
    core = require('@opentelemetry/core');
    resources = require('@opentelemetry/resources');
    sdk = require('@opentelemetry/sdk-trace-base');
    exporterModule = require('@opentelemetry/exporter-trace-otlp-http');
  } catch (error) {
    throw new OptionError(
      `traces need the optional packages ${TRACE_PACKAGES.join(' ')} (npm install them): ` +
        `${(error as Error).message.split('\n')[0]}`,
    );
  }
  /* eslint-enable @typescript-eslint/no-require-imports */
  const exporter = new exporterModule.OTLPTraceExporter(url === undefined ? {} : { url });
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || serviceName }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 })],
  });
  const tracer = provider.getTracer('pjrt-score');
  const propagator = new core.W3CTraceContextPropagator();
  const epoch = (ms: number): number => performance.timeOrigin + ms;
  return {
    endpoint: url ?? String(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || `${env.OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`),
    startRequest(req, method, route, startMs) {
      const parent = propagator.extract(api.ROOT_CONTEXT, req.headers, api.defaultTextMapGetter);
      const span = tracer.startSpan(
        `${method} ${route}`,
        {
          kind: api.SpanKind.SERVER,
          startTime: epoch(startMs),
          attributes: { 'http.request.method': method, 'http.route': route },
        },
        parent,
      );
      return {
        end(endMs, status, steps, attributes) {
          const context = api.trace.setSpan(api.ROOT_CONTEXT, span);
          for (const step of steps) {
            tracer
              .startSpan(
                step.name,
                { startTime: epoch(step.startMs), ...(step.attributes ? { attributes: step.attributes } : {}) },
                context,
              )
              .end(epoch(step.endMs));
          }
          span.setAttributes({ 'http.response.status_code': status, ...attributes });
          if (status >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR });
          span.end(epoch(endMs));
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
}
