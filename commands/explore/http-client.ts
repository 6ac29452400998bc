/**
 * commands/explore/http-client.ts: searches through a running `fathom serve`, over the
 * Typesense-compatible routes: `GET /collections/:c` for the schema and
 * `GET /collections/:c/documents/search?...` for a search, the key in the
 * `X-TYPESENSE-API-KEY` header.
 */
import { parseJson } from '../../src/json.js';
import { oneLineMessage, type CollectionSchema, type SearchClient, type SearchParams, type SearchResponse, type Source } from './client.js';

/** How long one request may take before the explorer reports it as failed. */
const REQUEST_TIMEOUT_MS = 30_000;

export class HttpClient implements SearchClient {
  readonly source: Source;
  private readonly base: string;

  constructor(
    url: string,
    private readonly apiKey: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.base = url.replace(/\/+$/, '');
    this.source = { kind: 'server', url: this.base };
  }

  schema(collection: string): Promise<CollectionSchema> {
    return this.get(`/collections/${encodeURIComponent(collection)}`) as Promise<CollectionSchema>;
  }

  search(collection: string, params: SearchParams, signal?: AbortSignal): Promise<SearchResponse> {
    const qs = new URLSearchParams(params).toString();
    return this.get(`/collections/${encodeURIComponent(collection)}/documents/search?${qs}`, signal) as Promise<SearchResponse>;
  }

  async close(): Promise<void> {}

  private async get(path: string, signal?: AbortSignal): Promise<unknown> {
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    let res: Response;
    try {
      res = await this.fetchImpl(this.base + path, {
        headers: { 'X-TYPESENSE-API-KEY': this.apiKey, accept: 'application/json' },
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (e) {
      if (signal?.aborted) throw e;
      if (timeout.aborted) throw new Error(`no answer from ${this.base} within ${REQUEST_TIMEOUT_MS / 1000} s`);
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new Error(`cannot reach ${this.base}: ${cause?.code ?? cause?.message ?? oneLineMessage(e)}`);
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : parseJson(text);
    } catch {
      body = undefined;
    }
    if (!res.ok) {
      const msg = body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string' ? (body as { message: string }).message : text.trim().slice(0, 200) || res.statusText;
      throw new Error(res.status === 401 || res.status === 403 ? `${msg} (HTTP ${res.status}: check --api-key)` : `${msg} (HTTP ${res.status})`);
    }
    if (body === undefined || typeof body !== 'object') throw new Error(`${this.base} answered with something that is not JSON`);
    return body;
  }
}
