/**
 * Search analytics over HTTP: rules (`/analytics/rules`), events (`POST /analytics/events`),
 * `POST /analytics/flush`, `GET /analytics/status`, and the hook the search routes call
 * after answering.
 *
 * Rules are kept in the data directory and can be managed whether or not the server runs
 * with `--enable-search-analytics`; events and the recording of searches need it (a flush
 * or the status of a server without it finds nothing pending). Rules are taken in both of
 * the reference's generations' shapes (src/analytics/shapes.ts): POST takes one rule or an
 * array of them; a rule is answered in the shape it was written in, and the list (a bare
 * array, filtered by `rule_tag`) in Typesense 30's.
 *
 * Actions: `analytics/rules:create` (POST and PUT), `analytics/rules:list`,
 * `analytics/rules:get`, `analytics/rules:delete`, `analytics/events:create`,
 * `analytics/flush:create`; `analytics:*` covers them all (src/keys/scope.ts). A key's
 * collections must cover a rule's source and destination collections, and an event's
 * destination.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ANALYTICS_DEFAULTS } from '../../defaults.js';
import { FathomError } from '../../errors.js';
import { isPlainObject } from '../../json.js';
import { collectionAllowed } from '../../keys/scope.js';
import { ruleCollections, type AnalyticsRule } from '../../analytics/rules.js';
import { isV30Body, shown, toV30 } from '../../analytics/shapes.js';
import { userKey } from '../../analytics/query.js';
import { emptyStatus, type SearchAnswer } from '../../analytics/analytics.js';
import { authorize, target } from '../access.js';
import type { ServerContext } from '../context.js';
import { one, type Query } from '../params.js';

type N = { name: string };

const NOT_ENABLED = 'search analytics are not enabled on this server: start `fathom serve` with --enable-search-analytics';

/** The user a search is aggregated for: the user-id header or parameter, else the client address. */
function userOf(req: FastifyRequest): string {
  const h = req.headers['x-typesense-user-id'] ?? req.headers['x-service-user-id'];
  let id = Array.isArray(h) ? h[0] : h;
  if (id === undefined || id === '') {
    const q = req.query as Query | undefined;
    if (q) id = one(q, 'x-typesense-user-id') ?? one(q, 'x-service-user-id');
  }
  return userKey(id, req.ip);
}

/**
 * Records an answered search for the analytics rules on its collection (a no-op without
 * analytics or rules); resolves once the record is committed. Never fails the search: an
 * analytics error is logged and the answer still goes out.
 */
export function recordSearch(ctx: ServerContext, req: FastifyRequest, collection: string, params: Record<string, unknown>, answer: SearchAnswer): Promise<void> | undefined {
  const a = ctx.analytics;
  if (!a) return undefined;
  try {
    const p = a.recordSearch(collection, params, answer, userOf(req));
    return p?.catch((e) => req.log.error({ err: e }, 'recording a search for analytics failed'));
  } catch (e) {
    req.log.error({ err: e }, 'recording a search for analytics failed');
    return undefined;
  }
}

/** Every result of a multi_search that answered, recorded under its own collection. */
export async function recordMultiSearch(ctx: ServerContext, req: FastifyRequest, searches: unknown[], results: unknown[]): Promise<void> {
  if (!ctx.analytics) return;
  const waits: Promise<void>[] = [];
  searches.forEach((s, i) => {
    const r = results[i];
    if (!isPlainObject(s) || typeof s.collection !== 'string' || !isPlainObject(r) || r.error !== undefined) return;
    const p = recordSearch(ctx, req, s.collection, s, r as SearchAnswer);
    if (p) waits.push(p);
  });
  await Promise.all(waits);
}

