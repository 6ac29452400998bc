/**
 * Documents: single writes, reads and deletes, update and delete by filter, import and
 * export. Every route parses its parameters here and calls one Engine method. Joins in
 * include_fields and filter_by reach only the collections the key may act on itself (keyScope).
 *
 * Import and export stream. Import hands the request stream to `Engine.import`, which
 * reads it in batches of `batch_size` and yields to the event loop between batches (so
 * queued searches run); result lines are written as each batch becomes durable. Export
 * pulls documents from the engine's generator only as fast as the client reads.
 */
import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DELETE_BATCH_SIZE, IMPORT_BATCH_SIZE, MAX_IMPORT_BATCH_SIZE, SERVE_DEFAULTS } from '../../defaults.js';
import { FathomError } from '../../errors.js';
import { installStreamParsers } from '../body.js';
import { referenceLine } from '../../io/reference-json.js';
import type { ServerContext } from '../context.js';
import { bool, dirtyValues, fieldList, int, one, writeAction, type Query } from '../params.js';
import { keyScope } from '../../keys/auth.js';

type P = { collection: string };
type PI = { collection: string; id: string };

/**
 * Result lines buffered for a client that is not reading them yet, before the import
 * stops reading its input. Clients that send the whole body before reading the answer
 * (many do) would otherwise deadlock on a large import.
 */
const IMPORT_RESULT_BUFFER_BYTES = 8 * 1024 * 1024;

/** `?action=` of a single-document POST, as a key action. */
function writeKeyAction(req: FastifyRequest): string {
  const a = one(req.query as Query, 'action');
  if (a === 'upsert' || a === 'emplace') return 'documents:upsert';
  if (a === 'update') return 'documents:update';
  return 'documents:create';
}

const coll = (action: string | ((req: FastifyRequest) => string)) => ({ config: { auth: { action, collectionParam: 'collection' } } });

