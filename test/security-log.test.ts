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
import { KeyFinder } from '../src/keys/redact.js';
import { hashValue } from '../src/keys/keys.js';
import { Engine } from '../src/engine.js';
import { BOOKS_SCHEMA, dataDirPath } from './helpers.js';

const BOOTSTRAP = 'log-bootstrap-Secret+Key/42=';
let server: RunningServer;
let dir: string;
const logged: string[] = [];
const keys: string[] = [BOOTSTRAP];
/** An admin key with every awkward character a value may hold (JSON and URL escapes, base64's). */
const ODD = 'Odd"Key\\with/+=%25&;?#-chars';

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logged.push(String(chunk));
      done();
    },
  });
  dir = dataDirPath();
  server = await startServer({ dataDir: dir, apiKey: BOOTSTRAP, address: '127.0.0.1', port: 0, logLevel: 'trace', logStream: sink }, { engine: { merges: 'inline' } });
  const admin = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: { 'x-typesense-api-key': BOOTSTRAP, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json() as any);
  await admin('/collections', BOOKS_SCHEMA);
  const search = await admin('/keys', { description: 'search', actions: ['documents:search'], collections: ['books'], value: 'search-only-KEY-value-1234' });
  const adminKey = await admin('/keys', { description: 'admin', actions: ['*'], collections: ['*'] });
  const odd = await admin('/keys', { description: 'odd', actions: ['*'], collections: ['*'], value: ODD });
  expect(odd.value).toBe(ODD);
  keys.push(search.value, adminKey.value, generateScopedSearchKey(search.value, { filter_by: 'year:>1900' }));
});

afterAll(async () => {
  await server?.stop();
});

const lowerHex = (s: string) => s.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
const base64 = (s: string) => Buffer.from(s).toString('base64');

