/**
 * Bad input over HTTP and the limits that protect the process: malformed JSON, wrong
 * content types, unknown routes, wrong methods, oversized bodies, long query strings,
 * slow clients; plus streaming import, logs, CORS and the graceful stop.
 */
import net from 'node:net';
import http from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { BOOKS_SCHEMA, dataDirPath } from './helpers.js';

const KEY = 'http-test-key';
let server: RunningServer;
const logLines: string[] = [];

const logStream = new Writable({
  write(chunk, _enc, cb) {
    logLines.push(...chunk.toString().split('\n').filter(Boolean));
    cb();
  },
});

async function call(method: string, path: string, opts: { body?: string | Buffer; headers?: Record<string, string>; key?: string | null; base?: string } = {}) {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== null) headers['x-typesense-api-key'] = opts.key ?? KEY;
  const res = await fetch(`${opts.base ?? server.url}${path}`, { method, headers, body: opts.body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

function book(i: number) {
  return JSON.stringify({ id: String(i), title: `Book number ${i}`, author: `Author ${i % 97}`, year: 1900 + (i % 120) });
}

beforeAll(async () => {
  server = await startServer(
    {
      dataDir: dataDirPath(),
      apiKey: KEY,
      address: '127.0.0.1',
      port: 0,
      logLevel: 'info',
      logStream,
      enableCors: true,
      limits: { bodyLimit: 4096, headersTimeoutMs: 500, connectionsCheckIntervalMs: 100, socketIdleTimeoutMs: 1500 },
    },
    { engine: { merges: 'inline' } },
  );
  const r = await call('POST', '/collections', { body: JSON.stringify(BOOKS_SCHEMA), headers: { 'content-type': 'application/json' } });
  expect(r.status).toBe(201);
});

afterAll(async () => {
  await server?.stop();
});

describe('bad input', () => {
  it('answers malformed JSON with 400 and a message', async () => {
    const r = await call('POST', '/collections', { body: '{"name": "x", ', headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(400);
    expect(r.json().message).toMatch(/malformed JSON/);
  });

  it('answers an unsupported content type with 415', async () => {
    const r = await call('POST', '/collections', { body: '<schema/>', headers: { 'content-type': 'application/xml' } });
    expect(r.status).toBe(415);
    expect(r.json().message).toMatch(/Content-Type/);
  });

  it('reads JSON sent as text/plain or without a content type, as the reference does', async () => {
    const body = JSON.stringify({ ...BOOKS_SCHEMA, name: 'plain' });
    expect((await call('POST', '/collections', { body, headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const raw = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${server.url}/collections`, { method: 'POST', headers: { 'x-typesense-api-key': KEY } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ ...BOOKS_SCHEMA, name: 'untyped' }));
    });
    expect(raw).toBe(201);
  });

  it('answers an empty body where a document is expected with 400', async () => {
    const r = await call('POST', '/collections/books/documents', { headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(400);
    expect(r.json()).toEqual({ message: expect.any(String) });
  });

  it('answers an unknown route with 404', async () => {
    const r = await call('GET', '/nowhere');
    expect(r.status).toBe(404);
    expect(r.json().message).toMatch(/no route/);
  });

  it('answers a known path with the wrong method with 405 and the allowed methods', async () => {
    const r = await call('PUT', '/collections');
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('GET, POST');
    expect((await call('POST', '/collections/books/documents/search', { body: '{}' })).status).toBe(405);
    expect((await call('DELETE', '/health')).status).toBe(405);
  });

  it('answers a body over the limit with 413', async () => {
    const big = JSON.stringify({ id: 'big', title: 'x'.repeat(10_000), author: 'a', year: 1 });
    const r = await call('POST', '/collections/books/documents', { body: big, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(413);
    expect(r.json().message).toMatch(/import/);
  });

  it('streams imports, which the body limit does not apply to', async () => {
    const body = Array.from({ length: 200 }, (_, i) => book(i)).join('\n');
    expect(body.length).toBeGreaterThan(4096);
    const r = await call('POST', '/collections/books/documents/import?batch_size=7', { body, headers: { 'content-type': 'text/plain' } });
    expect(r.status).toBe(200);
    const lines = r.text.split('\n');
    expect(lines).toHaveLength(200);
    expect(lines.every((l) => JSON.parse(l).success === true)).toBe(true);
  });

  it('answers an import into a missing collection with 404, not a 200', async () => {
    const r = await call('POST', '/collections/ghost/documents/import', { body: book(1), headers: { 'content-type': 'text/plain' } });
    expect(r.status).toBe(404);
  });

  it('answers a bad batch_size or action with 400 before reading the import', async () => {
    expect((await call('POST', '/collections/books/documents/import?batch_size=0', { body: book(1) })).status).toBe(400);
    expect((await call('POST', '/collections/books/documents/import?action=replace', { body: book(1) })).status).toBe(400);
    expect((await call('POST', '/collections/books/documents/import?dirty_values=maybe', { body: book(1) })).status).toBe(400);
  });

  it('answers a GET query string over 4000 characters with 400', async () => {
    const r = await call('GET', `/collections/books/documents/search?query_by=title&q=${'a'.repeat(4001)}`);
    expect(r.status).toBe(400);
    expect(r.json().message).toMatch(/4000/);
  });

  it('answers a bad boolean parameter with 400 naming it', async () => {
    const r = await call('DELETE', '/collections/books/documents/nope?ignore_not_found=perhaps');
    expect(r.status).toBe(400);
    expect(r.json().message).toMatch(/ignore_not_found/);
  });

  it('answers an unexpected failure with 500 and a generic message, never the stack', async () => {
    const engine = server.engine as unknown as { listStopwords: () => unknown };
    const original = engine.listStopwords;
    engine.listStopwords = () => {
      throw new Error('boom in /secret/internal/path');
    };
    try {
      const r = await call('GET', '/stopwords');
      expect(r.status).toBe(500);
      expect(r.text).not.toMatch(/boom|secret|at /);
      expect(r.json()).toEqual({ message: expect.any(String) });
    } finally {
      engine.listStopwords = original;
    }
  });
});

describe('slow clients', () => {
  it('closes a connection whose headers do not arrive in time', async () => {
    const started = Date.now();
    const closed = await new Promise<string>((resolve) => {
      const s = net.connect(server.port, '127.0.0.1', () => s.write('GET /health HTTP/1.1\r\nHost: x\r\n'));
      let got = '';
      s.on('data', (d) => (got += d.toString()));
      s.on('close', () => resolve(got));
      s.on('error', () => {});
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(closed).toMatch(/^$|408/);
  });

  it('closes a connection that stays idle', async () => {
    const started = Date.now();
    await new Promise<void>((resolve) => {
      const s = net.connect(server.port, '127.0.0.1');
      s.on('close', () => resolve());
      s.on('error', () => {});
    });
    expect(Date.now() - started).toBeLessThan(6000);
  });
});

describe('streaming, logs and CORS', () => {
  it('answers searches while a long import is running', async () => {
    const n = 4000;
    let searchedDuringImport = 0;
    let importDone = false;
    const importing = new Promise<string>((resolve, reject) => {
      const req = http.request(`${server.url}/collections/books/documents/import?action=upsert&batch_size=40`, {
        method: 'POST',
        headers: { 'x-typesense-api-key': KEY, 'content-type': 'text/plain' },
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          importDone = true;
          resolve(text);
        });
      });
      req.on('error', reject);
      let i = 0;
      const pump = () => {
        while (i < n) {
          const ok = req.write(book(1000 + i++) + '\n');
          if (!ok) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    while (!importDone) {
      const r = await call('GET', '/collections/books/documents/search?q=book&query_by=title');
      expect(r.status).toBe(200);
      if (!importDone) searchedDuringImport++;
    }
    const lines = (await importing).split('\n');
    expect(lines).toHaveLength(n);
    expect(searchedDuringImport).toBeGreaterThan(0);
  });

  it('logs one line per request, without the key', async () => {
    const before = logLines.length;
    await call('GET', `/collections/books/documents/search?q=x&query_by=title&x-typesense-api-key=${KEY}`, { key: null });
    await call('GET', '/health', { key: null });
    await new Promise((r) => setTimeout(r, 50));
    const mine = logLines.slice(before).filter((l) => {
      const j = JSON.parse(l);
      return j.msg === 'request' && (j.url === '/health' || String(j.url).includes('q=x&'));
    });
    expect(mine).toHaveLength(2);
    expect(mine.join('\n')).not.toContain(KEY);
    expect(JSON.parse(mine[0]!)).toMatchObject({ level: 30, method: 'GET', status: 200 });
  });

  it('answers CORS preflights and allows browser origins when CORS is enabled', async () => {
    const pre = await call('OPTIONS', '/multi_search', {
      key: null,
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-typesense-api-key, content-type' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/x-typesense-api-key/);
    const r = await call('GET', '/health', { key: null, headers: { origin: 'https://shop.example' } });
    expect(r.headers.get('access-control-allow-origin')).toBe('https://shop.example');
  });
});

describe('graceful stop', () => {
  it('finishes an import in flight, then refuses new connections and closes the data directory', async () => {
    const s = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
    await call('POST', '/collections', { base: s.url, body: JSON.stringify(BOOKS_SCHEMA), headers: { 'content-type': 'application/json' } });
    const result = new Promise<string>((resolve, reject) => {
      const req = http.request(`${s.url}/collections/books/documents/import`, { method: 'POST', headers: { 'x-typesense-api-key': KEY } });
      req.on('response', (res) => {
        let t = '';
        res.on('data', (c) => (t += c));
        res.on('end', () => resolve(t));
      });
      req.on('error', reject);
      req.write(book(1) + '\n');
      // The rest arrives after the stop was requested.
      setTimeout(() => req.end(book(2) + '\n' + book(3)), 200);
    });
    await new Promise((r) => setTimeout(r, 50));
    const stopped = s.stop();
    const lines = (await result).split('\n').map((l) => JSON.parse(l));
    expect(lines).toEqual([{ success: true }, { success: true }, { success: true }]);
    await stopped;
    await expect(fetch(`${s.url}/health`)).rejects.toThrow();
  });
});
