/**
 * src/conversation/history.ts: conversations (question and answer histories) in the data
 * directory, each kept `ttl` seconds after its last message, then purged.
 *
 *   aux ['conv', id]                      {id, conversation: [{user}|{assistant}, ...], last_updated, ttl}
 *   aux ['conv_exp', expires_at, id]      1   (expiry index: last_updated + ttl)
 *
 * A conversation is not bound to a collection or a model. An expired conversation is gone
 * for every reader at once (get, list and follow-ups treat it as missing); its records are
 * removed by the next conversation write and by the server's periodic purge, which scan
 * only the expiry index up to now.
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

/** The conversation, or undefined when there is none or it has expired. */
export function findConversation(store: Store, id: string, now = nowSeconds()): Conversation | undefined {
  const c = store.aux.get([AREA, id]) as Conversation | undefined;
  return c && isLive(c, now) ? c : undefined;
}

export function getConversation(store: Store, id: string, now = nowSeconds()): Conversation {
  const c = findConversation(store, id, now);
  if (!c) throw notFound(id);
  return c;
}

/** Live conversations, most recently updated first. */
export function listConversations(store: Store, now = nowSeconds()): Conversation[] {
  const out: Conversation[] = [];
  for (const { key, value } of store.aux.getRange({ start: [AREA, ''] })) {
    if (!Array.isArray(key) || key[0] !== AREA) break;
    const c = value as Conversation;
    if (isLive(c, now)) out.push(c);
  }
  return out.sort((a, b) => b.last_updated - a.last_updated || a.id.localeCompare(b.id));
}

/** Puts a conversation and its expiry entry; inside a write transaction. */
function put(store: Store, c: Conversation, old?: Conversation): void {
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
 * Adds a question and its answer to conversation `id`, creating it (with `ttl`) when it does
 * not exist yet. A conversation that expired or was deleted since the question was asked is
 * not brought back: 404. Concurrent follow-ups each add their own pair.
 */
export function appendExchange(store: Store, id: string, question: string, answer: string, opts: { ttl: number; create: boolean }): Promise<Conversation> {
  return commit(store, { op: 'conversation.append', id, question, answer, ttl: opts.ttl, create: opts.create }, () => storeExchange(store, id, question, answer, opts));
}

function storeExchange(store: Store, id: string, question: string, answer: string, opts: { ttl: number; create: boolean }): Promise<Conversation> {
  return write(store, () => {
    const now = nowSeconds();
    purgeIn(store, now);
    const old = store.aux.get([AREA, id]) as Conversation | undefined;
    if (!old && !opts.create) throw notFound(id);
    const turns: Turn[] = [...(old?.conversation ?? []), { user: question }, { assistant: answer }];
    const c: Conversation = { conversation: turns, id, last_updated: now, ttl: old?.ttl ?? opts.ttl };
    put(store, c, old);
    return c;
  });
}

/** `PUT /conversations/:id` with `{ttl}`: the conversation is kept `ttl` seconds after its last message. */
export async function updateConversation(store: Store, id: string, body: unknown): Promise<Conversation> {
  if (!isPlainObject(body)) throw new FathomError('BAD_REQUEST', 'the request body must be a JSON object with `ttl`');
  for (const k of Object.keys(body)) if (k !== 'ttl') throw new FathomError('BAD_REQUEST', `unknown field \`${k}\`; only \`ttl\` can be changed`);
  const ttl = body.ttl;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > CONVERSATION_DEFAULTS.maxTtl) {
    throw new FathomError('BAD_REQUEST', `\`ttl\` must be a whole number of seconds from 1 to ${CONVERSATION_DEFAULTS.maxTtl}`);
  }
  return commit(store, { op: 'conversation.update', id, body }, () => storeTtl(store, id, ttl));
}

function storeTtl(store: Store, id: string, ttl: number): Promise<Conversation> {
  return write(store, () => {
    const now = nowSeconds();
    const old = store.aux.get([AREA, id]) as Conversation | undefined;
    if (!old || !isLive(old, now)) throw notFound(id);
    const c: Conversation = { ...old, ttl };
    put(store, c, old);
    purgeIn(store, now);
    return c;
  });
}

export function deleteConversation(store: Store, id: string): Promise<{ id: string }> {
  return commit(store, { op: 'conversation.delete', id }, () =>
    write(store, () => {
      const now = nowSeconds();
      const old = store.aux.get([AREA, id]) as Conversation | undefined;
      if (!old || !isLive(old, now)) throw notFound(id);
      store.aux.remove([AREA, id]);
      store.aux.remove([EXPIRY, expiresAt(old), id]);
      return { id };
    }),
  );
}
