/**
 * Hostile input gets a 400 (or its import line's own error), never a 5xx: deep filters,
 * deep documents, huge tokens, requests Node's HTTP layer refuses, ids no route could
 * reach; and an import never fails as a whole because of one line, over HTTP and in the CLI.
 */
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { INPUT_LIMITS } from '../src/defaults.js';
import { cli, dataDirPath, jsonLines, openEngine, tmpDir } from './helpers.js';

const KEY = 'input-test-key';
let server: RunningServer;

async function call(method: string, p: string, body?: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${p}`, {
    method,
    headers: { 'x-typesense-api-key': KEY, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

/** Sends raw bytes and returns the status line's code and the body. */
function raw(text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const s = net.connect(server.port, '127.0.0.1', () => s.end(text));
    let out = '';
    s.on('data', (d) => (out += d));
    const done = () => {
      const m = /^HTTP\/1\.1 (\d+)/.exec(out);
      resolve({ status: m ? Number(m[1]) : 0, body: out.slice(out.indexOf('\r\n\r\n') + 4) });
    };
    s.on('close', done);
    s.on('error', done);
  });
}

const SCHEMA = {
  name: 'notes',
  enable_nested_fields: true,
  fields: [
    { name: 'title', type: 'string' },
    { name: 'tag', type: 'string', facet: true, optional: true },
    { name: '.*', type: 'auto' },
  ],
};

/** JSON text of an object nested `depth` levels (as text: JSON.stringify itself overflows on deep values). */
function nested(depth: number): string {
  return '{"n":'.repeat(depth - 1) + '{"leaf":"x"}' + '}'.repeat(depth - 1);
}

beforeAll(async () => {
  server = await startServer(
    { dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent', limits: { bodyLimit: 1 << 20 } },
    { engine: { merges: 'inline' } },
  );
  expect((await call('POST', '/collections', JSON.stringify(SCHEMA))).status).toBe(201);
});

afterAll(async () => {
  await server?.stop();
});

describe('filter_by', () => {
  const deep = (n: number) => '('.repeat(n) + 'tag:=a' + ')'.repeat(n);

  it('refuses parentheses nested deeper than the limit with 400, over GET and multi_search', async () => {
    const g = await call('GET', `/collections/notes/documents/search?q=*&filter_by=${encodeURIComponent(deep(1900))}`);
    expect(g.status).toBe(400);
    expect(g.json().message).toContain(`deeper than ${INPUT_LIMITS.maxFilterDepth}`);
    const m = await call('POST', '/multi_search', JSON.stringify({ searches: [{ collection: 'notes', q: '*', filter_by: deep(5000) }] }));
    expect(m.status).toBe(200);
    expect(m.json().results[0]).toEqual({ code: 400, error: expect.stringContaining('nest deeper') });
    const joins = '$notes('.repeat(3000) + 'tag:=a' + ')'.repeat(3000);
    const j = await call('POST', '/multi_search', JSON.stringify({ searches: [{ collection: 'notes', q: '*', filter_by: joins }] }));
    expect(j.json().results[0].code).toBe(400);
  });

  it('takes a filter nested up to the limit', async () => {
    const ok = await call('GET', `/collections/notes/documents/search?q=*&filter_by=${encodeURIComponent(deep(INPUT_LIMITS.maxFilterDepth))}`);
    expect(ok.status).toBe(200);
  });

  it('refuses a deep filter in the CLI with one line and the usage-error status', async () => {
    const dir = dataDirPath();
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    const schemaFile = path.join(tmpDir(), 's.json');
    fs.writeFileSync(schemaFile, JSON.stringify(SCHEMA));
    expect((await cli(['collections', 'create', schemaFile, '-d', dir])).code).toBe(0);
    const r = await cli(['search', 'notes', '-q', '*', '--filter-by', deep(5000), '-d', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('nest deeper');
  });
});

describe('documents', () => {
  it('refuses a document nested deeper than the limit with 400 and takes one within it', async () => {
    const deepDoc = `{"id":"deep","title":"t","body":${nested(5000)}}`;
    const r = await call('POST', '/collections/notes/documents', deepDoc);
    expect(r.status).toBe(400);
    expect(r.json().message).toContain(`deeper than ${INPUT_LIMITS.maxJsonDepth}`);
    const fine = await call('POST', '/collections/notes/documents', `{"id":"fine","title":"t","body":${nested(INPUT_LIMITS.maxJsonDepth - 2)}}`);
    expect(fine.status).toBe(201);
  });

  it('indexes a 200,000-character token as its first characters, and finds it by them', async () => {
    const word = 'q'.repeat(200_000);
    const r = await call('POST', '/collections/notes/documents', JSON.stringify({ id: 'long', title: `start ${word} end` }));
    expect(r.status).toBe(201);
    const s = await call('POST', '/multi_search', JSON.stringify({ searches: [{ collection: 'notes', q: word, query_by: 'title', prefix: false, num_typos: 0 }] }));
    expect(s.json().results[0].hits.map((h: any) => h.document.id)).toEqual(['long']);
    const prefix = 'q'.repeat(INPUT_LIMITS.maxTokenLength);
    const p = await call('GET', `/collections/notes/documents/search?q=${prefix}&query_by=title&prefix=false&num_typos=0&exclude_fields=title`);
    expect(p.json().found).toBe(1);
    const hl = await call('GET', `/collections/notes/documents/search?q=${prefix}&query_by=title&prefix=false&num_typos=0`);
    expect(hl.json().hits[0].highlights[0].matched_tokens).toHaveLength(1);
  });

  it('takes an array of 100,000 values', async () => {
    const r = await call('POST', '/collections/notes/documents', JSON.stringify({ id: 'wide', title: 'w', nums: Array.from({ length: 100_000 }, (_, i) => i) }));
    expect(r.status).toBe(201);
  });
});

describe('import', () => {
  it('answers every line over HTTP when one holds a 10-million-character token and another is too deep', async () => {
    const lines = [
      JSON.stringify({ id: 'i1', title: 'first' }),
      JSON.stringify({ id: 'i2', title: `huge ${'z'.repeat(10_000_000)}` }),
      `{"id":"i3","title":"third","body":${nested(200)}}`,
      JSON.stringify({ id: 'i4', title: 'fourth' }),
    ];
    const r = await call('POST', '/collections/notes/documents/import', lines.join('\n'), { 'content-type': 'text/plain' });
    expect(r.status).toBe(200);
    const out = jsonLines(r.text);
    expect(out.map((o) => o.success)).toEqual([true, true, false, true]);
    expect(out[2].error).toContain('deeper than');
    for (const id of ['i1', 'i2', 'i4']) expect((await call('GET', `/collections/notes/documents/${id}?exclude_fields=title`)).status).toBe(200);
  });

  it('lands the other lines in the CLI when the first batch holds a 200,000-character token', async () => {
    const dir = dataDirPath();
    const schemaFile = path.join(tmpDir(), 's.json');
    fs.writeFileSync(schemaFile, JSON.stringify(SCHEMA));
    expect((await cli(['collections', 'create', schemaFile, '-d', dir])).code).toBe(0);
    const input = [JSON.stringify({ id: 'a', title: 'x'.repeat(200_000) }), ...Array.from({ length: 50 }, (_, i) => JSON.stringify({ id: `n${i}`, title: `note ${i}` }))].join('\n');
    const r = await cli(['import', 'notes', '-d', dir, '--no-progress'], { input });
    expect(r.stderr).not.toMatch(/error|stack|exceeded/i);
    expect(r.code).toBe(0);
    expect(jsonLines(r.stdout).every((o) => o.success)).toBe(true);
    const ex = await cli(['export', 'notes', '-d', dir, '--include-fields', 'id']);
    expect(jsonLines(ex.stdout)).toHaveLength(51);
  });

  it('fails only the line an unexpected error meets, and lands the rest of its batch', async () => {
    const engine = openEngine();
    try {
      await engine.createCollection({ name: 'c', fields: [{ name: 'title', type: 'string' }] });
      engine.addHooks({
        beforeWrite: (_ctx, _seq, doc) => {
          if (doc.id === 'boom') throw new TypeError('planted failure');
        },
        needsDocuments: () => true,
      });
      const results: string[] = [];
      const input = ['a', 'boom', 'b', 'c'].map((id) => JSON.stringify({ id, title: id })).join('\n');
      const summary = await engine.import('c', [input], { batchSize: 40 }, (line) => {
        results.push(line);
      });
      expect(summary).toEqual({ total: 4, succeeded: 3, failed: 1 });
      expect(JSON.parse(results[1]!)).toMatchObject({ success: false, error: expect.stringContaining('planted failure') });
      expect(engine.liveCount('c')).toBe(3);
    } finally {
      await engine.close();
    }
  });
});

describe('names longer than any collection or alias name', () => {
  it('are answered as names of nothing (404, or 400 where one is being made), never 500', async () => {
    const long = 'n'.repeat(5000);
    const m = await call('POST', '/multi_search', JSON.stringify({ searches: [{ collection: long, q: '*' }] }));
    expect(m.status).toBe(200);
    expect(m.json().results[0]).toMatchObject({ code: 404 });
    const path = 'p'.repeat(2000);
    expect((await call('GET', `/collections/${path}/documents/search?q=*`)).status).toBe(404);
    expect((await call('GET', `/aliases/${path}`)).status).toBe(404);
    expect((await call('DELETE', `/aliases/${path}`)).status).toBe(404);
    expect((await call('PUT', `/aliases/${path}`, JSON.stringify({ collection_name: 'notes' }))).status).toBe(400);
    // (an alias may name a collection not made yet, but not one no collection could be named)
    expect((await call('PUT', '/aliases/short', JSON.stringify({ collection_name: long }))).status).toBe(400);
  });
});

describe('patterns in schemas and facet_by', () => {
  it('writes a document whose field name `(a+)+$` would backtrack on, at once', async () => {
    const schema = { name: 'patterned', fields: [{ name: 'title', type: 'string' }, { name: '(a+)+$', type: 'string', optional: true }] };
    expect((await call('POST', '/collections', JSON.stringify(schema))).status).toBe(201);
    const t0 = performance.now();
    // 28 `a`s and a `!`: no match, after seconds of backtracking in a backtracking engine
    const r = await call('POST', '/collections/patterned/documents', JSON.stringify({ id: 'p1', title: 't', ['a'.repeat(28) + '!']: 'x', ['a'.repeat(75)]: 'y' }));
    expect(r.status).toBe(201);
    expect(performance.now() - t0).toBeLessThan(1000);
    const fields = (await call('GET', '/collections/patterned')).json().fields.map((f: { name: string }) => f.name);
    expect(fields).toEqual(['title', '(a+)+$', 'a'.repeat(75)]);
  });

  it('refuses a field name pattern with a backreference or a lookaround with 400, saying why', async () => {
    const r = await call('POST', '/collections', JSON.stringify({ name: 'refused', fields: [{ name: '(.)\\1', type: 'string' }] }));
    expect(r.status).toBe(400);
    expect(r.json().message).toMatch(/field `\(\.\)\\1`: the name cannot be used as a pattern: backreferences/);
    const l = await call('PATCH', '/collections/notes', JSON.stringify({ fields: [{ name: '(?!tag).*_s', type: 'string' }] }));
    expect(l.status).toBe(400);
    expect(l.json().message).toMatch(/lookahead and lookbehind/);
  });

  it('expands a facet_by glob of many stars against long field names at once', async () => {
    const schema = { name: 'globbed', fields: [{ name: '.*_facet', type: 'string', facet: true }] };
    expect((await call('POST', '/collections', JSON.stringify(schema))).status).toBe(201);
    const long = `${'a'.repeat(40)}_facet`;
    expect((await call('POST', '/collections/globbed/documents', JSON.stringify({ id: 'g1', [long]: 'v', b_facet: 'w' }))).status).toBe(201);
    const t0 = performance.now();
    // `^.*a.*a…a.*b$` backtracks through every way of placing 8 stars in 46 characters (seconds)
    const none = await call('GET', `/collections/globbed/documents/search?q=*&facet_by=${encodeURIComponent('*a'.repeat(8) + '*b')}`);
    expect(none.status).toBe(200);
    expect(none.json().facet_counts).toEqual([]);
    expect(performance.now() - t0).toBeLessThan(1000);
    const some = await call('GET', `/collections/globbed/documents/search?q=*&facet_by=${encodeURIComponent('*a*a*_facet')}`);
    expect(some.json().facet_counts.map((f: { field_name: string }) => f.field_name)).toEqual([long]);
  });
});

describe("requests Node's HTTP layer refuses", () => {
  it('answers each with a JSON message and the right status', async () => {
    const noHost = await raw('GET /health HTTP/1.1\r\n\r\n');
    expect(noHost.status).toBe(400);
    expect(JSON.parse(noHost.body).message).toMatch(/Host/);
    const expectHeader = await raw('POST /collections HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}');
    expect(expectHeader.status).toBe(417);
    expect(JSON.parse(expectHeader.body).message).toMatch(/Expect/);
    const bigHeader = await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(bigHeader.status).toBe(431);
    expect(JSON.parse(bigHeader.body).message).toMatch(/headers/);
    const bigUrl = await raw(`GET /collections/notes/documents/search?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(bigUrl.status).toBe(414);
    expect(JSON.parse(bigUrl.body).message).toMatch(/multi_search/);
    const garbage = await raw('GET /health HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n');
    expect(garbage.status).toBe(400);
    expect(JSON.parse(garbage.body).message).toMatch(/malformed/);
    const big = await call('POST', '/collections/notes/documents', JSON.stringify({ id: 'x', title: 'y'.repeat(2 << 20) }));
    expect(big.status).toBe(413);
    expect(big.json().message).toMatch(/import/);
  });
});

