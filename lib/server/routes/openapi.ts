/**
 * GET /openapi.json: the OpenAPI 3.1 document of the routes a mount serves,
 * generated from the route table (table.ts): each route's path, methods
 * and operation (openapi-schemas.ts). A route added to the table appears
 * here with nothing else to edit.
 */
import { BEARER_SCHEME } from './docs';
import { JsonSchema, Operation, SCHEMAS } from './openapi-schemas';

/** What the document needs from a route definition. */
interface DocumentedRoute {
  readonly path: string;
  readonly methods: readonly string[];
  readonly operation: Operation;
}

const ERROR_CONTENT = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };

/** The OpenAPI 3.1 document of `routes`. */
export function openApiDocument(
  routes: readonly DocumentedRoute[],
  info: { readonly title: string; readonly version: string },
): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const params = route.path
      .split('/')
      .filter((s) => s.startsWith(':'))
      .map((s) => s.slice(1));
    const path = route.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const item: Record<string, unknown> = {};
    for (const method of route.methods) {
      if (method === 'HEAD') continue;
      item[method.toLowerCase()] = operationObject(route, method, params);
    }
    paths[path] = item;
  }
  // Keys are optional (a service without them takes none); the API reference authorizes this scheme.
  return {
    openapi: '3.1.0',
    info,
    paths,
    components: { schemas: SCHEMAS, securitySchemes: { [BEARER_SCHEME]: { type: 'http', scheme: 'bearer' } } },
    security: [{}, { [BEARER_SCHEME]: [] }],
  };
}

function operationObject(route: DocumentedRoute, method: string, params: readonly string[]): Record<string, unknown> {
  const op = route.operation;
  const ok =
    'text' in op.ok
      ? { [op.ok.text as string]: { schema: { type: 'string' } } }
      : { 'application/json': { schema: op.ok } };
  const responses: Record<string, unknown> = { '200': { description: 'OK', content: ok } };
  for (const status of [...op.errors, 404, 405])
    responses[String(status)] = { description: 'Error', content: ERROR_CONTENT };
  return {
    operationId: `${method.toLowerCase()}${camelPath(route.path)}`,
    summary: op.summary,
    ...(params.length > 0
      ? { parameters: params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })) }
      : {}),
    ...(op.request !== undefined
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: op.request, ...(op.examples ? { examples: op.examples } : {}) } },
          },
        }
      : {}),
    responses,
  };
}

/** A route path as one camel-case word: `/v1/score` -> `V1Score`. */
function camelPath(path: string): string {
  return path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase());
}
