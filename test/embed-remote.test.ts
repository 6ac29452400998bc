/**
 * Remote embedding APIs against local servers started by the tests, speaking each vendor's
 * request and response shapes: an OpenAI-compatible server (the spec's custom embedding
 * server contract), Google's generative language API and Vertex AI with OAuth token refresh.
 * Default vendor URLs are checked with an injected fetch (no network).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { closeEmbedders, EmbeddingError, loadEmbedder, type EmbedEnv } from '../src/embed/index.js';
import { FathomError } from '../src/errors.js';
import { tmpDir } from './helpers.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
}
type Reply = { status?: number; body?: unknown; delayMs?: number; headers?: Record<string, string> };

/** An HTTP server on 127.0.0.1 that records requests and answers with `handler`. */
async function server(handler: (req: Seen, n: number) => Reply): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const s = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const r: Seen = { method: req.method!, url: req.url!, headers: req.headers, body, json };
      seen.push(r);
      const reply = handler(r, seen.length);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
        res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {}));
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const servers = openServers;
  const close = () => {
    s.closeAllConnections();
    return new Promise<void>((r) => s.close(() => r()));
  };
  servers.push(close);
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen, close };
}
const openServers: Array<() => Promise<void>> = [];
afterAll(async () => {
  await closeEmbedders();
  await Promise.all(openServers.map((c) => c()));
});

const env: EmbedEnv = { dataDir: tmpDir('fathom-remote-') };
let keyN = 0;
/** A fresh API key per model, so that no two tests share a cached model. */
const freshKey = () => `sk-test-${++keyN}`;
/** A deterministic, not normalised vector per text: [length, 1, 0]. */
const vec = (t: string) => [t.length, 1, 0];
const expectUnit = (v: Float32Array) => expect(Math.hypot(...v)).toBeCloseTo(1, 5);

async function rejection(p: Promise<unknown>): Promise<Error> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(Error);
  return e as Error;
}

// ---------------------------------------------------------------------------

/** An OpenAI-compatible embeddings endpoint; `fail(n, req)` may return an error reply for request n. */
function openaiHandler(fail?: (n: number, req: Seen) => Reply | undefined) {
  return (req: Seen, n: number): Reply => {
    const f = fail?.(n, req);
    if (f) return f;
    const input: string[] = typeof req.json.input === 'string' ? [req.json.input] : req.json.input;
    return { body: { object: 'list', model: req.json.model, data: input.map((t, index) => ({ object: 'embedding', index, embedding: vec(t) })), usage: { prompt_tokens: 1, total_tokens: 1 } } };
  };
}
const openaiError = (status: number, message: string): Reply => ({ status, body: { error: { message, type: 'invalid_request_error', param: null, code: null } } });