describe('ids no route could reach', () => {
  it('are refused when written, with a message saying why', async () => {
    for (const id of ['.', '..', 'search', 'export', 'import']) {
      const r = await call('POST', '/collections/notes/documents', JSON.stringify({ id, title: 'x' }));
      expect(r.status, id).toBe(400);
      expect(r.json().message).toContain(`"${id}"`);
    }
    const imp = await call('POST', '/collections/notes/documents/import', JSON.stringify({ id: 'search', title: 'x' }), { 'content-type': 'text/plain' });
    expect(jsonLines(imp.text)[0]).toMatchObject({ success: false, error: expect.stringContaining('search route') });
  });

  it('leave ids with dots inside usable on every route', async () => {
    expect((await call('POST', '/collections/notes/documents', JSON.stringify({ id: 'a.b..c', title: 'dots' }))).status).toBe(201);
    expect((await call('GET', '/collections/notes/documents/a.b..c')).json().title).toBe('dots');
    expect((await call('PATCH', '/collections/notes/documents/a.b..c', JSON.stringify({ title: 'changed' }))).status).toBe(200);
    expect((await call('GET', '/collections/notes/documents/a.b..c')).json().title).toBe('changed');
    expect((await call('DELETE', '/collections/notes/documents/a.b..c')).status).toBe(200);
    expect((await call('GET', '/collections/notes/documents/a.b..c')).status).toBe(404);
  });
});
