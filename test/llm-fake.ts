/**
 * A local LLM provider for tests: one HTTP server on 127.0.0.1 speaking
 *
 *   OpenAI chat completions   POST /v1/chat/completions            (flavour 'openai' or 'vllm')
 *   Cloudflare Workers AI     POST /client/v4/accounts/<acct>/ai/run/<model>
 *
 * whole and streamed (server-sent events), with each protocol's error bodies. It records every
 * call (path, headers, body and its size) and answers deterministically:
 *
 *   the check call ("hello")           -> "hi"
 *   a standalone-question prompt       -> "standalone: <the follow-up question>"
 *   an answer prompt                   -> "Based on N results: <ids of the context's documents>"
 *
 * A test may replace `answer`, or queue one-off behaviours with `next(...)`: an error status
 * and body, a delay, a malformed body, a stream that breaks off.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LlmCall {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** Size of the request body in bytes. */
  bytes: number;
  stream: boolean;
  /** The last user message. */
  prompt: string;
  /** The system message, if any. */
  system?: string;
}

export type Behaviour =
  | { kind: 'error'; status: number; body: unknown }
  | { kind: 'delay'; ms: number }
  | { kind: 'malformed' }
  | { kind: 'break'; afterPieces: number }
  | { kind: 'stall'; afterPieces: number };

/** The ids of the JSON documents in an answer prompt's search results, in order. */
export function contextIds(prompt: string): string[] {
  const m = /<Search results>\n([\s\S]*?)\n\n<Question>/.exec(prompt);
  if (!m) return [];
  const ids: string[] = [];
  for (const line of m[1]!.split('\n')) {
    const id = /"id":"([^"]*)"/.exec(line);
    if (id) ids.push(id[1]!);
  }
  return ids;
}

/** The question in an answer prompt. */
export function promptQuestion(prompt: string): string {
  return /<Question>\n([\s\S]*?)\n\n<Answer>/.exec(prompt)?.[1] ?? '';
}

export function defaultAnswer(call: LlmCall): string {
  const p = call.prompt;
  if (p === 'hello') return 'hi';
  const follow = /<Follow-up question>\n([\s\S]*?)\n\n<Standalone question>/.exec(p);
  if (follow) return `standalone: ${follow[1]}`;
  const ids = contextIds(p);
  return `Based on ${ids.length} results: ${ids.join(', ')}`;
}

export class FakeLlm {
  server!: http.Server;
  url = '';
  calls: LlmCall[] = [];
  /** The bearer key accepted; undefined: any (or none). */
  key: string | undefined = 'sk-test-key-0123456789abcdef';
  /** 'vllm' answers errors in vLLM's shape. */
  flavour: 'openai' | 'vllm' = 'openai';
  answer: (call: LlmCall) => string = defaultAnswer;
  /** Streamed answers whose connection is still open. */
  openStreams = 0;
  private queue: Behaviour[] = [];
  private sockets = new Set<import('node:net').Socket>();

  next(...b: Behaviour[]): void {
    this.queue.push(...b);
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((r) => this.server.close(() => r()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: any;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = undefined;
      }
      const path = req.url ?? '';
      const cf = path.startsWith('/client/v4/accounts/');
      const messages: Array<{ role: string; content: string }> = Array.isArray(body?.messages) ? body.messages : [];
      const users = messages.filter((m) => m.role === 'user');
      const call: LlmCall = {
        path,
        headers: req.headers,
        body,
        bytes: raw.length,
        stream: body?.stream === true,
        prompt: users[users.length - 1]?.content ?? '',
        ...(messages.find((m) => m.role === 'system') ? { system: messages.find((m) => m.role === 'system')!.content } : {}),
      };
      this.calls.push(call);
      const json = (status: number, b: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(b));
      };
      if (!cf && path !== '/v1/chat/completions') return json(404, { error: { message: `no route ${path}`, type: 'invalid_request_error' } });
      if (this.key !== undefined && req.headers.authorization !== `Bearer ${this.key}`) {
        if (cf) return json(401, { success: false, errors: [{ code: 10000, message: 'Authentication error' }], messages: [], result: null });
        if (this.flavour === 'vllm') return json(401, { error: 'Unauthorized' });
        return json(401, { error: { message: 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
      }
      const behaviour = this.queue.shift();
      const go = () => this.reply(call, cf, res, behaviour);
      if (behaviour?.kind === 'delay') setTimeout(go, behaviour.ms);
      else go();
    });
  }

  private reply(call: LlmCall, cf: boolean, res: http.ServerResponse, b: Behaviour | undefined): void {
    if (b?.kind === 'error') {
      res.writeHead(b.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(b.body));
      return;
    }
    if (b?.kind === 'malformed') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(cf ? JSON.stringify({ success: true, result: {} }) : JSON.stringify({ id: 'x', choices: [] }));
      return;
    }
    const text = this.answer(call);
    if (!call.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (cf) res.end(JSON.stringify({ result: { response: text }, success: true, errors: [], messages: [] }));
      else
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            created: 1,
            model: call.body?.model ?? 'cf',
            choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    this.openStreams++;
    res.on('close', () => this.openStreams--);
    const pieces = text.split(/(?<= )/);
    const event = (piece: string) =>
      cf ? { response: piece } : { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: call.body?.model, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] };
    if (!cf) res.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] })}\n\n`);
    let i = 0;
    const tick = () => {
      if ((b?.kind === 'break' || b?.kind === 'stall') && i === b.afterPieces) {
        if (b.kind === 'break') res.destroy();
        return; // stall: keep the connection open, send nothing more
      }
      if (i < pieces.length) {
        res.write(`data: ${JSON.stringify(event(pieces[i]!))}\n\n`);
        i++;
        setTimeout(tick, 2);
        return;
      }
      if (cf) res.write(`data: ${JSON.stringify({ response: '', usage: { prompt_tokens: 1, completion_tokens: 1 } })}\n\n`);
      else res.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    tick();
  }
}
