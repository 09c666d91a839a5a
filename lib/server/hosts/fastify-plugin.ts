/**
 * The routes as a fastify plugin. Registered with `app.register(plugin)` it
 * lives in its own encapsulated context: there it swaps fastify's body
 * parsers for one that leaves the body unread, so our routes read it with
 * the standalone service's content-type, size and UTF-8 rules and answer
 * our error bodies. Typed structurally: fastify is not a dependency.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AccessGate } from '../network/access';
import { Exchange, Reply } from '../http/exchange';
import { dispatch } from '../routes/dispatch';
import { RouteDefinition } from '../routes/table';
import { ServiceState } from '../lifecycle/service-state';

/** The part of a fastify request the plugin reads. */
export interface FastifyRequestLike {
  readonly raw: IncomingMessage;
}

/** The part of a fastify reply the plugin uses. */
export interface FastifyReplyLike {
  readonly raw: ServerResponse;
  code(status: number): FastifyReplyLike;
  header(name: string, value: string): FastifyReplyLike;
  send(payload?: unknown): FastifyReplyLike;
}

/** The part of a fastify instance the plugin uses. */
export interface FastifyInstanceLike {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(
    contentType: string,
    parser: (
      request: FastifyRequestLike,
      payload: unknown,
      done: (error: Error | null, body?: unknown) => void,
    ) => void,
  ): void;
  route(options: {
    method: string[];
    url: string;
    exposeHeadRoute?: boolean;
    handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<FastifyReplyLike>;
  }): unknown;
}

export type FastifyPluginLike = (instance: FastifyInstanceLike, options: Record<string, unknown>) => Promise<void>;

/** Every method fastify routes by default: a wrong one is our 405, as in the standalone service. */
const ALL_METHODS = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS'];

export function createFastifyPlugin(
  service: ServiceState,
  routes: readonly RouteDefinition[],
  gate?: AccessGate,
): FastifyPluginLike {
  return async (instance) => {
    instance.removeAllContentTypeParsers();
    // Called for any content type (or none): the body stays unread for our routes.
    instance.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    for (const route of routes) {
      instance.route({
        method: ALL_METHODS,
        url: route.path,
        exposeHeadRoute: false,
        handler: async (request, reply) => {
          const ex: Exchange = { req: request.raw, res: reply.raw, method: request.raw.method ?? '', path: route.path };
          await dispatch(
            service,
            route,
            ex,
            (answer: Reply) => {
              reply.code(answer.status);
              reply.header('content-type', answer.contentType);
              for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value);
              reply.send(answer.body);
            },
            gate,
          );
          return reply;
        },
      });
    }
  };
}
