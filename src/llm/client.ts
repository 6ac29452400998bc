/**
 * src/llm/client.ts: one chat call to an LLM provider, whole or streamed.
 *
 * Two wire protocols cover the three providers:
 *
 *   OpenAI chat completions (openai/, vllm/: vLLM's server speaks the same protocol)
 *     POST <endpoint>   Authorization: Bearer <api_key>   (vLLM: only when it has a key)
 *     {model, messages: [{role, content}], stream?, temperature?, max_tokens?}
 *     -> {choices: [{message: {content}}]}
 *     stream -> text/event-stream: `data: {"choices":[{"delta":{"content":"..."}}]}` ... `data: [DONE]`
 *     error  -> {error: {message, type, ...}} (vLLM: {message, type, code})
 *
 *   Cloudflare Workers AI
 *     POST <api>/client/v4/accounts/<account_id>/ai/run/<model>   Authorization: Bearer <api_key>
 *     {messages, stream?, temperature?, max_tokens?}
 *     -> {result: {response}, success: true, errors: []}
 *     stream -> `data: {"response":"..."}` ... `data: [DONE]`
 *     error  -> {success: false, errors: [{code, message}]}
 *
 * Each call gets the provider config's timeout (ProviderConfig.timeoutMs): a whole answer
 * must arrive within it; a streamed one must start within it and never pause longer. There
 * are no retries: a chat call is slow and costs money, and the caller reports the failure.
 * Every failure is an LlmError (400, as the reference answers) whose message starts with the
 * provider's label and carries the provider's own words, with the api key masked if echoed.
 */
import { FathomError } from '../errors.js';
import { providerMessage } from '../embed/remote/http.js';
import { redact, type ProviderConfig } from './config.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  messages: ChatMessage[];
  /** Cap on the answer's tokens (sent only to providers that take it). */
  maxTokens?: number;
}

export class LlmError extends FathomError {
  constructor(message: string) {
    super('LLM_ERROR', message);
    this.name = 'LlmError';
  }
}

const LABELS = { openai: 'OpenAI API', vllm: 'vLLM API', cloudflare: 'Cloudflare Workers AI' } as const;

/** The deltas of a streamed answer; `done` resolves with the whole text once the stream ended well. */
export interface AnswerStream extends AsyncIterable<string> {
  /** Stops reading and closes the connection (the caller's client went away). */
  cancel(): void;
}

export class ChatClient {
  readonly label: string;

  constructor(
    readonly config: ProviderConfig,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.label = LABELS[config.vendor];
  }

  /** The JSON body of a call, exactly as sent. */
  body(req: ChatRequest, stream: boolean): Record<string, unknown> {
    const c = this.config;
    const out: Record<string, unknown> = c.vendor === 'cloudflare' ? {} : { model: c.model };
    out.messages = req.messages;
    if (stream) out.stream = true;
    if (c.temperature !== undefined) out.temperature = c.temperature;
    // OpenAI's newer models refuse `max_tokens`; vLLM and Workers AI take it.
    if (req.maxTokens !== undefined && c.vendor !== 'openai') out.max_tokens = req.maxTokens;
    return out;
  }

  /** Bytes of the request body for these messages: what `max_bytes` bounds. */
  requestBytes(req: ChatRequest, stream: boolean): number {
    return Buffer.byteLength(JSON.stringify(this.body(req, stream)));
  }

