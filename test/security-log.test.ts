/**
 * Keys never reach the log: a key sent in a query parameter is left out of the logged URL
 * whatever the parameter's case or percent-encoding, and any other parameter whose value
 * holds a presented key, any part of the path that does, and a key-named path parameter
 * are masked. Checked by grepping every captured log line, at the
 * most verbose level, for each key value in every form it was sent.
 */
import { Writable } from 'node:stream';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { generateScopedSearchKey } from '../src/keys/scoped.js';
import { redactUrl } from '../src/server/log.js';
import { BOOKS_SCHEMA, dataDirPath } from './helpers.js';

const BOOTSTRAP = 'log-bootstrap-Secret+Key/42=';
let server: RunningServer;
const logged: string[] = [];
const keys: string[] = [BOOTSTRAP];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logged.push(String(chunk));
      done();
    },
  });
  server = await startServer({ dataDir: dataDirPath(), apiKey: BOOTSTRAP, address: '127.0.0.1', port: 0, logLevel: 'trace', logStream: sink }, { engine: { merges: 'inline' } });
  const admin = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: { 'x-typesense-api-key': BOOTSTRAP, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json() as any);
  await admin('/collections', BOOKS_SCHEMA);
  const search = await admin('/keys', { description: 'search', actions: ['documents:search'], collections: ['books'], value: 'search-only-KEY-value-1234' });
  const adminKey = await admin('/keys', { description: 'admin', actions: ['*'], collections: ['*'] });
  keys.push(search.value, adminKey.value, generateScopedSearchKey(search.value, { filter_by: 'year:>1900' }));
});

afterAll(async () => {
  await server?.stop();
});

/** Every form of a value that could show up in a log line. */
function forms(v: string): string[] {
  return [...new Set([v, encodeURIComponent(v), v.replace(/\+/g, '%2B'), escape(v)])];
}

const encodeName = (name: string) => [...name].map((c) => (c === '-' ? '%2D' : c)).join('');

describe('the request log', () => {
  it('never holds a key sent in a query parameter of any case or encoding, inside another parameter or in the path', async () => {
    const names = [
      'x-typesense-api-key',
      'x-service-api-key',
      'X-TYPESENSE-API-KEY',
      'X-Service-Api-Key',
      encodeName('x-typesense-api-key'),
      encodeName('X-TYPESENSE-API-KEY'),
      '%78-typesense-api-key',
      'x-typesense-api-key%20',
    ];
    let allowed = 0;
    for (const key of keys) {
      for (const name of names) {
        const r = await fetch(`${server.url}/collections/books/documents/search?q=*&${name}=${encodeURIComponent(key)}`);
        if (r.status === 200) allowed++;
        await r.arrayBuffer();
      }
      // in the header, and echoed in another parameter
      const h = await fetch(`${server.url}/collections/books/documents/search?q=${encodeURIComponent(key)}&query_by=title`, { headers: { 'X-TYPESENSE-API-KEY': key } });
      expect(h.status).toBe(200);
      await h.arrayBuffer();
      // inside another parameter's value, in the path, and as a key-named path parameter
      for (const p of [
        `/collections/books/documents/search?q=*&filter_by=${encodeURIComponent(`title:=[\`${key}\`, x]`)}`,
        `/collections/books/documents/${encodeURIComponent(key)}`,
        `/collections/books/documents/search;x-typesense-api-key=${encodeURIComponent(key)}?q=*`,
      ]) {
        const r = await fetch(`${server.url}${p}`, { headers: { 'x-typesense-api-key': key } });
        expect(r.status).toBeLessThan(500);
        await r.arrayBuffer();
      }
    }
    // the lower-case and percent-encoded lower-case names are taken as the key, as they always were
    expect(allowed).toBeGreaterThanOrEqual(keys.length * 2);
    const text = logged.join('');
    expect(text).toContain('"msg":"request"');
    for (const key of keys) for (const f of forms(key)) expect(text, `log holds ${f}`).not.toContain(f);
    expect(text).toContain('q=***');
  });

  it('holds nothing of a malformed request that Node refuses before routing', async () => {
    const raw = (text: string) =>
      new Promise<string>((resolve) => {
        const s = net.connect(server.port, '127.0.0.1', () => s.end(text));
        let out = '';
        s.on('data', (d) => (out += d));
        s.on('close', () => resolve(out));
        s.on('error', () => resolve(out));
      });
    const from = logged.length;
    await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Typesense-Api-Key: ${BOOTSTRAP}\r\nBad Header\r\n\r\n`);
    await raw(`GET /collections?x-typesense-api-key=${encodeURIComponent(BOOTSTRAP)} HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(20000)}\r\n\r\n`);
    const text = logged.slice(from).join('');
    for (const f of forms(BOOTSTRAP)) expect(text).not.toContain(f);
  });
});

describe('redactUrl', () => {
  it('drops key parameters and masks parameters equal to a presented key, keeping the rest', () => {
    expect(redactUrl('/c/x/documents/search?q=a&x-typesense-api-key=K1&per_page=3', ['K1'])).toBe('/c/x/documents/search?q=a&per_page=3');
    expect(redactUrl('/s?X%2DTYPESENSE%2DAPI%2DKEY=K1', [])).toBe('/s');
    expect(redactUrl('/s?q=K%2B1&a=b', ['K+1'])).toBe('/s?q=***&a=b');
    expect(redactUrl('/s?q=%E0%A4%A&x', ['K'])).toBe('/s?q=%E0%A4%A&x');
    expect(redactUrl('/health', ['K'])).toBe('/health');
  });

  it('masks a presented key inside another value or in the path, and a key-named path parameter', () => {
    expect(redactUrl('/s?filter_by=title%3A%3D%60Key%2B1%60&q=a', ['Key+1'])).toBe('/s?filter_by=***&q=a');
    expect(redactUrl('/c/books/documents/ab%2FKey%2B1', ['ab/Key+1'])).toBe('/c/books/documents/***');
    expect(redactUrl('/c/x/documents/search;X-Typesense-Api-Key=K1/more?q=a', [])).toBe('/c/x/documents/search;X-Typesense-Api-Key=***/more?q=a');
    expect(redactUrl('/c/api_keys/documents/d1?q=a', ['K1'])).toBe('/c/api_keys/documents/d1?q=a');
  });
});
