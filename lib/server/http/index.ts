/**
 * lib/server/http: one HTTP exchange as every host presents it (exchange.ts:
 * the raw request, and the answer as data, a Reply), the one error body of
 * every non-2xx answer (http-errors.ts), reading a JSON body (body.ts:
 * content type, size limit, strict UTF-8) and writing JSON whose scores stay
 * floats (json-floats.ts).
 * May import: no sibling.
 */
export { HttpError, type ErrorBody } from './http-errors';
