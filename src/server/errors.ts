/**
 * src/server/errors.ts: every failed request answers `{"message": "..."}` with a status.
 *
 * A FathomError carries its own status (src/errors.ts). Fastify's own 4xx errors (bad
 * content length, unsupported media type, body too large) are reworded into the same
 * shape. Anything else is a bug: the stack goes to the log, the client gets a 500 with a
 * generic message and never the stack.
 */
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { FathomError } from '../errors.js';

export interface HttpError {
  status: number;
  message: string;
}

/** Rewordings of Fastify's client errors, by code. */
const FASTIFY_MESSAGES: Record<string, (e: { message: string }, limit: number) => string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (_e, limit) =>
    `request body is larger than ${limit} bytes; send large data through POST /collections/:collection/documents/import, which streams`,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => 'unsupported Content-Type: send JSON with `Content-Type: application/json`',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => 'the Content-Length header does not match the body',
  FST_ERR_CTP_EMPTY_JSON_BODY: () => 'the request body is empty; send a JSON value',
  FST_ERR_BAD_URL: () => 'the request path is not a valid URL (bad percent-encoding?)',
  FST_ERR_CTP_INVALID_TYPE: () => 'the Content-Type header is malformed',
};

export function toHttpError(e: unknown, bodyLimit: number): HttpError | undefined {
  if (e instanceof FathomError) return { status: e.status, message: e.message };
  const err = e as { code?: string; statusCode?: number; message?: string };
  if (err && typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    const reword = err.code ? FASTIFY_MESSAGES[err.code] : undefined;
    return { status: err.statusCode, message: reword ? reword({ message: err.message ?? '' }, bodyLimit) : (err.message ?? 'bad request') };
  }
  return undefined;
}

/** Sends an error answer; logs unexpected errors with their stack (never sent). */
export function sendError(e: unknown, req: FastifyRequest, reply: FastifyReply, log: FastifyBaseLogger, bodyLimit: number): void {
  const known = toHttpError(e, bodyLimit);
  if (known) {
    void reply.code(known.status).type('application/json; charset=utf-8').send(JSON.stringify({ message: known.message }));
    return;
  }
  log.error({ err: e, method: req.method, route: req.routeOptions?.url }, 'unexpected error while handling a request');
  void reply.code(500).type('application/json; charset=utf-8').send(JSON.stringify({ message: 'internal server error; the server log has the details' }));
}
