/**
 * src/conversation/history.ts: conversations (question and answer histories) in the data
 * directory, each kept `ttl` seconds after its last message, then purged.
 *
 *   aux ['conv', id]                      {id, conversation: [{user}|{assistant}, ...], last_updated, ttl, owner}
 *   aux ['conv_exp', expires_at, id]      1   (expiry index: last_updated + ttl)
 *
 * A conversation is not bound to a collection or a model. An expired conversation is gone
 * for every reader at once (get, list and follow-ups treat it as missing); its records are
 * removed by the next conversation write and by the server's periodic purge, which scan
 * only the expiry index up to now.
 *
 * A conversation belongs to the key that started it: `owner` is that key's fingerprint
 * (src/keys/auth.ts `conversationActor`: a key id, for a scoped key its parent's id and a
 * hash of its embedded parameters; never a key value). Every read and write names its
 * actor, and a conversation the actor does not own is, to it, one that does not exist (the
 * same 404, so its existence is not told either). Admin actors (the bootstrap key, keys with
 * every action on every collection, the CLI) see every conversation; a conversation stored
 * before owners were recorded has none, so only they see it. The owner is never shown.
 */
import { commit } from '../cluster/command.js';
import { nowSeconds as clockSeconds } from '../clock.js';
import { randomUUID } from 'node:crypto';
import { CONVERSATION_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { write, type Store } from '../storage/store.js';

export type Turn = { user: string } | { assistant: string };

export interface Conversation {
  id: string;
  conversation: Turn[];
  /** Unix seconds of the last message. */
  last_updated: number;
  /** Seconds kept after `last_updated`. */
  ttl: number;
}

/** A conversation as stored: with the fingerprint of the key that started it (absent: stored before owners were). */
interface StoredConversation extends Conversation {
  owner?: string;
}

/** Who reads or writes a conversation: a key's fingerprint, and whether it sees every conversation. */
export interface ConversationActor {
  owner: string;
  admin: boolean;
}

/** The CLI and anything else working on the data directory itself. */
export const ADMIN_ACTOR: ConversationActor = { owner: 'admin', admin: true };

function visibleTo(c: StoredConversation, actor: ConversationActor): boolean {
  return actor.admin || (c.owner !== undefined && c.owner === actor.owner);
}

/** A conversation as shown: everything but its owner. */
function viewOf(c: StoredConversation): Conversation {
  return { id: c.id, conversation: c.conversation, last_updated: c.last_updated, ttl: c.ttl };
}

const AREA = 'conv';
const EXPIRY = 'conv_exp';

/** Now, in seconds (a replicated command's time while one is applied: src/clock.ts). */
export const nowSeconds = (): number => clockSeconds();

function expiresAt(c: Conversation): number {
  return c.last_updated + c.ttl;
}

function isLive(c: Conversation, now: number): boolean {
  return expiresAt(c) > now;
}

function notFound(id: string): FathomError {
  return new FathomError('NOT_FOUND', `conversation \`${id}\` not found (it may have expired)`);
}

/** The conversation as stored, when it is live and `actor` may see it. */
function findConversation(store: Store, id: string, actor: ConversationActor, now: number): StoredConversation | undefined {
  const c = store.aux.get([AREA, id]) as StoredConversation | undefined;
  return c && isLive(c, now) && visibleTo(c, actor) ? c : undefined;
}

/** The conversation; 404 when there is none, it has expired or `actor` does not own it. */
export function getConversation(store: Store, id: string, actor: ConversationActor, now = nowSeconds()): Conversation {
  const c = findConversation(store, id, actor, now);
  if (!c) throw notFound(id);
  return viewOf(c);
}

/** Live conversations `actor` may see, most recently updated first. */
export function listConversations(store: Store, actor: ConversationActor, now = nowSeconds()): Conversation[] {
  const out: Conversation[] = [];
  for (const { key, value } of store.aux.getRange({ start: [AREA, ''] })) {
    if (!Array.isArray(key) || key[0] !== AREA) break;
    const c = value as StoredConversation;
    if (isLive(c, now) && visibleTo(c, actor)) out.push(viewOf(c));
  }
  return out.sort((a, b) => b.last_updated - a.last_updated || a.id.localeCompare(b.id));
}

/** Puts a conversation and its expiry entry; inside a write transaction. */
function put(store: Store, c: StoredConversation, old?: StoredConversation): void {
  if (old) store.aux.remove([EXPIRY, expiresAt(old), old.id]);
  store.aux.put([AREA, c.id], c);
  store.aux.put([EXPIRY, expiresAt(c), c.id], 1);
}

/** Removes expired conversations; inside a write transaction. Returns how many. */
function purgeIn(store: Store, now: number): number {
  let n = 0;
  const due: Array<[string, number, string]> = [];
  for (const key of store.aux.getKeys({ start: [EXPIRY, 0], end: [EXPIRY, now + 1] })) {
    if (!Array.isArray(key) || key[0] !== EXPIRY) break;
    due.push(key as [string, number, string]);
  }
  for (const key of due) {
    store.aux.remove(key);
    const id = key[2];
    const c = store.aux.get([AREA, id]) as Conversation | undefined;
    if (c && !isLive(c, now)) {
      store.aux.remove([AREA, id]);
      n++;
    }
  }
  return n;
}

/** Deletes every expired conversation; returns how many. Writes nothing when none is due. */
export async function purgeExpiredConversations(store: Store, now?: number): Promise<number> {
  const isDue = (t: number) => {
    let due = false;
    for (const key of store.aux.getKeys({ start: [EXPIRY, 0], end: [EXPIRY, t + 1], limit: 1 })) due = Array.isArray(key) && key[0] === EXPIRY;
    return due;
  };
  if (!isDue(now ?? nowSeconds())) return 0;
  return commit(store, { op: 'conversations.purge' }, () => write(store, () => purgeIn(store, now ?? nowSeconds())));
}

/** A new conversation id. */
export function newConversationId(): string {
  return randomUUID();
}

/**
 * Adds a question and its answer to conversation `id`, creating it (with `ttl`, owned by
 * `actor`) when it does not exist yet. A conversation that expired or was deleted since the
 * question was asked is not brought back, and one `actor` does not own is not touched: 404.
 * Concurrent follow-ups each add their own pair.
 */
export function appendExchange(store: Store, id: string, question: string, answer: string, opts: { ttl: number; create: boolean; actor: ConversationActor }): Promise<Conversation> {
  const { actor } = opts;
  return commit(store, { op: 'conversation.append', id, question, answer, ttl: opts.ttl, create: opts.create, actor }, () => storeExchange(store, id, question, answer, opts));
}

function storeExchange(store: Store, id: string, question: string, answer: string, opts: { ttl: number; create: boolean; actor: ConversationActor }): Promise<Conversation> {
  return write(store, () => {
    const now = nowSeconds();
    purgeIn(store, now);
    const old = store.aux.get([AREA, id]) as StoredConversation | undefined;
    if (old ? !visibleTo(old, opts.actor) : !opts.create) throw notFound(id);
    const turns: Turn[] = [...(old?.conversation ?? []), { user: question }, { assistant: answer }];
    // (an admin's follow-up leaves the conversation its owner's)
    const owner = old ? old.owner : opts.actor.owner;
    const c: StoredConversation = { conversation: turns, id, last_updated: now, ttl: old?.ttl ?? opts.ttl, ...(owner !== undefined ? { owner } : {}) };
    put(store, c, old);
    return viewOf(c);
  });
}

/** `PUT /conversations/:id` with `{ttl}`: the conversation is kept `ttl` seconds after its last message. */
export async function updateConversation(store: Store, id: string, body: unknown, actor: ConversationActor): Promise<Conversation> {
  if (!isPlainObject(body)) throw new FathomError('BAD_REQUEST', 'the request body must be a JSON object with `ttl`');
  for (const k of Object.keys(body)) if (k !== 'ttl') throw new FathomError('BAD_REQUEST', `unknown field \`${k}\`; only \`ttl\` can be changed`);
  const ttl = body.ttl;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > CONVERSATION_DEFAULTS.maxTtl) {
    throw new FathomError('BAD_REQUEST', `\`ttl\` must be a whole number of seconds from 1 to ${CONVERSATION_DEFAULTS.maxTtl}`);
  }
  return commit(store, { op: 'conversation.update', id, body, actor }, () => storeTtl(store, id, ttl, actor));
}

function storeTtl(store: Store, id: string, ttl: number, actor: ConversationActor): Promise<Conversation> {
  return write(store, () => {
    const now = nowSeconds();
    const old = findConversation(store, id, actor, now);
    if (!old) throw notFound(id);
    const c: StoredConversation = { ...old, ttl };
    put(store, c, old);
    purgeIn(store, now);
    return viewOf(c);
  });
}

export function deleteConversation(store: Store, id: string, actor: ConversationActor): Promise<{ id: string }> {
  return commit(store, { op: 'conversation.delete', id, actor }, () =>
    write(store, () => {
      const now = nowSeconds();
      const old = findConversation(store, id, actor, now);
      if (!old) throw notFound(id);
      store.aux.remove([AREA, id]);
      store.aux.remove([EXPIRY, expiresAt(old), id]);
      return { id };
    }),
  );
}
