/**
 * Conversational search over HTTP: conversation models, conversations, natural-language
 * search models, and the conversational branch of POST /multi_search.
 *
 *   POST/GET /conversations/models, GET/PUT/DELETE /conversations/models/:id
 *   GET /conversations, GET/PUT/DELETE /conversations/:id
 *   POST/GET /nl_search_models, GET/PUT/DELETE /nl_search_models/:id
 *
 * Actions for scoped keys: `conversations/models:create|list|get|update|delete`,
 * `conversations:list|get|update|delete`, `nl_search_models:create|list|get|update|delete`.
 * A conversational multi_search needs only `documents:search` on its collections, like any search.
 * A conversation belongs to the key that started it (src/conversation/history.ts): to any
 * other key but an admin it does not exist, on a follow-up as on these routes.
 *
 * Streaming (`conversation_stream=true`): once the provider has accepted the answer call the
 * reply becomes server-sent events (`text/event-stream`): one `data: {"conversation_id",
 * "message"}` event per piece of the answer, then `data: <the whole response>`, then
 * `data: [DONE]`. A failure before that is an ordinary `{"message"}` error; a failure
 * during the stream ends it with `event: error` and `data: {"message": ...}` (nothing stored).
 */
import type { SearchScope } from '../../query/scope.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isPlainObject, stringifyJson } from '../../json.js';
import { conversationRequest, converse, wantsConversation } from '../../conversation/rag.js';
import { toHttpError } from '../errors.js';
import type { ServerContext } from '../context.js';
import { withoutKeys, type Query } from '../params.js';
import { conversationActor } from '../../keys/auth.js';
import type { ConversationActor } from '../../conversation/history.js';

type I = { id: string };

const auth = (action: string) => ({ config: { auth: { action } } });

/** The request's key as a conversation's actor (every route here needs a key, so there is one). */
const actor = (req: FastifyRequest): ConversationActor => conversationActor(req.principal!);

export function conversationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine } = ctx;
  const models = engine.conversationModels();
  app.post('/conversations/models', auth('conversations/models:create'), async (req) => models.create(req.body));
  app.get('/conversations/models', auth('conversations/models:list'), async () => models.list());
  app.get<{ Params: I }>('/conversations/models/:id', auth('conversations/models:get'), async (req) => models.get(req.params.id));
  app.put<{ Params: I }>('/conversations/models/:id', auth('conversations/models:update'), async (req) => models.update(req.params.id, req.body));
  app.delete<{ Params: I }>('/conversations/models/:id', auth('conversations/models:delete'), async (req) => models.delete(req.params.id));

  // a key sees the conversations it started; any other is 404 to it (admins see all)
  app.get('/conversations', auth('conversations:list'), async (req) => ({ conversations: engine.listConversations(actor(req)) }));
  app.get<{ Params: I }>('/conversations/:id', auth('conversations:get'), async (req) => engine.getConversation(req.params.id, actor(req)));
  app.put<{ Params: I }>('/conversations/:id', auth('conversations:update'), async (req) => engine.updateConversation(req.params.id, req.body, actor(req)));
  app.delete<{ Params: I }>('/conversations/:id', auth('conversations:delete'), async (req) => engine.deleteConversation(req.params.id, actor(req)));

  const nl = engine.nlSearchModels();
  app.post('/nl_search_models', auth('nl_search_models:create'), async (req) => nl.create(req.body));
  app.get('/nl_search_models', auth('nl_search_models:list'), async () => nl.list());
  app.get<{ Params: I }>('/nl_search_models/:id', auth('nl_search_models:get'), async (req) => nl.get(req.params.id));
  app.put<{ Params: I }>('/nl_search_models/:id', auth('nl_search_models:update'), async (req) => nl.update(req.params.id, req.body));
  app.delete<{ Params: I }>('/nl_search_models/:id', auth('nl_search_models:delete'), async (req) => nl.delete(req.params.id));
}

/** True when a POST /multi_search asks for a conversational answer. */
export function isConversationalMultiSearch(req: FastifyRequest): boolean {
  const body = req.body;
  const searches = isPlainObject(body) && Array.isArray(body.searches) ? body.searches : [];
  return wantsConversation(req.query as Record<string, unknown>, searches);
}

function truthy(v: unknown): boolean {
  return v === true || v === 'true' || v === '1';
}

/**
 * Answers a conversational POST /multi_search. `searches`: the body's searches with the
 * query-string parameters and any scoped key's parameters already applied (search.ts);
 * `scope`: the key's bounds, which every search of the conversation runs under.
 */
export async function conversationalMultiSearch(ctx: ServerContext, req: FastifyRequest, reply: FastifyReply, searches: unknown[], scope?: SearchScope): Promise<FastifyReply> {
  const common = withoutKeys(req.query as Query) as Record<string, unknown>;
  const body = req.body as { searches: unknown[] };
  const creq = { ...conversationRequest(common, body.searches, searches), ...(scope ? { scope } : {}), actor: actor(req) };
  if (!truthy(common.conversation_stream)) {
    const res = await converse(ctx.engine, creq);
    return reply.type('application/json; charset=utf-8').send(stringifyJson(res));
  }

  const gone = new AbortController();
  const raw = reply.raw;
  const onClose = () => {
    if (!raw.writableEnded) gone.abort();
  };
  raw.on('close', onClose);
  let streaming = false;
  let id = '';
  try {
    const res = await converse(ctx.engine, creq, {
      stream: {
        signal: gone.signal,
        onStart(conversationId) {
          id = conversationId;
          streaming = true;
          void reply.hijack();
          raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
          raw.flushHeaders();
        },
        onPiece(text) {
          raw.write(`data: ${JSON.stringify({ conversation_id: id, message: text })}\n\n`);
        },
      },
    });
    raw.write(`data: ${stringifyJson(res)}\n\n`);
    raw.end('data: [DONE]\n\n');
    return reply;
  } catch (e) {
    if (!streaming) throw e;
    const known = toHttpError(e, ctx.bodyLimit);
    if (!known) req.log.error({ err: e, route: '/multi_search' }, 'conversation stream failed');
    if (!raw.writableEnded && !raw.destroyed) raw.end(`event: error\ndata: ${JSON.stringify({ message: known?.message ?? 'internal server error; the server log has the details' })}\n\n`);
    return reply;
  } finally {
    raw.off('close', onClose);
  }
}
