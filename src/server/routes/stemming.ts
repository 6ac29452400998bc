/**
 * Stemming dictionaries (src/stemming): `POST /stemming/dictionaries/import?id=<name>`
 * with JSON Lines of `{"word", "root"}` (answered with the imported pairs as JSON Lines),
 * `GET /stemming/dictionaries` (`{"dictionaries": [names]}`), and
 * `GET` / `DELETE /stemming/dictionaries/:id`.
 */
import type { FastifyInstance } from 'fastify';
import { SERVER_DEFAULTS } from '../../defaults.js';
import type { ServerContext } from '../context.js';
import { one, type Query } from '../params.js';

type N = { id: string };

export function stemmingRoutes(app: FastifyInstance, ctx: ServerContext, bodyLimit = SERVER_DEFAULTS.maxBodyBytes): void {
  const { engine } = ctx;
  // the import body is JSON Lines, whatever its Content-Type says: read it as text
  app.register(async (child) => {
    child.removeAllContentTypeParsers();
    child.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, (_req, body, done) => done(null, String(body)));
    child.post('/stemming/dictionaries/import', { config: { auth: { action: 'stemming/dictionaries:create' } } }, async (req, reply) => {
      const text = typeof req.body === 'string' ? req.body : '';
      const words = await engine.importStemmingDictionary(one(req.query as Query, 'id'), text);
      return reply.type('text/plain; charset=utf-8').send(words.map((w) => JSON.stringify(w)).join('\n'));
    });
  });
  app.get('/stemming/dictionaries', { config: { auth: { action: 'stemming/dictionaries:list' } } }, async () => engine.listStemmingDictionaries());
  app.get<{ Params: N }>('/stemming/dictionaries/:id', { config: { auth: { action: 'stemming/dictionaries:get' } } }, async (req) => engine.getStemmingDictionary(req.params.id));
  app.delete<{ Params: N }>('/stemming/dictionaries/:id', { config: { auth: { action: 'stemming/dictionaries:delete' } } }, async (req) => engine.deleteStemmingDictionary(req.params.id));
}
