/**
 * Search: GET /collections/:collection/documents/search and POST /multi_search.
 *
 * A scoped search key's embedded parameters are forced onto every search here
 * (src/keys/scoped.ts `applyEmbedded`); its filter and field bounds travel apart from the
 * request's parameters, as a scope the search enforces on parsed trees (src/query/scope.ts),
 * so no request text can widen what the key may see. A key that may not search every
 * collection carries its patterns in that scope too: joins reach only what they allow.
 *
 * Presets (src/presets) are laid under a request's parameters here, before the key's are
 * forced on (so the key's win over both) and before a multi_search's collections are
 * authorised (a preset may name the collection).
 */
import type { FastifyInstance } from 'fastify';
import { FathomError } from '../../errors.js';
import { isPlainObject, stringifyJson } from '../../json.js';
import { applyEmbedded } from '../../keys/scoped.js';
import type { SearchScope } from '../../query/scope.js';
import { SEARCH_ACTION } from '../../keys/keys.js';
import { searchScope, type Principal } from '../../keys/auth.js';
import { authorize, target } from '../access.js';
import type { ServerContext } from '../context.js';
import { withoutKeys, type Query } from '../params.js';
import { conversationalMultiSearch, isConversationalMultiSearch } from './conversations.js';
import { recordMultiSearch, recordSearch } from './analytics.js';
import { UNION_PAGING } from '../../search/union.js';

type P = { collection: string };

/** A search's parameters and scope under the request's key (the executor's last two arguments). */
function scoped(params: Record<string, unknown>, p: Principal | null): [Record<string, unknown>, SearchScope | undefined] {
  if (!p?.embedded) return [params, searchScope(p, undefined)];
  const r = applyEmbedded(params, p.embedded);
  return [r.params, searchScope(p, r.scope)];
}

export function searchRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine, auth } = ctx;

  // Hot: the route the daemon exists for. Parameters go to the engine as strings; the
  // answer is serialised here once and sent as a string.
  app.get<{ Params: P }>(
    '/collections/:collection/documents/search',
    { config: { auth: { action: SEARCH_ACTION, collectionParam: 'collection' } } },
    async (req, reply) => {
      const params = engine.applyPreset(withoutKeys(req.query as Query));
      const [p, scope] = scoped(params, req.principal);
      const json = await ctx.search(req.params.collection, p, scope);
      const recorded = recordSearch(ctx, req, req.params.collection, p, json);
      if (recorded) await recorded;
      return reply.type('application/json; charset=utf-8').send(json);
    },
  );

  app.post('/multi_search', { config: { auth: { action: SEARCH_ACTION } } }, async (req, reply) => {
    const body = req.body;
    if (!isPlainObject(body) || !Array.isArray(body.searches)) {
      throw new FathomError('BAD_REQUEST', 'the request body must be a JSON object with a `searches` array');
    }
    let common = withoutKeys(req.query as Query);
    let list: unknown[] = body.searches;
    // an empty `searches` and a multi_search preset in the query string: the preset's searches
    const fromPreset = list.length === 0 ? engine.presetSearches(common) : undefined;
    if (fromPreset) {
      list = fromPreset;
      const { preset: _preset, ...rest } = common;
      common = rest;
    }
    const p = req.principal!;
    if (p.multiSearchLimit !== undefined && list.length > p.multiSearchLimit) {
      throw new FathomError('BAD_REQUEST', `this API key allows at most ${p.multiSearchLimit} searches in one multi_search`);
    }
    // Every collection named must be allowed, or the whole request is refused.
    const scope = scoped({}, p)[1];
    const searches = list.map((s: unknown) => {
      if (!isPlainObject(s)) return s; // the engine reports it in its own slot
      const merged = { ...common, ...s };
      let params: Record<string, unknown>;
      try {
        // the request's preset under its parameters, the key's parameters over both (a preset
        // the key embeds is already part of them: src/keys/auth.ts)
        const own = engine.applyPreset(merged);
        params = p.embedded ? applyEmbedded(own, p.embedded).params : own;
      } catch {
        // a preset that cannot apply: the engine reports it in the search's slot
        if (typeof merged.collection === 'string') authorize(auth, req, { action: SEARCH_ACTION, collections: [target(engine, merged.collection)] });
        return merged;
      }
      if (typeof params.collection === 'string') authorize(auth, req, { action: SEARCH_ACTION, collections: [target(engine, params.collection)] });
      return params;
    });
    if (body.union === true || body.union === 'true') {
      // paging is the request's alone (query string, or the body's top level); the searches' own is
      // ignored, but for limit_hits: the union keeps to the request's and every search's own (a
      // scoped key's is forced onto each search above, so no request can widen it)
      const paging: Record<string, unknown> = {};
      for (const k of [...UNION_PAGING, 'limit_hits']) {
        const v = common[k] ?? body[k];
        if (v !== undefined) paging[k] = v;
      }
      const own = searches.map((s: unknown) => {
        if (!isPlainObject(s)) return s;
        const c = { ...s };
        for (const k of UNION_PAGING) delete c[k];
        return c;
      });
      const union = await engine.unionSearch(own, paging, {}, scope, { removeDuplicates: body.remove_duplicates !== false && body.remove_duplicates !== 'false' });
      return reply.type('application/json; charset=utf-8').send(stringifyJson(union));
    }
    if (isConversationalMultiSearch(req)) return conversationalMultiSearch(ctx, req, reply, searches, scope);
    const result = await engine.multiSearch(searches, {}, scope);
    if (ctx.analytics) await recordMultiSearch(ctx, req, searches, result.results);
    return reply.type('application/json; charset=utf-8').send(stringifyJson(result));
  });
}