  private headers(stream: boolean): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json' };
    if (this.config.apiKey) h.authorization = `Bearer ${this.config.apiKey}`;
    return h;
  }

  private fail(msg: string): LlmError {
    return new LlmError(`${this.label} error: ${redact(msg, this.config.apiKey)}`);
  }

  private unreachable(e: unknown): LlmError {
    const err = e as Error & { cause?: unknown };
    const why = err?.cause instanceof Error ? err.cause.message : (err?.message ?? String(e));
    return this.fail(`cannot reach ${new URL(this.config.endpoint).origin}: ${why}`);
  }

  /** The provider's message from an error answer. */
  private errorText(text: string, status: number): string {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (parsed && typeof parsed === 'object') {
      const errors = (parsed as { errors?: unknown }).errors;
      if (Array.isArray(errors) && errors.length > 0 && typeof errors[0]?.message === 'string') return errors[0].message as string;
    }
    return providerMessage(parsed, text, status);
  }

  /** The answer text in a whole (non-streamed) answer body. */
  private answerOf(body: unknown): string {
    if (body && typeof body === 'object') {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a provider's JSON, each field checked as it is read
      const b = body as Record<string, any>;
      if (this.config.vendor === 'cloudflare') {
        if (b.success === false) throw this.fail(this.errorText(JSON.stringify(b), 200));
        const r = b.result;
        if (r && typeof r.response === 'string') return r.response;
        if (r && typeof r.choices?.[0]?.message?.content === 'string') return r.choices[0].message.content;
      } else if (typeof b.choices?.[0]?.message?.content === 'string') {
        return b.choices[0].message.content;
      }
    }
    throw this.fail('the answer has no message text (malformed answer)');
  }

  /** The text piece in one streamed event (undefined: an event without text). */
  private deltaOf(event: unknown): string | undefined {
    if (!event || typeof event !== 'object') throw this.fail('a streamed event is not a JSON object (malformed answer)');
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a provider's JSON, each field checked as it is read
    const e = event as Record<string, any>;
    if (e.error !== undefined) throw this.fail(this.errorText(JSON.stringify(e), 200));
    if (this.config.vendor === 'cloudflare') return typeof e.response === 'string' ? e.response : undefined;
    const d = e.choices?.[0]?.delta?.content;
    return typeof d === 'string' ? d : undefined;
  }

  /** One whole answer. */
  async complete(req: ChatRequest): Promise<string> {
    const timeout = this.config.timeoutMs;
    const signal = AbortSignal.timeout(timeout);
    let status: number;
    let text: string;
    try {
      const res = await this.fetchImpl(this.config.endpoint, { method: 'POST', headers: this.headers(false), body: JSON.stringify(this.body(req, false)), signal });
      status = res.status;
      text = await res.text();
    } catch (e) {
      if (signal.aborted) throw this.fail(`no answer within ${timeout} ms`);
      throw this.unreachable(e);
    }
    if (status < 200 || status > 299) throw this.fail(this.errorText(text, status));
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw this.fail('the answer is not JSON (malformed answer)');
    }
    return this.answerOf(body);
  }

  /**
   * Starts a streamed answer. Resolves once the provider has accepted the call (so a refusal
   * is still an ordinary error); the stream then yields the answer's pieces and throws an
   * LlmError if it breaks, pauses too long, or ends without the provider's end mark.
   */
  async stream(req: ChatRequest): Promise<AnswerStream> {
    const timeout = this.config.timeoutMs;
    const ac = new AbortController();
    let timedOut = false;
    let timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, timeout);
    const rearm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        ac.abort();
      }, timeout);
    };
    let res: Response;
    try {
      res = await this.fetchImpl(this.config.endpoint, { method: 'POST', headers: this.headers(true), body: JSON.stringify(this.body(req, true)), signal: ac.signal });
    } catch (e) {
      clearTimeout(timer);
      if (timedOut) throw this.fail(`no answer within ${timeout} ms`);
      throw this.unreachable(e);
    }
    if (res.status < 200 || res.status > 299) {
      let text = '';
      try {
        text = await res.text();
      } catch {
        /* the status says enough */
      }
      clearTimeout(timer);
      throw this.fail(this.errorText(text, res.status));
    }
    const type = res.headers.get('content-type') ?? '';
    if (!type.includes('text/event-stream')) {
      // A server that ignores `stream` answers whole; take it as one piece.
      let text: string;
      try {
        text = await res.text();
      } catch (e) {
        clearTimeout(timer);
        throw timedOut ? this.fail(`no answer within ${timeout} ms`) : this.unreachable(e);
      }
      clearTimeout(timer);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw this.fail('the answer is neither an event stream nor JSON (malformed answer)');
      }
      const whole = this.answerOf(body);
      return {
        cancel() {},
        async *[Symbol.asyncIterator]() {
          yield whole;
        },
      };
    }
    rearm();
    const reader = res.body!.getReader();
    // the iterator's methods have their own `this`
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    let cancelled = false;
    return {
      cancel() {
        cancelled = true;
        clearTimeout(timer);
        ac.abort();
      },
      async *[Symbol.asyncIterator]() {
        const decoder = new TextDecoder();
        let buf = '';
        let done = false;
        try {
          while (!done) {
            let chunk: { done: boolean; value?: Uint8Array };
            try {
              chunk = await reader.read();
            } catch (e) {
              if (cancelled) return;
              if (timedOut) throw self.fail(`the answer stopped: nothing for ${timeout} ms`);
              const err = e as Error & { cause?: unknown };
              throw self.fail(`the answer stream broke off: ${err?.cause instanceof Error ? err.cause.message : (err?.message ?? String(e))}`);
            }
            if (chunk.done) break;
            rearm();
            buf += decoder.decode(chunk.value, { stream: true });
            // Events end with a blank line; lines may end with \r\n.
            let end: RegExpExecArray | null;
            while ((end = /\r?\n\r?\n/.exec(buf)) !== null) {
              const event = buf.slice(0, end.index);
              buf = buf.slice(end.index + end[0].length);
              const data = event
                .split(/\r?\n/)
                .filter((l) => l.startsWith('data:'))
                .map((l) => l.slice(5).replace(/^ /, ''))
                .join('\n');
              if (data === '') continue;
              if (data.trim() === '[DONE]') {
                done = true;
                break;
              }
              let parsed: unknown;
              try {
                parsed = JSON.parse(data);
              } catch {
                throw self.fail('a streamed event is not JSON (malformed answer)');
              }
              const piece = self.deltaOf(parsed);
              if (piece) yield piece;
            }
          }
          if (!done) throw self.fail('the answer stream ended before its end mark `[DONE]`');
        } finally {
          clearTimeout(timer);
          if (!done || cancelled) ac.abort();
          try {
            reader.releaseLock();
          } catch {
            /* a read still pending after the abort */
          }
        }
      },
    };
  }

  /**
   * Checks the configuration with one real, small call (key, account, model name, URL).
   * Throws LlmError with the provider's message.
   */
  async check(): Promise<void> {
    await this.complete({ messages: [{ role: 'user', content: 'hello' }], maxTokens: 1 });
  }
}