export function documentRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine } = ctx;

  app.post<{ Params: P }>('/collections/:collection/documents', coll(writeKeyAction), async (req, reply) => {
    const q = req.query as Query;
    const action = writeAction(q);
    if (req.body === undefined) throw new FathomError('BAD_DOCUMENT', 'the request body must be a JSON document');
    const doc = await engine.writeDocument(req.params.collection, req.body, { action, dirtyValues: dirtyValues(q) });
    ctx.afterWrite(req.params.collection);
    return reply.code(201).send(doc);
  });

  app.get<{ Params: PI }>('/collections/:collection/documents/:id', coll('documents:get'), async (req) => {
    const q = req.query as Query;
    return engine.getDocument(req.params.collection, req.params.id, { include: fieldList(q, 'include_fields'), exclude: fieldList(q, 'exclude_fields') }, keyScope(req.principal));
  });

  app.patch<{ Params: PI }>('/collections/:collection/documents/:id', coll('documents:update'), async (req) => {
    if (req.body === undefined) throw new FathomError('BAD_DOCUMENT', 'the request body must be a JSON object with the fields to update');
    const r = await engine.updateDocument(req.params.collection, req.params.id, req.body, { dirtyValues: dirtyValues(req.query as Query) });
    ctx.afterWrite(req.params.collection);
    return r;
  });

  app.delete<{ Params: PI }>('/collections/:collection/documents/:id', coll('documents:delete'), async (req) => {
    const r = await engine.deleteDocument(req.params.collection, req.params.id, { ignoreNotFound: bool(req.query as Query, 'ignore_not_found', false) });
    ctx.afterWrite(req.params.collection);
    return r;
  });

  app.patch<{ Params: P }>('/collections/:collection/documents', coll('documents:update'), async (req) => {
    const q = req.query as Query;
    const filter = one(q, 'filter_by');
    if (filter === undefined || filter.trim() === '') throw new FathomError('BAD_PARAMETER', 'parameter `filter_by` is required to update documents by query');
    const r = await engine.updateByFilter(req.params.collection, filter, req.body, { dirtyValues: dirtyValues(q), keyScope: keyScope(req.principal) });
    ctx.afterWrite(req.params.collection);
    return r;
  });

  app.delete<{ Params: P }>('/collections/:collection/documents', coll('documents:delete'), async (req) => {
    const q = req.query as Query;
    const filter = one(q, 'filter_by');
    if (filter === undefined || filter.trim() === '') {
      throw new FathomError('BAD_PARAMETER', 'parameter `filter_by` is required to delete documents by query (match everything with a filter such as `id:*`)');
    }
    const r = await engine.deleteByFilter(req.params.collection, filter, int(q, 'batch_size', DELETE_BATCH_SIZE, 1, 1_000_000), keyScope(req.principal));
    ctx.afterWrite(req.params.collection);
    return r;
  });

  app.get<{ Params: P }>('/collections/:collection/documents/export', coll('documents:export'), async (req, reply) => {
    const q = req.query as Query;
    const gen = engine.exportLines(req.params.collection, {
      include: fieldList(q, 'include_fields'),
      exclude: fieldList(q, 'exclude_fields'),
      filterBy: one(q, 'filter_by'),
      keyScope: keyScope(req.principal),
    });
    // Pull the first document now, so that a missing collection or a bad filter still
    // answers with its own status rather than a broken 200.
    let first = gen.next();
    let started = false;
    const stream = new Readable({
      highWaterMark: SERVE_DEFAULTS.exportHighWaterMark,
      read() {
        // Hot for large exports: push lines until the buffer is full, then wait for read().
        try {
          for (;;) {
            if (first.done) {
              this.push(null);
              return;
            }
            // each document as the reference writes it: keys sorted, its number forms
            const line = (started ? '\n' : '') + referenceLine(first.value);
            started = true;
            first = gen.next();
            if (!this.push(line)) return;
          }
        } catch (e) {
          this.destroy(e as Error);
        }
      },
      destroy(err, cb) {
        gen.return(undefined);
        cb(err);
      },
    });
    return reply.type('application/octet-stream').send(stream);
  });

  // Import lives in its own context: there every body is a raw stream, never parsed.
  app.register(async (child) => {
    installStreamParsers(child);
    child.post<{ Params: P }>('/collections/:collection/documents/import', coll('documents:import'), async (req, reply) => {
      const q = req.query as Query;
      const collection = req.params.collection;
      const opts = {
        action: writeAction(q),
        batchSize: int(q, 'batch_size', IMPORT_BATCH_SIZE, 1, MAX_IMPORT_BATCH_SIZE),
        dirtyValues: dirtyValues(q),
        returnId: bool(q, 'return_id', false),
        returnDoc: bool(q, 'return_doc', false),
        remoteEmbedding: {
          batchSize: q.remote_embedding_batch_size === undefined ? undefined : int(q, 'remote_embedding_batch_size', 200, 1, 10_000),
          timeoutMs: q.remote_embedding_timeout_ms === undefined ? undefined : int(q, 'remote_embedding_timeout_ms', 60_000, 1, 3_600_000),
          numTries: q.remote_embedding_num_tries === undefined ? undefined : int(q, 'remote_embedding_num_tries', 2, 1, 100),
        },
      };
      engine.getCollection(collection); // 404 before the 200 is sent
      const source: AsyncIterable<Buffer> = (req.body as IncomingMessage | undefined) ?? (async function* () {})();
      // Result lines go out through `out`; its read() is called when the client has taken
      // what was buffered, which is when a paused import may go on.
      let resume: (() => void) | null = null;
      const wake = () => {
        const r = resume;
        resume = null;
        r?.();
      };
      const out = new Readable({ read: wake });
      reply.raw.once('close', wake);
      let first = true;
      void reply.type('text/plain; charset=utf-8').send(out);
      try {
        await ctx.importer.run(collection, source, opts, (text) => {
          if (reply.raw.destroyed) return;
          out.push((first ? '' : '\n') + text);
          first = false;
          if (out.readableLength > IMPORT_RESULT_BUFFER_BYTES) return new Promise<void>((r) => (resume = r));
        });
        out.push(null);
      } catch (e) {
        req.log.warn({ err: (e as Error).message, collection }, 'import stopped early');
        out.destroy(e as Error);
      }
      return reply;
    });
  });
}
