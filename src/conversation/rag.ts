/**
 * src/conversation/rag.ts: conversational search, an answer grounded in search results.
 *
 *   request: q, conversation_model_id, [conversation_id], searches (collection + query_by
 *            with an auto-embedding field each)
 *
 *   follow-up? ── yes: LLM call 1 rewrites q into a standalone question from the history
 *       │
 *   run every search with the (standalone) question as q
 *       │
 *   context: the top hits of each search in turn, without vector and image fields, in budget
 *       │
 *   LLM call 2 answers the question from the context (whole, or streamed piece by piece)
 *       │
 *   the history gets {user: q}, {assistant: answer}; the response carries `results` and
 *   `conversation: {answer, conversation_history, conversation_id, query}`
 *
 * Nothing is stored unless the answer arrived whole: a failed or abandoned call leaves the
 * conversation as it was.
 */
import type { SearchScope } from '../query/scope.js';
import type { Engine } from '../engine.js';
import { FathomError } from '../errors.js';
import { setOwn, stringifyJson } from '../json.js';
import { getSchema } from '../collection/catalog.js';
import { parseFieldList } from '../query/fields.js';
import { clientFor } from '../llm/registry.js';
import type { SearchResponse } from '../search/search.js';
import { appendExchange, getConversation, newConversationId, type Conversation, type ConversationActor } from './history.js';
import { conversationModels } from './models.js';
import { answerRequest, standaloneRequest, type ContextSource } from './prompts.js';

/** Parameters that steer the conversation and are not passed on to the searches. */
export const CONVERSATION_PARAMS = ['conversation', 'conversation_model_id', 'conversation_id', 'conversation_stream'] as const;

export interface ConversationRequest {
  /** The user's question. */
  q: string;
  modelId: string;
  /** Continues this conversation (a follow-up). */
  conversationId?: string;
  /** One parameter set per search, each with `collection` and `query_by`. */
  searches: Record<string, unknown>[];
  /** Leave `conversation_history` out of the response. */
  excludeHistory?: boolean;
  /** A scoped key's bounds: every search runs under them, so the context never holds more than the key may see. */
  scope?: SearchScope;
  /** Who asks: a follow-up continues only a conversation this actor may see, and a new one is its own. */
  actor: ConversationActor;
}

export interface ConversationOptions {
  fetch?: typeof fetch;
  /** Told which documents made it into the answer's context, per search (`fathom ask` prints them). */
  onContext?(sources: Array<{ collection: string; ids: string[] }>): void;
  /**
   * Stream the answer: `onStart` runs once the provider has accepted the answer call (so any
   * earlier failure is still an ordinary error), `onPiece` for each piece of text.
   */
  stream?: {
    onStart(conversationId: string): void;
    onPiece(text: string): void;
    /** Aborted when the asker went away: the provider call is cancelled, nothing stored. */
    signal?: AbortSignal;
  };
}

export interface ConversationAnswer {
  answer: string;
  conversation_history?: Conversation;
  conversation_id: string;
  query: string;
}

export interface ConversationResponse {
  conversation: ConversationAnswer;
  results: SearchResponse[];
}

function truthy(v: unknown): boolean {
  return v === true || v === 'true' || v === '1' || v === 1;
}

function bad(msg: string): never {
  throw new FathomError('BAD_REQUEST', msg);
}

/** True when a multi_search asks for a conversation (query string or any search). */
export function wantsConversation(common: Record<string, unknown>, searches: unknown[]): boolean {
  if (truthy(common.conversation)) return true;
  return searches.some((s) => s !== null && typeof s === 'object' && truthy((s as Record<string, unknown>).conversation));
}

/** `exclude_fields` names `conversation_history`. */
function excludesHistory(v: unknown): boolean {
  return typeof v === 'string' && (parseFieldList(v) ?? []).includes('conversation_history');
}

/**
 * A conversational multi_search as a ConversationRequest. `common`: the query-string
 * parameters; `bodySearches`: the searches as sent; `searches`: the same with `common` (and
 * a scoped key's parameters) applied.
 */
export function conversationRequest(common: Record<string, unknown>, bodySearches: unknown[], searches: unknown[]): Omit<ConversationRequest, 'actor'> {
  if (searches.length === 0) bad('a conversational search needs at least one search in `searches`');
  bodySearches.forEach((s, i) => {
    if (s !== null && typeof s === 'object' && (s as Record<string, unknown>).q !== undefined) {
      bad(`search ${i + 1}: with \`conversation=true\`, send \`q\` in the query string (\`/multi_search?q=...\`), not inside a search`);
    }
  });
  const q = common.q;
  if (typeof q !== 'string' || q.trim() === '' || q.trim() === '*') bad('a conversational search needs the question in `q`, in the query string (`/multi_search?q=...&conversation=true`)');
  const pick = (k: string): string | undefined => {
    const all = [common, ...searches.filter((s): s is Record<string, unknown> => s !== null && typeof s === 'object')];
    for (const p of all) {
      const v = p[k];
      if (v !== undefined && v !== null && v !== '') {
        if (typeof v !== 'string') bad(`\`${k}\` must be a string`);
        return v;
      }
    }
    return undefined;
  };
  const modelId = pick('conversation_model_id');
  if (!modelId) bad('`conversation_model_id` is required with `conversation=true`: the id of a conversation model (POST /conversations/models)');
  const conversationId = pick('conversation_id');
  const plain = searches.map((s, i) => {
    if (s === null || typeof s !== 'object' || Array.isArray(s)) bad(`search ${i + 1} must be a JSON object`);
    return s as Record<string, unknown>;
  });
  const excludeHistory = excludesHistory(common.exclude_fields) || plain.some((s) => excludesHistory(s.exclude_fields));
  return { q, modelId, ...(conversationId ? { conversationId } : {}), searches: plain, excludeHistory };
}