export function analyticsRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine, auth } = ctx;
  const allowRule = (req: FastifyRequest, action: string, rule: AnalyticsRule) =>
    authorize(auth, req, { action, collections: ruleCollections(rule).map((c) => target(engine, c)) });

  /** Creates one rule of a POST body; answers it in the shape it was written in. */
  const createRule = async (req: FastifyRequest, body: unknown) => {
    if (!isPlainObject(body)) throw new FathomError('BAD_REQUEST', 'an analytics rule must be a JSON object with `name`, `type` and `params`');
    if (typeof body.name !== 'string' || body.name === '') throw new FathomError('BAD_REQUEST', 'an analytics rule needs a `name` (a non-empty string)');
    authorizeBody(req, body);
    return shown(await engine.putAnalyticsRule(body.name, body, { create: true }));
  };

  app.post('/analytics/rules', { config: { auth: { action: 'analytics/rules:create' } } }, async (req, reply) => {
    const body = req.body;
    if (!Array.isArray(body)) return reply.code(201).send(await createRule(req, body));
    // several rules (v30): each created or refused on its own, answered in order
    if (body.length > ANALYTICS_DEFAULTS.maxRulesPerRequest) throw new FathomError('BAD_REQUEST', `at most ${ANALYTICS_DEFAULTS.maxRulesPerRequest} analytics rules can be created in one request`);
    const out: unknown[] = [];
    for (const rule of body) {
      try {
        out.push(await createRule(req, rule));
      } catch (e) {
        if (!(e instanceof FathomError) || e.status >= 500) throw e;
        out.push({ error: e.message });
      }
    }
    return reply.code(201).send(out);
  });

  app.put<{ Params: N }>('/analytics/rules/:name', { config: { auth: { action: 'analytics/rules:create' } } }, async (req) => {
    authorizeBody(req, req.body);
    return shown(await engine.putAnalyticsRule(req.params.name, req.body));
  });

  app.get('/analytics/rules', { config: { auth: { action: 'analytics/rules:list' } } }, async (req) => {
    const scope = req.principal!.scope.collections;
    const tag = one(req.query as Query, 'rule_tag');
    let rules = engine.listAnalyticsRules();
    if (!scope.includes('*')) rules = rules.filter((r) => ruleCollections(r).every((c) => collectionAllowed(scope, c)));
    if (tag !== undefined) rules = rules.filter((r) => r.rule_tag === tag);
    return rules.map(toV30);
  });

  app.get<{ Params: N }>('/analytics/rules/:name', { config: { auth: { action: 'analytics/rules:get' } } }, async (req) => {
    const rule = engine.getAnalyticsRule(req.params.name);
    allowRule(req, 'analytics/rules:get', rule);
    return shown(rule);
  });

  app.delete<{ Params: N }>('/analytics/rules/:name', { config: { auth: { action: 'analytics/rules:delete' } } }, async (req) => {
    allowRule(req, 'analytics/rules:delete', engine.getAnalyticsRule(req.params.name));
    return engine.deleteAnalyticsRule(req.params.name);
  });

  app.post('/analytics/events', { config: { auth: { action: 'analytics/events:create' } } }, async (req, reply) => {
    const a = ctx.analytics;
    if (!a) throw new FathomError('BAD_REQUEST', NOT_ENABLED);
    const body = req.body;
    // The key must cover the collection the event's rule writes to.
    const name = isPlainObject(body) ? body.name : undefined;
    const rule = typeof name === 'string' ? engine.analyticsRuleOfEvent(name) : undefined;
    if (rule) authorize(auth, req, { action: 'analytics/events:create', collections: [target(engine, rule.params.destination.collection)] });
    await a.recordEvent(body);
    return reply.code(201).send({ ok: true });
  });

  // without analytics there is nothing pending: the reference answers {"ok": true} all the same
  app.post('/analytics/flush', { config: { auth: { action: 'analytics/flush:create' } } }, async () => {
    const a = ctx.analytics;
    if (!a) return { ok: true };
    return { ok: true, ...(await a.flush()) };
  });

  app.get('/analytics/status', { config: { auth: { action: 'analytics/status:list' } } }, async () => ctx.analytics?.status() ?? emptyStatus());

  /** A rule body's collections (either generation's shape) must be in the key's scope (checked before validating the rest). */
  function authorizeBody(req: FastifyRequest, body: unknown): void {
    if (!isPlainObject(body)) return; // the rule check reports it
    const p = isPlainObject(body.params) ? body.params : {};
    const names: string[] = [];
    if (isV30Body(body)) {
      if (typeof body.collection === 'string') names.push(body.collection);
      if (typeof p.destination_collection === 'string') names.push(p.destination_collection);
    } else {
      if (isPlainObject(p.source) && Array.isArray(p.source.collections)) for (const c of p.source.collections) if (typeof c === 'string') names.push(c);
      if (isPlainObject(p.destination) && typeof p.destination.collection === 'string') names.push(p.destination.collection);
    }
    authorize(auth, req, { action: 'analytics/rules:create', collections: names.map((c) => target(engine, c)) });
  }
}
