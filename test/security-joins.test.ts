/**
 * A key reaches through a join only the collections it may act on itself, forward or
 * reverse, in filter_by, include_fields and sort_by, over search, multi_search and the
 * document routes; a scoped key's `$c(...)` clauses bound what it sees of `c` there; and
 * `out_of` counts what a scoped key may see, not the whole collection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { generateScopedSearchKey } from '../src/keys/scoped.js';
import { dataDirPath } from './helpers.js';

const ADMIN = 'joins-bootstrap-key';
let server: RunningServer;
let admin: Client;
let notesOnly = '';
let notesRead = '';
let notesAndTalk = '';
let both = '';

async function get(path: string, key: string) {
  const res = await fetch(`${server.url}${path}`, { headers: { 'x-typesense-api-key': key } });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body, text };
}

async function multi(searches: unknown[], key: string, extra: Record<string, unknown> = {}) {
  const res = await fetch(`${server.url}/multi_search`, {
    method: 'POST',
    headers: { 'x-typesense-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ searches, ...extra }),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

const search = (collection: string, params: Record<string, string>) => `/collections/${collection}/documents/search?${new URLSearchParams({ q: '*', per_page: '250', ...params })}`;

// 60 notes, owner i % 3; comments on the first 12 notes: n0..n5 by users 1 and 2, n6..n11 by user 2 only
const NOTES = Array.from({ length: 60 }, (_, i) => ({ id: `n${i}`, title: `note ${['red', 'blue', 'green'][i % 3]} ${i}`, owner: i % 3 }));
const COMMENTS = [
  ...Array.from({ length: 6 }, (_, i) => ({ id: `c1-${i}`, body: `secret-comment by one on n${i}`, user_id: 1, score: 1, note_ref: `n${i}` })),
  ...Array.from({ length: 12 }, (_, i) => ({ id: `c2-${i}`, body: `comment by two on n${i}`, user_id: 2, score: 20 - i, note_ref: `n${i}` })),
];

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  admin = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: ADMIN, connectionTimeoutSeconds: 5, logLevel: 'silent' });
  await admin.collections().create({ name: 'notes', fields: [{ name: 'title', type: 'string' }, { name: 'owner', type: 'int32', facet: true }] } as never);
  await admin.collections().create({
    name: 'comments',
    fields: [
      { name: 'body', type: 'string' },
      { name: 'user_id', type: 'int32', facet: true },
      { name: 'score', type: 'int32' },
      { name: 'note_ref', type: 'string', reference: 'notes.id' },
    ],
  } as never);
  await admin.collections('notes').documents().import(NOTES);
  await admin.collections('comments').documents().import(COMMENTS);
  await admin.aliases().upsert('talk', { collection_name: 'comments' });
  notesOnly = (await admin.keys().create({ description: 'notes', actions: ['documents:search'], collections: ['notes'] })).value!;
  notesRead = (await admin.keys().create({ description: 'read notes', actions: ['documents:get', 'documents:export'], collections: ['notes'] })).value!;
  notesAndTalk = (await admin.keys().create({ description: 'notes and the alias', actions: ['documents:search'], collections: ['notes', 'talk'] })).value!;
  both = (await admin.keys().create({ description: 'notes and comments', actions: ['documents:search'], collections: ['notes', 'comments'] })).value!;
});

afterAll(async () => {
  await server?.stop();
});

describe('a join reaches only collections the key may search', () => {
  it('refuses a reverse join in filter_by with 401, as a direct search of that collection is', async () => {
    const direct = await get(search('comments', {}), notesOnly);
    expect(direct.status).toBe(401);
    const r = await get(search('notes', { filter_by: '$comments(id:*)' }), notesOnly);
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/`comments`/);
    expect(r.text).not.toContain('secret-comment');
    // nested inside an allowed clause, and behind ||
    for (const f of ['id:* || $comments(user_id:=1)', '(owner:=1 || $comments(body:secret))', 'owner:>0 && $comments($notes(id:*))']) {
      expect((await get(search('notes', { filter_by: f }), notesOnly)).status, f).toBe(401);
    }
  });

  it('refuses joined fields in include_fields and joined sorts', async () => {
    const inc = await get(search('notes', { include_fields: 'id,$comments(*)' }), notesOnly);
    expect(inc.status).toBe(401);
    expect(inc.body.message).toMatch(/include_fields/);
    expect(inc.text).not.toContain('secret-comment');
    // also with no hit to decorate
    expect((await get(search('notes', { filter_by: 'id:=nope', include_fields: '$comments(body, strategy: merge)' }), notesOnly)).status).toBe(401);
    const sort = await get(search('notes', { sort_by: '$comments(score:asc)' }), notesOnly);
    expect(sort.status).toBe(401);
    expect(sort.body.message).toMatch(/sort_by/);
    // excluding a joined collection's fields shows nothing of it: allowed
    expect((await get(search('notes', { exclude_fields: '$comments(body)' }), notesOnly)).status).toBe(200);
  });

  it('refuses it in every multi_search and union search, and lets the key join what it may search', async () => {
    const m = await multi([{ collection: 'notes', q: '*', filter_by: '$comments(user_id:=1)' }, { collection: 'notes', q: '*', include_fields: '$comments(*)' }, { collection: 'notes', q: '*' }], notesOnly);
    expect(m.status).toBe(200);
    expect(m.body.results.map((x: any) => x.code ?? 200)).toEqual([401, 401, 200]);
    expect(m.text).not.toContain('secret-comment');
    const u = await multi([{ collection: 'notes', q: '*', include_fields: 'id,$comments(body)' }], notesOnly, { union: true });
    expect(u.status).toBe(401);
    expect(u.text).not.toContain('secret-comment');
    const ok = await get(search('notes', { filter_by: '$comments(user_id:=1)', include_fields: 'id,$comments(body)' }), both);
    expect(ok.status).toBe(200);
    expect(ok.body.found).toBe(6);
  });

  it("is refused even when another key's answer to the same request is cached", async () => {
    const params = { filter_by: '$comments(user_id:=1)', include_fields: 'id,$comments(body)', use_cache: 'true' };
    for (const key of [ADMIN, both]) expect((await get(search('notes', params), key)).text).toContain('secret-comment');
    const r = await get(search('notes', params), notesOnly);
    expect(r.status).toBe(401);
    expect(r.text).not.toContain('secret-comment');
  });

  it('judges an alias by its name or its collection, and refuses a missing or prototype-named collection as any other', async () => {
    expect((await get(search('notes', { filter_by: '$talk(id:*)' }), notesOnly)).status).toBe(401);
    const viaAlias = await get(search('notes', { filter_by: '$talk(user_id:=1)' }), notesAndTalk);
    expect(viaAlias.status).toBe(200);
    expect(viaAlias.body.found).toBe(6);
    // the key names the alias, not the collection: the collection's own name is refused
    expect((await get(search('notes', { filter_by: '$comments(user_id:=1)' }), notesAndTalk)).status).toBe(401);
    for (const name of ['nope', '__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const r = await get(search('notes', { filter_by: `$${name}(id:*)` }), notesOnly);
      expect(r.status, name).toBe(401);
      expect(r.body.message).toContain(name);
    }
    // an admin is told the collection does not exist
    expect((await get(search('notes', { filter_by: '$__proto__(id:*)' }), ADMIN)).status).toBe(400);
  });

  it('holds on the document routes: get with joined fields, export with a join filter or joined fields', async () => {
    const doc = await get('/collections/notes/documents/n1?include_fields=id,$comments(body)', notesRead);
    expect(doc.status).toBe(401);
    expect(doc.text).not.toContain('secret-comment');
    expect((await get('/collections/notes/documents/n1', notesRead)).status).toBe(200);
    const ex1 = await get(`/collections/notes/documents/export?include_fields=${encodeURIComponent('id,$comments(body)')}`, notesRead);
    expect(ex1.status).toBe(401);
    expect(ex1.text).not.toContain('secret-comment');
    const ex2 = await get(`/collections/notes/documents/export?filter_by=${encodeURIComponent('$comments(body:secret)')}`, notesRead);
    expect(ex2.status).toBe(401);
    const adminDoc = await get('/collections/notes/documents/n1?include_fields=id,$comments(body)', ADMIN);
    expect(adminDoc.status).toBe(200);
    expect(adminDoc.text).toContain('secret-comment');
  });
});

describe("a scoped key's filter naming a joined collection", () => {
  let user2 = '';
  beforeAll(() => {
    user2 = generateScopedSearchKey(both, { filter_by: '$comments(user_id:=2)' });
  });

  it('bounds the joined documents shown by include_fields', async () => {
    const r = await get(search('notes', { include_fields: 'id,$comments(body, user_id, strategy: nest_array)' }), user2);
    expect(r.status).toBe(200);
    expect(r.body.found).toBe(12);
    const shown = r.body.hits.flatMap((h: any) => h.document.comments);
    expect(shown).toHaveLength(12);
    expect(shown.every((c: any) => c.user_id === 2)).toBe(true);
    expect(r.text).not.toContain('secret-comment');
  });

  it('bounds a request join filter: what the key may not see of the joined collection matches nothing', async () => {
    const admin1 = await get(search('notes', { filter_by: '$comments(user_id:=1)' }), ADMIN);
    expect(admin1.body.found).toBe(6);
    const r = await get(search('notes', { filter_by: '$comments(user_id:=1)' }), user2);
    expect(r.status).toBe(200);
    expect(r.body.found).toBe(0);
    const body = await get(search('notes', { filter_by: '$comments(body:secret)' }), user2);
    expect(body.body.found).toBe(0);
  });

  it('bounds a joined sort: only the joined documents the key sees give the value', async () => {
    // n0..n5 have a comment by user 1 with score 1 (seen first) and one by user 2 with score 20 - i
    const r = await get(search('notes', { sort_by: '$comments(score:asc)', include_fields: 'id' }), user2);
    expect(r.status).toBe(200);
    expect(r.body.hits.map((h: any) => h.document.id)).toEqual(Array.from({ length: 12 }, (_, i) => `n${11 - i}`));
  });

  it('needs the joined collection among the parent key\'s collections', async () => {
    const outside = generateScopedSearchKey(notesOnly, { filter_by: '$comments(user_id:=2)' });
    const r = await get(search('notes', {}), outside);
    expect(r.status).toBe(401);
  });
});

describe('out_of under a scoped key', () => {
  it('counts the documents the key can see (20 of 60), whatever the request filters', async () => {
    const owner2 = generateScopedSearchKey(both, { filter_by: 'owner:=2' });
    expect((await get(search('notes', {}), ADMIN)).body.out_of).toBe(60);
    expect((await get(search('notes', {}), notesOnly)).body.out_of).toBe(60);
    const r = await get(search('notes', {}), owner2);
    expect(r.body).toMatchObject({ found: 20, out_of: 20 });
    const filtered = await get(search('notes', { q: 'red', query_by: 'title', filter_by: 'id:!=n2' }), owner2);
    expect(filtered.body.out_of).toBe(20);
    const m = await multi([{ collection: 'notes', q: '*' }, { collection: 'comments', q: '*' }], owner2);
    // comments has no `owner` field: that search fails in its slot
    expect(m.body.results[0].out_of).toBe(20);
    expect(m.body.results[1].code).toBe(400);
  });

  it('agrees with an admin search under the key\'s filter, for filters with and without joins', async () => {
    for (const f of ['owner:=0', 'owner:[1, 2]', 'title:red', 'owner:=1 || title:blue', '$comments(user_id:=2)', '$comments(user_id:=1) && owner:=0', 'id:=nope']) {
      const key = generateScopedSearchKey(both, { filter_by: f });
      const expected = (await get(search('notes', { filter_by: f }), ADMIN)).body.found;
      const seen = await get(search('notes', { q: 'note', query_by: 'title', per_page: '1' }), key);
      expect(seen.status, f).toBe(200);
      expect(seen.body.out_of, f).toBe(expected);
    }
  });

  it('follows writes: a document added or deleted changes the count at once', async () => {
    const owner2 = generateScopedSearchKey(both, { filter_by: 'owner:=2' });
    expect((await get(search('notes', {}), owner2)).body.out_of).toBe(20);
    await admin.collections('notes').documents().create({ id: 'extra', title: 'note extra', owner: 2 });
    expect((await get(search('notes', {}), owner2)).body.out_of).toBe(21);
    await admin.collections('notes').documents('n2').delete();
    await admin.collections('notes').documents('extra').delete();
    expect((await get(search('notes', {}), owner2)).body.out_of).toBe(19);
    await admin.collections('notes').documents().create(NOTES[2]!);
    expect((await get(search('notes', {}), owner2)).body.out_of).toBe(20);
  });
});