/** The search parameters to run: conversation parameters removed, the question as `q`. */
function searchParams(s: Record<string, unknown>, question: string): Record<string, unknown> {
  const p: Record<string, unknown> = { ...s, q: question };
  for (const k of CONVERSATION_PARAMS) delete p[k];
  if (typeof p.exclude_fields === 'string') {
    const rest = (parseFieldList(p.exclude_fields) ?? []).filter((f) => f !== 'conversation_history');
    if (rest.length > 0) p.exclude_fields = rest.join(',');
    else delete p.exclude_fields;
  }
  return p;
}

/** Checks each search before any LLM call: a collection, and a query_by with an auto-embedding field. */
function checkSearches(engine: Engine, searches: Record<string, unknown>[]): void {
  searches.forEach((s, i) => {
    const name = s.collection;
    if (typeof name !== 'string' || name === '') bad(`search ${i + 1} needs a \`collection\``);
    let schema;
    try {
      schema = getSchema(engine.store, name);
    } catch (e) {
      if (e instanceof FathomError) throw new FathomError(e.code, `search ${i + 1}: ${e.message}`);
      throw e;
    }
    const queryBy = parseFieldList(typeof s.query_by === 'string' ? s.query_by : Array.isArray(s.query_by) ? s.query_by.join(',') : undefined) ?? [];
    const embedded = schema.fields.filter((f) => f.embed !== undefined && f.id > 0).map((f) => f.name);
    if (!queryBy.some((f) => schema.field(f)?.embed !== undefined)) {
      bad(
        `search ${i + 1} (collection \`${name}\`): conversational search needs \`query_by\` to include an auto-embedding field` +
          (embedded.length ? ` (this collection has ${embedded.map((f) => `\`${f}\``).join(', ')})` : '; this collection has none'),
      );
    }
  });
}

/** The hits of a search as context lines: documents without vector and image fields. */
function contextLines(engine: Engine, collection: string, res: SearchResponse): string[] {
  const schema = getSchema(engine.store, collection);
  const hits = res.hits ?? (res.grouped_hits ?? []).flatMap((g) => g.hits);
  return hits.map((h) => {
    const doc: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(h.document)) {
      const f = schema.resolve(k);
      if (f && (f.kind === 'vector' || f.kind === 'image')) continue;
      setOwn(doc, k, v);
    }
    return stringifyJson(doc);
  });
}

/** Runs one conversational search. Errors are FathomErrors with the right status. */
export async function converse(engine: Engine, req: ConversationRequest, opts: ConversationOptions = {}): Promise<ConversationResponse> {
  const model = conversationModels(engine.store).load(req.modelId);
  const client = clientFor(model, { fetch: opts.fetch });
  checkSearches(engine, req.searches);
  const previous = req.conversationId !== undefined ? getConversation(engine.store, req.conversationId, req.actor) : undefined;

  let question = req.q;
  if (previous && previous.conversation.length > 0) {
    const standalone = (await client.complete(standaloneRequest(client, previous.conversation, req.q, model.max_bytes))).trim();
    if (standalone === '') throw new FathomError('LLM_ERROR', `${client.label} error: the standalone question came back empty (malformed answer)`);
    question = standalone;
  }

  const results: SearchResponse[] = [];
  const sources: ContextSource[] = [];
  for (let i = 0; i < req.searches.length; i++) {
    const s = req.searches[i]!;
    const collection = s.collection as string;
    let res: SearchResponse;
    try {
      res = await engine.search(collection, searchParams(s, question), req.scope);
    } catch (e) {
      if (e instanceof FathomError) throw new FathomError(e.code, `search ${i + 1} (collection \`${collection}\`): ${e.message}`);
      throw e;
    }
    results.push(res);
    sources.push({ ...(req.searches.length > 1 ? { label: `[${collection}]` } : {}), lines: contextLines(engine, collection, res) });
  }

  const { request, used } = answerRequest(client, model.system_prompt, sources, question, model.max_bytes, !!opts.stream);
  opts.onContext?.(
    results.map((res, i) => ({
      collection: req.searches[i]!.collection as string,
      ids: (res.hits ?? (res.grouped_hits ?? []).flatMap((g) => g.hits)).slice(0, used[i]).map((h) => String(h.document.id)),
    })),
  );
  const id = req.conversationId ?? newConversationId();
  let answer: string;
  if (opts.stream) {
    const s = opts.stream;
    if (s.signal?.aborted) throw new FathomError('BAD_REQUEST', 'the request was cancelled');
    const pieces = await client.stream(request);
    const onAbort = () => pieces.cancel();
    s.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      s.onStart(id);
      answer = '';
      for await (const piece of pieces) {
        answer += piece;
        s.onPiece(piece);
      }
    } finally {
      s.signal?.removeEventListener('abort', onAbort);
    }
    if (s.signal?.aborted) throw new FathomError('BAD_REQUEST', 'the request was cancelled');
  } else {
    answer = await client.complete(request);
  }

  const history = await appendExchange(engine.store, id, req.q, answer, { ttl: model.ttl, create: previous === undefined, actor: req.actor });
  return {
    conversation: {
      answer,
      ...(req.excludeHistory ? {} : { conversation_history: history }),
      conversation_id: id,
      query: req.q,
    },
    results,
  };
}
