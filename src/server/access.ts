/**
 * src/server/access.ts: authentication and authorisation at the edge of every route.
 *
 * Each route declares in its `config` the action it performs (`documents:search`) and the
 * path parameter naming its collection, if any. The onRequest hook (before any body is
 * read) finds the key, identifies the caller and checks the action and that collection.
 * Routes whose collections are in the body (create collection, put alias, multi_search)
 * check them again in the handler with `authorizeCollections`.
 *
 * Keys come from the `X-TYPESENSE-API-KEY` or `X-SERVICE-API-KEY` header, or the
 * `x-typesense-api-key` / `x-service-api-key` query parameter (the reference's clients
 * send the parameter for GET and for multi_search POSTs, so it is read on every method).
 *
 * Every refusal is 401, as the reference answers both missing keys and keys without the
 * right scope; the message says which it was.
 */
import type { FastifyRequest } from 'fastify';
import { FathomError } from '../errors.js';
import type { Authenticator, Principal } from '../keys/auth.js';
import type { Access } from '../keys/scope.js';
import type { Engine } from '../engine.js';
import { one, type Query } from './params.js';

export interface RouteAuth {
  /** The action, or a function of the request (document writes depend on `?action=`); absent: no key needed. */
  action?: string | ((req: FastifyRequest) => string);
  /** Path parameter holding a collection name (or alias). */
  collectionParam?: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
}

/** The presented key: headers first, then the query string. */
export function presentedKey(req: FastifyRequest): string | undefined {
  const h = req.headers;
  const v = h['x-typesense-api-key'] ?? h['x-service-api-key'];
  if (typeof v === 'string' && v !== '') return v;
  if (Array.isArray(v) && v.length > 0) return v[0];
  const q = req.query as Query | undefined;
  if (!q) return undefined;
  return one(q, 'x-typesense-api-key') ?? one(q, 'x-service-api-key');
}

const REFUSALS = {
  missing: 'an API key is required: send it in the `X-TYPESENSE-API-KEY` (or `X-SERVICE-API-KEY`) header',
  invalid: 'the API key is not valid: send a valid key in the `X-TYPESENSE-API-KEY` (or `X-SERVICE-API-KEY`) header',
  expired: 'the API key has expired',
} as const;

/** A collection name together with the collection it stands for, when it is an alias. */
export function target(engine: Engine, name: string): { name: string; target?: string } {
  const t = engine.aliasTarget(name);
  return t === undefined ? { name } : { name, target: t };
}

function denied(access: Access): FathomError {
  const names = access.collections.map((c) => `\`${c.name}\``).join(', ');
  return new FathomError('UNAUTHORIZED', `this API key does not allow \`${access.action}\`${names ? ` on ${names}` : ''}`);
}

/** Checks one access for the request's caller; throws 401 when it is not allowed. */
export function authorize(auth: Authenticator, req: FastifyRequest, access: Access): void {
  const p = req.principal;
  if (!p) throw new FathomError('UNAUTHORIZED', REFUSALS.missing);
  if (!auth.authorize(p, access)) throw denied(access);
}

/** Builds the onRequest check. Hot: runs before every request's body is read. */
export function authHook(auth: Authenticator, engine: Engine) {
  return async function checkKey(req: FastifyRequest): Promise<void> {
    const rule = req.routeOptions.config?.auth;
    if (!rule?.action) return;
    const id = auth.identify(presentedKey(req));
    if (!id.ok) throw new FathomError('UNAUTHORIZED', REFUSALS[id.reason]);
    req.principal = id.principal;
    const action = typeof rule.action === 'function' ? rule.action(req) : rule.action;
    const collections = [];
    if (rule.collectionParam) {
      const name = (req.params as Record<string, string>)[rule.collectionParam];
      if (name !== undefined) collections.push(target(engine, name));
    }
    authorize(auth, req, { action, collections });
  };
}
