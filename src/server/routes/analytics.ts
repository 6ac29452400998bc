/**
 * Search analytics over HTTP: rules (`/analytics/rules`), events (`POST /analytics/events`),
 * `POST /analytics/flush`, and the hook the search routes call after answering.
 *
 * Rules are kept in the data directory and can be managed whether or not the server runs
 * with `--enable-search-analytics`; events, flushes and the recording of searches need it.
 *
 * Actions: `analytics/rules:create` (POST and PUT), `analytics/rules:list`,
 * `analytics/rules:get`, `analytics/rules:delete`, `analytics/events:create`,
 * `analytics/flush:create`; `analytics:*` covers them all (src/keys/scope.ts). A key's
 * collections must cover a rule's source and destination collections, and an event's
 * destination.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { FathomError } from '../../errors.js';
import { isPlainObject } from '../../json.js';
import { collectionAllowed } from '../../keys/scope.js';
import { ruleCollections, type AnalyticsRule } from '../../analytics/rules.js';
import { userKey } from '../../analytics/query.js';
import type { SearchAnswer } from '../../analytics/analytics.js';
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

  app.post('/analytics/rules', { config: { auth: { action: 'analytics/rules:create' } } }, async (req, reply) => {
    const body = req.body;
    if (!isPlainObject(body)) throw new FathomError('BAD_REQUEST', 'an analytics rule must be a JSON object with `name`, `type` and `params`');
    if (typeof body.name !== 'string' || body.name === '') throw new FathomError('BAD_REQUEST', 'an analytics rule needs a `name` (a non-empty string)');
    authorizeBody(req, body);
    return reply.code(201).send(await engine.putAnalyticsRule(body.name, body, { create: true }));
  });

  app.put<{ Params: N }>('/analytics/rules/:name', { config: { auth: { action: 'analytics/rules:create' } } }, async (req) => {
    authorizeBody(req, req.body);
    return engine.putAnalyticsRule(req.params.name, req.body);
  });

  app.get('/analytics/rules', { config: { auth: { action: 'analytics/rules:list' } } }, async (req) => {
    const scope = req.principal!.scope.collections;
    const rules = engine.listAnalyticsRules();
    return { rules: scope.includes('*') ? rules : rules.filter((r) => ruleCollections(r).every((c) => collectionAllowed(scope, c))) };
  });

  app.get<{ Params: N }>('/analytics/rules/:name', { config: { auth: { action: 'analytics/rules:get' } } }, async (req) => {
    const rule = engine.getAnalyticsRule(req.params.name);
    allowRule(req, 'analytics/rules:get', rule);
    return rule;
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

  app.post('/analytics/flush', { config: { auth: { action: 'analytics/flush:create' } } }, async () => {
    const a = ctx.analytics;
    if (!a) throw new FathomError('BAD_REQUEST', NOT_ENABLED);
    return { ok: true, ...(await a.flush()) };
  });

  /** A rule body's collections must be in the key's scope (checked before validating the rest). */
  function authorizeBody(req: FastifyRequest, body: unknown): void {
    if (!isPlainObject(body) || !isPlainObject(body.params)) return; // the rule check reports it
    const p = body.params;
    const names: string[] = [];
    if (isPlainObject(p.source) && Array.isArray(p.source.collections)) for (const c of p.source.collections) if (typeof c === 'string') names.push(c);
    if (isPlainObject(p.destination) && typeof p.destination.collection === 'string') names.push(p.destination.collection);
    authorize(auth, req, { action: 'analytics/rules:create', collections: names.map((c) => target(engine, c)) });
  }
}
