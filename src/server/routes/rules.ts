/**
 * Synonyms, curation rules and presets, in both of the reference's API generations:
 *
 *   Typesense <= 29, per collection (key actions scoped by the collection, as documents are)
 *     PUT/GET/DELETE /collections/:c/synonyms/:id, GET /collections/:c/synonyms   synonyms:*
 *     PUT/GET/DELETE /collections/:c/overrides/:id, GET /collections/:c/overrides overrides:*
 *   Typesense 30, named sets that collections link (global: no collection scope)
 *     PUT/GET/DELETE /synonym_sets/:name, GET /synonym_sets                        synonym_sets:*
 *     PUT/GET/DELETE /synonym_sets/:name/items/:id, GET .../items                  synonym_sets/items:*
 *     the same under /curation_sets                                                curation_sets:*
 *   Presets
 *     PUT/GET/DELETE /presets/:name, GET /presets                                  presets:*
 *
 * Each route is one engine call; the engine validates (400 naming what is wrong) and
 * replicates the write.
 */
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import type { Rules, RuleItem } from '../../rulesets/rulesets.js';

type C = { collection: string };
type CI = { collection: string; id: string };
type N = { name: string };
type NI = { name: string; id: string };

/** The per-collection routes of one kind (`/collections/:collection/<path>`). */
function ownRoutes(app: FastifyInstance, rules: () => Rules<RuleItem>, path: string, resource: string, listKey: string): void {
  const base = `/collections/:collection/${path}`;
  const auth = (verb: string) => ({ config: { auth: { action: `${resource}:${verb}`, collectionParam: 'collection' } } });
  app.get<{ Params: C }>(base, auth('list'), async (req) => ({ [listKey]: rules().list(req.params.collection) }));
  app.get<{ Params: CI }>(`${base}/:id`, auth('get'), async (req) => rules().get(req.params.collection, req.params.id));
  app.put<{ Params: CI }>(`${base}/:id`, auth('create'), async (req) => rules().put(req.params.collection, req.params.id, req.body));
  app.delete<{ Params: CI }>(`${base}/:id`, auth('delete'), async (req) => rules().delete(req.params.collection, req.params.id));
}

/** The set routes of one kind (`/<path>/:name` and its items). */
function setRoutes(app: FastifyInstance, rules: () => Rules<RuleItem>, path: string): void {
  const auth = (action: string) => ({ config: { auth: { action } } });
  app.get(`/${path}`, auth(`${path}:list`), async () => rules().listSets());
  app.get<{ Params: N }>(`/${path}/:name`, auth(`${path}:get`), async (req) => rules().getSet(req.params.name));
  app.put<{ Params: N }>(`/${path}/:name`, auth(`${path}:create`), async (req) => rules().putSet(req.params.name, req.body));
  app.delete<{ Params: N }>(`/${path}/:name`, auth(`${path}:delete`), async (req) => rules().deleteSet(req.params.name));
  app.get<{ Params: N }>(`/${path}/:name/items`, auth(`${path}/items:list`), async (req) => rules().listItems(req.params.name));
  app.get<{ Params: NI }>(`/${path}/:name/items/:id`, auth(`${path}/items:get`), async (req) => rules().getItem(req.params.name, req.params.id));
  app.put<{ Params: NI }>(`/${path}/:name/items/:id`, auth(`${path}/items:upsert`), async (req) => rules().putItem(req.params.name, req.params.id, req.body));
  app.delete<{ Params: NI }>(`/${path}/:name/items/:id`, auth(`${path}/items:delete`), async (req) => rules().deleteItem(req.params.name, req.params.id));
}

export function ruleRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine } = ctx;
  const synonyms = () => engine.synonyms() as unknown as Rules<RuleItem>;
  const curation = () => engine.curation() as unknown as Rules<RuleItem>;
  ownRoutes(app, synonyms, 'synonyms', 'synonyms', 'synonyms');
  ownRoutes(app, curation, 'overrides', 'overrides', 'overrides');
  setRoutes(app, synonyms, 'synonym_sets');
  setRoutes(app, curation, 'curation_sets');
}

export function presetRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine } = ctx;
  const auth = (action: string) => ({ config: { auth: { action } } });
  app.get('/presets', auth('presets:list'), async () => ({ presets: engine.listPresets() }));
  app.get<{ Params: N }>('/presets/:name', auth('presets:get'), async (req) => engine.getPreset(req.params.name));
  app.put<{ Params: N }>('/presets/:name', auth('presets:upsert'), async (req) => engine.putPreset(req.params.name, req.body));
  app.delete<{ Params: N }>('/presets/:name', auth('presets:delete'), async (req) => engine.deletePreset(req.params.name));
}