/** Every form of a value that could show up in a log line. */
function forms(v: string): string[] {
  const once = encodeURIComponent(v);
  const twice = encodeURIComponent(once);
  return [...new Set([v, once, twice, lowerHex(once), lowerHex(twice), v.replace(/\+/g, '%2B'), escape(v), JSON.stringify(v).slice(1, -1), base64(v), base64(v).replace(/=+$/, '')])];
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

describe('a key value sent where no key is accepted', () => {
  it('is masked in the request log wherever it is and however it is encoded, whether the request presented it or not', async () => {
    // one more key, made by another process on the same directory while the server runs
    const other = Engine.open(dir, { merges: 'off' });
    const late = (await other.createKey({ description: 'late', actions: ['*'], collections: ['*'] })).value;
    await other.close();
    const all = [...keys, ODD, late];
    const enc = encodeURIComponent;
    const from = logged.length;
    let requests = 0;
    for (const key of all) {
      const search = '/collections/books/documents/search';
      const paths = [
        `${search}?q=${enc(key)}&query_by=title`,
        `${search}?q=${enc(`in${key}side`)}&query_by=title`,
        `${search}?q=*&filter_by=${enc(`title:=[\`${key}\`]`)}`,
        `${search}?q=${lowerHex(enc(enc(key)))}&query_by=title`,
        `${search}?q=${enc(enc(enc(key)))}&query_by=title`,
        `${search}?q=${enc(base64(key))}&query_by=title`,
        `${search};x-typesense-api-key=${enc(key)}?q=*`,
        `${search};x%252Dtypesense%252Dapi%252Dkey=${enc(enc(key))}?q=*`,
        `${search}?q=*&x%252Dtypesense%252Dapi%252Dkey=${enc(key)}`,
        `/collections/books/documents/${enc(key)}`,
        `/collections/books/documents/${enc(enc(key))}`,
        `/collections/${enc(key)}/documents/search?q=*`,
      ];
      // presented nowhere (another key in the header), or no key at all
      const header = key === BOOTSTRAP ? keys[1]! : BOOTSTRAP;
      for (const p of paths) {
        for (const headers of [{ 'x-typesense-api-key': header }, {}] as Record<string, string>[]) {
          const r = await fetch(`${server.url}${p}`, { headers });
          expect(r.status).toBeLessThan(500);
          await r.arrayBuffer();
          requests++;
        }
      }
    }
    // and a line that is no request's, quoting one
    server.engine.log.error({ err: new Error(`could not reach /x?q=${enc(enc(ODD))} with ${late}`) }, 'something failed');
    const text = logged.slice(from).join('');
    expect(text.split('"msg":"request"').length - 1).toBe(requests);
    for (const line of logged.slice(from)) expect(() => JSON.parse(line)).not.toThrow();
    for (const key of all) for (const f of forms(key)) expect(text, `log holds ${f}`).not.toContain(f);
    expect(text).toContain('"msg":"something failed"');
  });
});

describe('KeyFinder', () => {
  const GENERATED = 'Xk3qM9vT2bLwP0aZr7NcY5eHfJ1gU8sD';
  const hashedOnly = (v: string, withLength: boolean) =>
    new KeyFinder({ values: [], hashed: [{ prefix: v.slice(0, 4), hash: hashValue(v), ...(withLength ? { length: v.length } : {}) }], parents: [] });

  it('finds a key known only by its prefix and hash, with or without its length, inside a longer token', () => {
    for (const f of [hashedOnly(GENERATED, true), hashedOnly(GENERATED, false)]) {
      expect(f.mask(`/s?q=abc${GENERATED}def&b=1`)).toBe('/s?q=abc***def&b=1');
      expect(f.mask(`/s?q=${encodeURIComponent(encodeURIComponent('x ' + GENERATED))}`)).toBe('/s?q=x%2520***');
      // a value that only starts like the key is left alone
      expect(f.mask(`/s?q=${GENERATED.slice(0, 10)}zz`)).toBe(`/s?q=${GENERATED.slice(0, 10)}zz`);
    }
  });

  it('keeps a JSON line valid, masking a value written with JSON escapes', () => {
    const f = new KeyFinder({ values: [ODD], hashed: [], parents: [] });
    const line = JSON.stringify({ msg: `key ${ODD} and ${encodeURIComponent(ODD)}`, n: 1 });
    const out = f.mask(line, { json: true });
    expect(JSON.parse(out)).toEqual({ msg: 'key *** and ***', n: 1 });
  });

  it('finds a scoped key signed by a known parent, inside a longer base64 token and percent-encoded', () => {
    const parent = 'parent-search-key-0001';
    const scoped = generateScopedSearchKey(parent, { filter_by: 'year:>1900', expires_at: 9999999999 });
    const f = new KeyFinder({ values: [parent], hashed: [], parents: [parent] });
    for (const pre of ['', 'a', 'ab', 'abc', 'abcd']) {
      expect(f.mask(`q=${pre}${scoped}`)).not.toContain(scoped.slice(8, 40));
      expect(f.mask(`q=${encodeURIComponent(pre + scoped)}`)).not.toContain(encodeURIComponent(scoped).slice(8, 40));
    }
    // one signed by another parent is no key of this directory
    const foreign = generateScopedSearchKey('another-parent-key', { filter_by: 'year:>1900' });
    expect(f.mask(`q=${foreign}`)).toBe(`q=${foreign}`);
  });

  it('bounds its work on a text full of a key prefix, masking what it could not check', () => {
    const f = hashedOnly(GENERATED, false);
    const text = `/s?q=${GENERATED.slice(0, 4).repeat(2000)}`;
    const t0 = performance.now();
    const out = f.mask(text);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(out.startsWith('/s?q=')).toBe(true);
    expect(out).toContain('***');
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
    expect(redactUrl('/s?filter_by=title%3A%3D%60Key%2B1%60&q=a', ['Key+1'])).toBe('/s?filter_by=title%3A%3D%60***%60&q=a');
    expect(redactUrl('/c/books/documents/ab%2FKey%2B1', ['ab/Key+1'])).toBe('/c/books/documents/***');
    expect(redactUrl('/c/x/documents/search;X-Typesense-Api-Key=K1/more?q=a', [])).toBe('/c/x/documents/search;X-Typesense-Api-Key=***/more?q=a');
    expect(redactUrl('/c/api_keys/documents/d1?q=a', ['K1'])).toBe('/c/api_keys/documents/d1?q=a');
  });

  it('drops a key parameter whose name was percent-encoded twice, and masks a key-named path value however encoded', () => {
    expect(redactUrl('/s?q=a&x%252Dtypesense%252Dapi%252Dkey=V1&x%25252dtypesense-api-key=V2', [])).toBe('/s?q=a');
    expect(redactUrl('/c/x/documents/search;x%252Dtypesense%252Dapi%252Dkey=Secret1?q=a', [])).toBe('/c/x/documents/search;x%252Dtypesense%252Dapi%252Dkey=***?q=a');
    expect(redactUrl('/c/x/search%3Bx-typesense-api-key%3DSecret2%2Fmore', [])).not.toContain('Secret2');
  });
});
