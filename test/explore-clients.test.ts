import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../commands/explore/http-client.js';
import { EngineClient } from '../commands/explore/engine-client.js';
import { FathomError } from '../src/errors.js';
import type { Engine } from '../src/engine.js';
import { booksEngine } from './explore-fixture.js';

/**
 * A stand-in for `fathom serve` that answers the two documented routes from an Engine,
 * so the HTTP client is tested against the wire format without the real daemon.
 */
let engine: Engine;
let server: http.Server;
let base: string;
const KEY = 'test-key';

beforeAll(async () => {
  engine = (await booksEngine()).engine;
  server = http.createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers['x-typesense-api-key'] !== KEY) return send(401, { message: 'Forbidden - a valid `x-typesense-api-key` header must be sent.' });
    try {
      const m = /^\/collections\/([^/]+)(\/documents\/search)?$/.exec(url.pathname);
      if (!m) return send(404, { message: 'Not Found' });
      const name = decodeURIComponent(m[1]!);
      if (!m[2]) return send(200, engine.getCollection(name));
      return send(200, await engine.search(name, Object.fromEntries(url.searchParams)));
    } catch (e) {
      return send(e instanceof FathomError ? e.status : 500, { message: (e as Error).message });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
  await engine.close();
});

describe('the HTTP client', () => {
  it('reads the schema from GET /collections/:c', async () => {
    const schema = await new HttpClient(base + '/', KEY).schema('books');
    expect(schema.fields.map((f) => f.name)).toContain('title');
  });

  it('searches through GET /collections/:c/documents/search with the key header', async () => {
    const r = await new HttpClient(base, KEY).search('books', { q: 'hary pottr', query_by: 'title' });
    expect(r.found).toBe(3);
    expect(r.hits?.[0]?.document.title).toMatch(/Harry Potter/);
  });

  it('reports a bad filter with the server’s one-line message', async () => {
    await expect(new HttpClient(base, KEY).search('books', { q: '*', filter_by: 'year:>' })).rejects.toThrow(/^filter_by: expected a value after `year:>` at position 6 \(HTTP 400\)$/);
  });

  it('points at the key when the server refuses it', async () => {
    await expect(new HttpClient(base, 'wrong').schema('books')).rejects.toThrow(/HTTP 401: check --api-key/);
  });

  it('says which server it cannot reach', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await expect(new HttpClient(`http://127.0.0.1:${port}`, KEY).schema('books')).rejects.toThrow(new RegExp(`cannot reach http://127.0.0.1:${port}: ECONNREFUSED`));
  });
});

describe('the engine client', () => {
  it('searches the data directory and does not close an engine it does not own', async () => {
    const client = new EngineClient(engine, { kind: 'local', dataDir: engine.dir, defaultDataDir: false }, false);
    expect((await client.search('books', { q: 'dune', query_by: 'title' })).found).toBe(1);
    await client.close();
    expect((await engine.search('books', { q: '*' })).found).toBe(8);
  });

  it('skips a search whose signal was aborted before it ran', async () => {
    const client = new EngineClient(engine, { kind: 'local', dataDir: engine.dir, defaultDataDir: false }, false);
    const c = new AbortController();
    const p = client.search('books', { q: '*' }, c.signal);
    c.abort();
    await expect(p).rejects.toThrow(/superseded/);
  });

  it('rejects an unknown collection with a one-line message', async () => {
    const client = new EngineClient(engine, { kind: 'local', dataDir: engine.dir, defaultDataDir: false }, false);
    await expect(client.schema('nope')).rejects.toThrow(/nope/);
  });
});
