/**
 * src/keys/auth.ts: who is calling, and may they do this?
 *
 * `identify` turns a presented key value into a Principal: the bootstrap key given at
 * start-up (`--api-key`, never stored), a stored key, or a scoped search key. `authorize`
 * checks a Principal against one Access (action + collections). Both answer with a
 * reason instead of throwing, so the HTTP layer picks the status and message.
 *
 * Hot: runs on every request. Costs one SHA-256 and two LMDB reads for a stored key; a
 * scoped key adds one HMAC per candidate parent. Everything is read from LMDB on each
 * call, so keys created or deleted by another process (or by `fathom keys`) take effect
 * at once.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Store } from '../storage/store.js';
import { findKeyByValue, SEARCH_ACTION } from './keys.js';
import { allows, type Access, type Scope } from './scope.js';
import { multiSearchLimit, paramsFingerprint, verifyScopedKey } from './scoped.js';
import { withPreset } from '../presets/presets.js';
import type { SearchScope } from '../query/scope.js';
import type { ConversationActor } from '../conversation/history.js';

export interface Principal {
  kind: 'bootstrap' | 'key' | 'scoped';
  /** Stored key id (for a scoped key, its parent's). */
  keyId?: number;
  scope: Scope;
  /** Search parameters forced by a scoped key. */
  embedded?: Record<string, unknown>;
  /** Searches allowed in one multi_search (scoped keys only). */
  multiSearchLimit?: number;
  /**
   * Who the caller is, as the owner of what it creates (conversations): `key:<id>`, for a
   * scoped key `scoped:<parent id>:<paramsFingerprint>`, `admin` for the bootstrap key. Never
   * a key value.
   */
  owner: string;
}

export type Identity = { ok: true; principal: Principal } | { ok: false; reason: 'missing' | 'invalid' | 'expired' };

const ADMIN: Scope = { actions: ['*'], collections: ['*'] };

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export class Authenticator {
  private readonly bootstrapHash?: Buffer;

  constructor(
    private readonly store: Store,
    bootstrapKey?: string,
  ) {
    if (bootstrapKey) this.bootstrapHash = sha256(bootstrapKey);
  }

  identify(presented: string | undefined, nowSeconds = Date.now() / 1000): Identity {
    if (presented === undefined || presented === '') return { ok: false, reason: 'missing' };
    if (this.bootstrapHash && timingSafeEqual(sha256(presented), this.bootstrapHash)) {
      return { ok: true, principal: { kind: 'bootstrap', scope: ADMIN, owner: 'admin' } };
    }
    const rec = findKeyByValue(this.store, presented);
    if (rec) {
      if (nowSeconds > rec.expires_at) return { ok: false, reason: 'expired' };
      return { ok: true, principal: { kind: 'key', keyId: rec.id, scope: rec, owner: `key:${rec.id}` } };
    }
    const scoped = verifyScopedKey(this.store, presented);
    if (!scoped) return { ok: false, reason: 'invalid' };
    if (nowSeconds > scoped.expiresAt) return { ok: false, reason: 'expired' };
    return {
      ok: true,
      principal: {
        kind: 'scoped',
        keyId: scoped.parent.id,
        scope: scoped.parent,
        // A preset the key embeds is part of the key: its parameters become the key's own
        // (below those the key names itself), so its filter and field bounds hold as the key's
        // do. Laid under the request's parameters instead, as the reference does, a request's
        // own filter_by or exclude_fields would replace them.
        embedded: withPreset(this.store, scoped.params),
        multiSearchLimit: multiSearchLimit(scoped.params),
        owner: `scoped:${scoped.parent.id}:${paramsFingerprint(scoped.params)}`,
      },
    };
  }

  /** True when the principal may perform `access`. Scoped keys only ever search. */
  authorize(p: Principal, access: Access): boolean {
    if (p.kind === 'scoped' && access.action !== SEARCH_ACTION) return false;
    return allows(p.scope, access);
  }
}

/**
 * The actions and collection patterns of a key that may not reach every collection (joins
 * reach only the collections they allow: src/join/access.ts); undefined for one that may.
 * Only the patterns are copied: a key record also holds the parent's value.
 */
export function keyScope(p: Principal | null): Scope | undefined {
  if (!p || p.kind === 'bootstrap' || p.scope.collections.includes('*')) return undefined;
  return { actions: [...p.scope.actions], collections: [...p.scope.collections] };
}

/** What a search made by `p` may see: `embedded`, a scoped key's bounds (applyEmbedded), with keyScope(p). Undefined: nothing bounded. */
export function searchScope(p: Principal | null, embedded: SearchScope | undefined): SearchScope | undefined {
  const access = keyScope(p);
  return access ? { ...embedded, access } : embedded;
}

/**
 * The principal as the actor of a conversation request: it sees the conversations it
 * started, and an admin (the bootstrap key, or a stored key with every action on every
 * collection) sees all of them.
 */
export function conversationActor(p: Principal): ConversationActor {
  const admin = p.kind === 'bootstrap' || (p.kind === 'key' && p.scope.actions.includes('*') && p.scope.collections.includes('*'));
  return { owner: p.owner, admin };
}
