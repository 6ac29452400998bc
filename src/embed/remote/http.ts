/**
 * HTTP plumbing shared by the remote embedding APIs: one JSON request with a timeout, the
 * provider's error message pulled out of its error body, and retries with exponential back-off.
 *
 * Retried: network failures, timeouts, HTTP 408, 429 and 5xx (honouring Retry-After up to
 * EMBED_DEFAULTS.remoteBackoffMaxMs). Not retried: other 4xx (a bad key or request does not
 * get better) and malformed answers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { EMBED_DEFAULTS } from '../../defaults.js';

/** A failed provider call. `status` is the HTTP status when the provider answered. */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

export interface JsonRequest {
  url: string;
  method?: 'POST' | 'GET';
  headers?: Record<string, string>;
  /** JSON-encoded unless it is a URLSearchParams (sent as a form). */
  body?: unknown;
}

/**
 * The provider's own words from an error body: `error.message` (OpenAI, Google, Vertex),
 * `error` + `error_description` (OAuth), `message`, else the start of the raw body.
 */
export function providerMessage(body: unknown, text: string, status: number): string {
  if (typeof body === 'object' && body !== null) {
    const b = body as Record<string, unknown>;
    const err = b.error;
    if (typeof err === 'object' && err !== null && typeof (err as Record<string, unknown>).message === 'string') {
      return (err as Record<string, unknown>).message as string;
    }
    if (typeof err === 'string') return typeof b.error_description === 'string' ? `${err}: ${b.error_description}` : err;
    if (typeof b.message === 'string') return b.message;
  }
  const t = text.trim();
  return t ? `HTTP ${status}: ${t.slice(0, 300)}` : `HTTP ${status}`;
}

function retryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const secs = Number(header);
  const ms = Number.isFinite(secs) ? secs * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(ms) && ms >= 0 ? Math.min(ms, EMBED_DEFAULTS.remoteBackoffMaxMs) : undefined;
}

function describe(e: unknown): string {
  const err = e as Error & { cause?: unknown };
  const cause = err?.cause instanceof Error ? err.cause.message : undefined;
  return cause ?? err?.message ?? String(e);
}

/**
 * One request. Resolves with the parsed JSON of a 2xx answer; rejects with ProviderError
 * (message `<label> error: <provider message>`) for anything else. `timeoutMs` bounds the
 * whole exchange, body included.
 */
export async function requestJson(fetchImpl: typeof fetch, label: string, req: JsonRequest, timeoutMs: number): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
  let body: string | undefined;
  if (req.body instanceof URLSearchParams) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = req.body.toString();
  } else if (req.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(req.body);
  }
  const signal = AbortSignal.timeout(timeoutMs);
  let status: number;
  let text: string;
  let res: Response;
  try {
    res = await fetchImpl(req.url, { method: req.method ?? 'POST', headers, body, signal });
    status = res.status;
    text = await res.text();
  } catch (e) {
    if (signal.aborted) throw new ProviderError(`${label} error: no answer within ${timeoutMs} ms`, undefined, true);
    throw new ProviderError(`${label} error: cannot reach ${new URL(req.url).origin}: ${describe(e)}`, undefined, true);
  }
  let parsed: unknown;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (status < 200 || status > 299) {
    const retryable = status === 408 || status === 429 || status >= 500;
    throw new ProviderError(`${label} error: ${providerMessage(parsed, text, status)}`, status, retryable, retryAfter(res.headers.get('retry-after')));
  }
  if (parsed === undefined) throw new ProviderError(`${label} error: the answer is not JSON`, status, false);
  return parsed;
}

/** Wait before attempt `attempt + 1` (attempt counts from 1). */
export function backoffMs(attempt: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  const base = Math.min(EMBED_DEFAULTS.remoteBackoffMs * 2 ** (attempt - 1), EMBED_DEFAULTS.remoteBackoffMaxMs);
  return Math.round(base * (1 + Math.random() * 0.25));
}

/** Calls `fn` up to `numTries` times while it fails with a retryable ProviderError. */
export async function withRetries<T>(numTries: number, fn: (attempt: number) => Promise<T>): Promise<T> {
  const tries = Math.max(1, Math.floor(numTries));
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (!(e instanceof ProviderError) || !e.retryable) throw e;
      if (attempt >= tries) {
        throw attempt > 1 ? new ProviderError(`${e.message} (${attempt} attempts)`, e.status, false) : e;
      }
      await sleep(backoffMs(attempt, e.retryAfterMs));
    }
  }
}