describe('an OpenAI-compatible embedding server (model_config.url)', () => {
  it('gets POST <url>/v1/embeddings with the key, the model and the inputs, and its data[].embedding become unit vectors', async () => {
    const srv = await server(openaiHandler());
    const e = await loadEmbedder({ model_name: 'openai/my-embedder', api_key: 'sk-abc', url: `${srv.url}/` }, env);
    expect(e.dims).toBe(3);
    const vs = await e.embed(['one', 'three'], { purpose: 'index' });
    const last = srv.seen.at(-1)!;
    expect(last.method).toBe('POST');
    expect(last.url).toBe('/v1/embeddings');
    expect(last.headers.authorization).toBe('Bearer sk-abc');
    expect(last.headers['content-type']).toBe('application/json');
    expect(last.json).toEqual({ model: 'my-embedder', input: ['one', 'three'] });
    expect(vs[1]![0]! / vs[1]![1]!).toBeCloseTo(5, 5);
    vs.forEach(expectUnit);
  });

  it('gets a single query as a plain string', async () => {
    const srv = await server(openaiHandler());
    const e = await loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: srv.url }, env);
    await e.embed(['red shoes'], { purpose: 'query' });
    expect(srv.seen.at(-1)!.json.input).toBe('red shoes');
  });

  it('gets imports in batches of remote_embedding_batch_size (default 200)', async () => {
    const srv = await server(openaiHandler());
    const e = await loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: srv.url }, env);
    srv.seen.length = 0;
    await e.embed(['a', 'b', 'c', 'd', 'e'], { purpose: 'index', batchSize: 2 });
    expect(srv.seen.map((r) => r.json.input)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    srv.seen.length = 0;
    const vs = await e.embed(Array.from({ length: 450 }, (_, i) => 'x'.repeat(i + 1)), { purpose: 'index' });
    expect(srv.seen.map((r) => r.json.input.length)).toEqual([200, 200, 50]);
    expect(vs[449]![0]! / vs[449]![1]!).toBeCloseTo(450, 3);
  });

  it('has its answers put back in input order by their index', async () => {
    const srv = await server((req) => ({
      body: { data: ([] as string[]).concat(req.json.input).map((t, index) => ({ index, embedding: vec(t) })).reverse() },
    }));
    const e = await loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: srv.url }, env);
    const [a, bb] = await e.embed(['a', 'bb'], { purpose: 'index' });
    expect(a![0]! / a![1]!).toBeCloseTo(1, 5);
    expect(bb![0]! / bb![1]!).toBeCloseTo(2, 5);
  });

  it('is asked again after a server error, and the retry succeeds', async () => {
    const srv = await server(openaiHandler((n) => (n === 2 ? openaiError(500, 'temporary glitch') : undefined)));
    const e = await loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: srv.url }, env);
    const vs = await e.embed(['hello'], { purpose: 'index' });
    expect(vs).toHaveLength(1);
    expect(srv.seen).toHaveLength(3); // probe, failed try, retry
  });

  it('is tried remote_embedding_num_tries times, then the error carries its message', async () => {
    const srv = await server(openaiHandler((n) => (n > 1 ? openaiError(503, 'The server is overloaded') : undefined)));
    const e = await loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: srv.url }, env);
    const err = await rejection(e.embed(['hello'], { purpose: 'index', numTries: 3 }));
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err.message).toBe('OpenAI API error: The server is overloaded (3 attempts)');
    expect((err as EmbeddingError).code).toBe('SERVICE_UNAVAILABLE');
    expect((err as EmbeddingError).providerStatus).toBe(503);
    expect(srv.seen).toHaveLength(4);
  });

  it('is not asked again when it refuses the request (4xx), and its message is passed on', async () => {
    const srv = await server(openaiHandler((n) => (n > 1 ? openaiError(400, "'$.input' is invalid") : undefined)));
    const e = await loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: srv.url }, env);
    const err = await rejection(e.embed(['hello'], { purpose: 'index', numTries: 3 }));
    expect(err.message).toBe("OpenAI API error: '$.input' is invalid");
    expect((err as FathomError).code).toBe('BAD_REQUEST');
    expect(srv.seen).toHaveLength(2);
  });

  it('is given up on after remote_embedding_timeout_ms, per try', async () => {
    const srv = await server(openaiHandler((n) => (n > 1 ? { delayMs: 400, body: {} } : undefined)));
    const e = await loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: srv.url }, env);
    const started = performance.now();
    const err = await rejection(e.embed(['slow'], { purpose: 'query', timeoutMs: 50, numTries: 2 }));
    expect(err.message).toMatch(/^OpenAI API error: no answer within 50 ms \(2 attempts\)$/);
    expect(srv.seen).toHaveLength(3);
    expect(performance.now() - started).toBeLessThan(400 + 2000);
  });

  it('fails only the texts of a failed batch when embedding each', async () => {
    const srv = await server(openaiHandler((n, req) => (n > 1 && JSON.stringify(req.json.input).includes('bad') ? openaiError(400, 'bad input') : undefined)));
    const e = await loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: srv.url }, env);
    const r = await e.embedEach!(['a', 'b', 'bad', 'c', 'd'], { purpose: 'index', batchSize: 2 });
    expect(r.map((v) => (v instanceof Error ? v.message : 'ok'))).toEqual(['ok', 'ok', 'OpenAI API error: bad input', 'OpenAI API error: bad input', 'ok']);
    await expect(e.embed(['a', 'bad'], { purpose: 'index' })).rejects.toThrow('OpenAI API error: bad input');
  });

  it('is reported at load when it refuses the key, with its message', async () => {
    const srv = await server(() => ({ status: 401, body: { error: { message: 'Incorrect API key provided: sk-wrong.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } }));
    const err = await rejection(loadEmbedder({ model_name: 'openai/m', api_key: 'sk-wrong', url: srv.url }, env));
    expect(err).toBeInstanceOf(FathomError);
    expect((err as FathomError).code).toBe('BAD_SCHEMA');
    expect(err.message).toBe('OpenAI API error: Incorrect API key provided: sk-wrong.');
  });

  it('is reported when its answer holds no embeddings', async () => {
    const srv = await server(() => ({ body: { data: 'nope' } }));
    const err = await rejection(loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: srv.url }, env));
    expect(err.message).toBe('OpenAI API error: the answer has no `data` array');
  });

  it('is reported when it is not there at all', async () => {
    const err = await rejection(loadEmbedder({ model_name: 'openai/m', api_key: freshKey(), url: 'http://127.0.0.1:9' }, env));
    expect(err.message).toMatch(/^OpenAI API error: cannot reach http:\/\/127\.0\.0\.1:9: .* \(2 attempts\)$/);
  });
});

describe('OpenAI itself (no url)', () => {
  it('is called at https://api.openai.com/v1/embeddings, with the declared num_dim as dimensions', async () => {
    const calls: Array<{ url: string; body: any }> = [];
    const fetchImpl = (async (url: string, init: RequestInit) => {
      const body = JSON.parse(String(init.body));
      calls.push({ url, body });
      const input: string[] = typeof body.input === 'string' ? [body.input] : body.input;
      return new Response(JSON.stringify({ data: input.map((t) => ({ embedding: [t.length, 1] })) }), { status: 200 });
    }) as typeof fetch;
    const e = await loadEmbedder({ model_name: 'openai/text-embedding-3-small', api_key: freshKey() }, { ...env, fetch: fetchImpl }, { numDim: 2 });
    await e.embed(['a', 'b'], { purpose: 'index' });
    expect(calls.at(-1)).toEqual({ url: 'https://api.openai.com/v1/embeddings', body: { model: 'text-embedding-3-small', input: ['a', 'b'], dimensions: 2 } });
  });
});

// ---------------------------------------------------------------------------

describe("Google's generative language API (google/<model>)", () => {
  function googleHandler(req: Seen): Reply {
    if (req.url.includes(':embedText')) return { body: { embedding: { value: vec(req.json.text) } } };
    return { body: { embeddings: (req.json.requests as any[]).map((r) => ({ values: vec(r.content.parts[0].text) })) } };
  }

  it('gets batchEmbedContents with the key, the model and a task type per text', async () => {
    const srv = await server(googleHandler);
    const e = await loadEmbedder({ model_name: 'google/text-embedding-004', api_key: 'AIza-test', url: srv.url }, env);
    expect(e.dims).toBe(3);
    const vs = await e.embed(['one', 'three'], { purpose: 'index' });
    const last = srv.seen.at(-1)!;
    expect(last.url).toBe('/v1beta/models/text-embedding-004:batchEmbedContents?key=AIza-test');
    expect(last.json).toEqual({
      requests: [
        { model: 'models/text-embedding-004', content: { parts: [{ text: 'one' }] }, taskType: 'RETRIEVAL_DOCUMENT' },
        { model: 'models/text-embedding-004', content: { parts: [{ text: 'three' }] }, taskType: 'RETRIEVAL_DOCUMENT' },
      ],
    });
    vs.forEach(expectUnit);
    await e.embed(['q'], { purpose: 'query' });
    expect(srv.seen.at(-1)!.json.requests[0].taskType).toBe('RETRIEVAL_QUERY');
  });

  it('gets at most 100 texts per request, its own limit', async () => {
    const srv = await server(googleHandler);
    const e = await loadEmbedder({ model_name: 'google/text-embedding-004', api_key: freshKey(), url: srv.url }, env);
    srv.seen.length = 0;
    await e.embed(Array.from({ length: 150 }, (_, i) => `t${i}`), { purpose: 'index' });
    expect(srv.seen.map((r) => r.json.requests.length)).toEqual([100, 50]);
  });

  it("gets the reference's embedding-gecko-001 through embedText, one text per request", async () => {
    const srv = await server(googleHandler);
    const e = await loadEmbedder({ model_name: 'google/embedding-gecko-001', api_key: 'AIza-gecko', url: srv.url }, env);
    srv.seen.length = 0;
    await e.embed(['a', 'bb'], { purpose: 'index' });
    expect(srv.seen.map((r) => [r.url, r.json])).toEqual([
      ['/v1beta2/models/embedding-gecko-001:embedText?key=AIza-gecko', { text: 'a' }],
      ['/v1beta2/models/embedding-gecko-001:embedText?key=AIza-gecko', { text: 'bb' }],
    ]);
  });

  it('has its error message passed on', async () => {
    const srv = await server(() => ({ status: 400, body: { error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' } } }));
    const err = await rejection(loadEmbedder({ model_name: 'google/text-embedding-004', api_key: 'bad', url: srv.url }, env));
    expect(err.message).toBe('Google API error: API key not valid. Please pass a valid API key.');
  });

  it('is called at https://generativelanguage.googleapis.com by default', async () => {
    const urls: string[] = [];
    const fetchImpl = (async (url: string) => {
      urls.push(url);
      return new Response(JSON.stringify({ embeddings: [{ values: [1, 0] }] }), { status: 200 });
    }) as typeof fetch;
    await loadEmbedder({ model_name: 'google/text-embedding-004', api_key: 'k' }, { ...env, fetch: fetchImpl });
    expect(urls).toEqual(['https://generativelanguage.googleapis.com/v1beta/models/text-embedding-004:batchEmbedContents?key=k']);
  });
});

// ---------------------------------------------------------------------------

/** Vertex AI plus an OAuth token endpoint: only the latest issued token is accepted. */
async function vertex(opts: { expiresIn?: number; refreshError?: boolean } = {}) {
  const state = { valid: 'initial-token', issued: 0, rejected: 0, tokenRequests: [] as URLSearchParams[], predicts: [] as Seen[] };
  const srv = await server((req) => {
    if (req.url === '/token') {
      const form = new URLSearchParams(req.body);
      state.tokenRequests.push(form);
      if (opts.refreshError) return { status: 400, body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' } };
      state.valid = `token-${++state.issued}`;
      return { body: { access_token: state.valid, expires_in: opts.expiresIn ?? 3599, scope: 'https://www.googleapis.com/auth/cloud-platform', token_type: 'Bearer' } };
    }
    state.predicts.push(req);
    if (req.headers.authorization !== `Bearer ${state.valid}`) {
      state.rejected++;
      return { status: 401, body: { error: { code: 401, message: 'Request had invalid authentication credentials. Expected OAuth 2 access token.', status: 'UNAUTHENTICATED' } } };
    }
    return { body: { predictions: (req.json.instances as any[]).map((i) => ({ embeddings: { values: vec(i.content), statistics: { truncated: false, token_count: 1 } } })), metadata: { billableCharacterCount: 1 } } };
  });
  const config = (extra: Record<string, unknown> = {}) => ({
    model_name: 'gcp/text-embedding-004',
    project_id: 'my-project',
    access_token: 'initial-token',
    refresh_token: `refresh-${++keyN}`,
    client_id: 'client-1',
    client_secret: 'secret-1',
    url: srv.url,
    token_url: `${srv.url}/token`,
    ...extra,
  });
  return { srv, state, config };
}

describe('Vertex AI (gcp/<model>)', () => {
  it('gets :predict with instances of content and task type, under the project, region and model', async () => {
    const { state, config } = await vertex();
    const e = await loadEmbedder(config(), env);
    expect(e.dims).toBe(3);
    const vs = await e.embed(['one', 'three'], { purpose: 'index' });
    const last = state.predicts.at(-1)!;
    expect(last.url).toBe('/v1/projects/my-project/locations/us-central1/publishers/google/models/text-embedding-004:predict');
    expect(last.json).toEqual({ instances: [{ content: 'one', task_type: 'RETRIEVAL_DOCUMENT' }, { content: 'three', task_type: 'RETRIEVAL_DOCUMENT' }] });
    vs.forEach(expectUnit);
    await e.embed(['q'], { purpose: 'query' });
    expect(state.predicts.at(-1)!.json.instances[0].task_type).toBe('RETRIEVAL_QUERY');
  });

  it('checks at load that the access token works and that the refresh credentials give a new one', async () => {
    const { state, config } = await vertex();
    await loadEmbedder(config(), env);
    expect(state.predicts[0]!.headers.authorization).toBe('Bearer initial-token');
    expect(state.tokenRequests).toHaveLength(1);
    const form = state.tokenRequests[0]!;
    expect(Object.fromEntries(form)).toEqual({ grant_type: 'refresh_token', client_id: 'client-1', client_secret: 'secret-1', refresh_token: expect.stringMatching(/^refresh-/) });
  });

  it('refreshes the access token when a call gets 401, and repeats the call with the new token', async () => {
    const { state, config } = await vertex();
    const e = await loadEmbedder(config(), env);
    state.valid = 'revoked-elsewhere'; // the current token stops working
    const before = state.tokenRequests.length;
    const vs = await e.embed(['hello'], { purpose: 'index', numTries: 1 });
    expect(vs).toHaveLength(1);
    expect(state.tokenRequests.length).toBe(before + 1);
    expect(state.predicts.at(-1)!.headers.authorization).toBe(`Bearer token-${state.issued}`);
  });

  it('refreshes an access token that is about to expire before using it', async () => {
    const { state, config } = await vertex({ expiresIn: 30 }); // inside the 60 s refresh margin
    const e = await loadEmbedder(config(), env);
    const before = state.tokenRequests.length;
    state.rejected = 0;
    await e.embed(['a'], { purpose: 'index' });
    expect(state.tokenRequests.length).toBe(before + 1);
    expect(state.rejected).toBe(0); // refreshed before the call, not after a 401
  });

  it('gets at most 5 instances per request', async () => {
    const { state, config } = await vertex();
    const e = await loadEmbedder(config(), env);
    state.predicts.length = 0;
    await e.embed(Array.from({ length: 12 }, (_, i) => `t${i}`), { purpose: 'index' });
    expect(state.predicts.map((p) => p.json.instances.length)).toEqual([5, 5, 2]);
  });

  it('is not loaded with an access token that does not work', async () => {
    const { config } = await vertex();
    const err = await rejection(loadEmbedder(config({ access_token: 'stale' }), env));
    expect(err.message).toBe('GCP API error: Request had invalid authentication credentials. Expected OAuth 2 access token.');
  });

  it('is not loaded when the refresh credentials are refused, and says why', async () => {
    const { config } = await vertex({ refreshError: true });
    const err = await rejection(loadEmbedder(config(), env));
    expect(err.message).toBe('GCP API error: refreshing the access token failed: invalid_grant: Token has been expired or revoked.');
  });

  it("is called at Google's regional host and token endpoint by default", async () => {
    const urls: string[] = [];
    const fetchImpl = (async (url: string) => {
      urls.push(url);
      const body = url.endsWith('/token') ? { access_token: 't2', expires_in: 3600 } : { predictions: [{ embeddings: { values: [1, 0] } }] };
      return new Response(JSON.stringify(body), { status: 200 });
    }) as typeof fetch;
    const cfg = { model_name: 'gcp/text-embedding-004', project_id: 'p', access_token: 'a', refresh_token: 'r', client_id: 'c', client_secret: 's', region: 'europe-west4' };
    await loadEmbedder(cfg, { ...env, fetch: fetchImpl });
    expect(urls).toEqual([
      'https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/publishers/google/models/text-embedding-004:predict',
      'https://oauth2.googleapis.com/token',
    ]);
  });
});
