/**
 * dashboard/src/api.ts: calls to this server's API with the session's key.
 *
 * The key travels only in the `X-TYPESENSE-API-KEY` header, never in a URL. A failed call
 * throws ApiError with the server's own `{"message"}` and status, which the views show as
 * they are.
 */

export const KEY_HEADER = 'X-TYPESENSE-API-KEY';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** What `/dashboard/api/access` says the key may do (src/server/routes/dashboard.ts). */
export interface Access {
  kind: 'bootstrap' | 'stored' | 'scoped';
  actions: string[];
  collections: AccessCollection[];
}

export interface FieldInfo {
  name: string;
  type: string;
  facet?: boolean;
  sort?: boolean;
  index?: boolean;
  optional?: boolean;
  embed?: unknown;
  num_dim?: number;
  [k: string]: unknown;
}

export interface AccessCollection {
  name: string;
  alias_of?: string;
  actions: string[];
  fields?: FieldInfo[];
  default_sorting_field?: string;
  num_documents?: number;
}

export class Api {
  constructor(readonly key: string) {}

  /** One call; JSON in and out unless `body` is a string or Blob (sent as is) or `text` is asked for. */
  async call<T = any>(method: string, path: string, opts: { body?: unknown; query?: Record<string, string | number | boolean | undefined>; text?: boolean; signal?: AbortSignal } = {}): Promise<T> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== '') qs.set(k, String(v));
    const url = qs.size > 0 ? `${path}?${qs}` : path;
    const headers: Record<string, string> = { [KEY_HEADER]: this.key };
    let body: BodyInit | undefined;
    if (typeof opts.body === 'string' || opts.body instanceof Blob) {
      body = opts.body;
      headers['content-type'] = 'text/plain';
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body, cache: 'no-store', credentials: 'omit', signal: opts.signal });
    } catch (e) {
      if ((e as Error).name === 'AbortError') throw e;
      throw new ApiError('the server cannot be reached', 0);
    }
    const text = await res.text();
    if (!res.ok) {
      let message = text || res.statusText;
      try {
        const m = (JSON.parse(text) as { message?: unknown }).message;
        if (typeof m === 'string') message = m;
      } catch {
        /* not JSON: show the text */
      }
      throw new ApiError(message, res.status);
    }
    return (opts.text ? text : text === '' ? undefined : JSON.parse(text)) as T;
  }

  access(): Promise<Access> {
    return this.call('GET', '/dashboard/api/access');
  }
}

export const enc = encodeURIComponent;
