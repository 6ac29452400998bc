/**
 * src/server/body.ts: how request bodies are read.
 *
 * JSON routes: the body is read up to `bodyLimit` bytes and parsed with Fathom's JSON
 * reader (64-bit integers stay exact). `application/json`, `text/plain`, form-encoded
 * (curl's default) and a missing Content-Type are all read as JSON, as the reference
 * does; any other type is refused with 415 before the body is read. An empty body is
 * `undefined` (DELETE and GET clients often send a JSON Content-Type with no body).
 *
 * Import: every Content-Type is accepted and the request stream is handed to the route
 * untouched, so a large import is never held in memory (see routes/documents.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { FathomError } from '../errors.js';
import { parseJson } from '../json.js';

function parseBody(text: string): unknown {
  if (text.length === 0 || text.trim() === '') return undefined;
  return parseJson(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
}

/** Reads a whole body up to `limit` bytes (for requests without a Content-Type). */
function readLimited(payload: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    payload.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        payload.removeAllListeners('data');
        payload.resume();
        reject(Object.assign(new Error('body too large'), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' }));
        return;
      }
      chunks.push(c);
    });
    payload.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    payload.on('error', reject);
  });
}

const JSON_LIKE = ['application/json', 'text/plain', 'application/x-www-form-urlencoded'];

export function installJsonParsers(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_LIKE, { parseAs: 'string', bodyLimit }, (_req: FastifyRequest, body: string | Buffer, done) => {
    try {
      done(null, parseBody(String(body)));
    } catch (e) {
      done(e as Error, undefined);
    }
  });
  app.addContentTypeParser(/^application\/[\w.+-]*\+json$/, { parseAs: 'string', bodyLimit }, (_req, body, done) => {
    try {
      done(null, parseBody(String(body)));
    } catch (e) {
      done(e as Error, undefined);
    }
  });
  app.addContentTypeParser('*', (req: FastifyRequest, payload: IncomingMessage, done) => {
    const type = req.headers['content-type'];
    if (type !== undefined && type !== '') {
      done(new FathomError('UNSUPPORTED_MEDIA_TYPE', `unsupported Content-Type \`${type.split(';')[0]}\`: send JSON with \`Content-Type: application/json\``), undefined);
      return;
    }
    readLimited(payload, bodyLimit).then(
      (text) => {
        try {
          done(null, parseBody(text));
        } catch (e) {
          done(e as Error, undefined);
        }
      },
      (e) => done(e as Error, undefined),
    );
  });
}

/** For the import route's context: every body is passed through as a stream. */
export function installStreamParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req: FastifyRequest, payload: IncomingMessage, done) => done(null, payload));
}
