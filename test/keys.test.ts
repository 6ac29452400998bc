/**
 * API keys: scopes, storage of secrets, expiry and autodelete, scoped search keys, and
 * `fathom keys` on the data directory (which a running server sees at once).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { actionAllowed, allows, collectionAllowed } from '../src/keys/scope.js';
import { createKey, deleteKey, findKeyByValue, getKey, listKeys, purgeExpiredKeys, type KeyRecord } from '../src/keys/keys.js';
import { Authenticator } from '../src/keys/auth.js';
import { applyEmbedded, generateScopedSearchKey } from '../src/keys/scoped.js';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { cli, dataDirPath, openEngine } from './helpers.js';

const servers: RunningServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop();
});

describe('key scopes', () => {
  it('matches actions exactly or by wildcard', () => {
    expect(actionAllowed(['documents:search'], 'documents:search')).toBe(true);
    expect(actionAllowed(['documents:search'], 'documents:get')).toBe(false);
    expect(actionAllowed(['documents:*'], 'documents:delete')).toBe(true);
    expect(actionAllowed(['documents:*'], 'collections:delete')).toBe(false);
    expect(actionAllowed(['*'], 'keys:create')).toBe(true);
    expect(actionAllowed(['*:list'], 'aliases:list')).toBe(true);
  });

  it('matches collection patterns against the whole name', () => {
    expect(collectionAllowed(['books'], 'books')).toBe(true);
    expect(collectionAllowed(['books'], 'books_archive')).toBe(false);
    expect(collectionAllowed(['org_.*'], 'org_a')).toBe(true);
    expect(collectionAllowed(['org_.*'], 'my_org_a')).toBe(false);
    expect(collectionAllowed(['*'], 'anything')).toBe(true);
  });

  it('accepts an alias when either the alias or the collection behind it is covered', () => {
    const scope = { actions: ['documents:search'], collections: ['products_v.*'] };
    expect(allows(scope, { action: 'documents:search', collections: [{ name: 'products', target: 'products_v2' }] })).toBe(true);
    expect(allows(scope, { action: 'documents:search', collections: [{ name: 'products', target: 'orders' }] })).toBe(false);
  });

  it('keeps the meaning of ordinary patterns: alternation, classes, an injected group as JavaScript read it', () => {
    expect(collectionAllowed(['(products|orders)_v[0-9]+'], 'orders_v12')).toBe(true);
    expect(collectionAllowed(['(products|orders)_v[0-9]+'], 'orders_v')).toBe(false);
    expect(collectionAllowed(['books.*'], 'books\narchive')).toBe(false);
    // wrapped as `^(?:a)|(b)$`, which JavaScript read as "starts with a, or ends with b"
    expect(collectionAllowed(['a)|(b'], 'axx')).toBe(true);
    expect(collectionAllowed(['a)|(b'], 'xxb')).toBe(true);
    expect(collectionAllowed(['a)|(b'], 'xx')).toBe(false);
  });

  it('matches a stored entry that can no longer be a pattern (a backreference, a lookahead) against nothing', () => {
    expect(collectionAllowed(['(a)\\1'], 'aa')).toBe(false);
    expect(collectionAllowed(['(?=b)b.*'], 'books')).toBe(false);
    expect(collectionAllowed(['(a)\\1', 'books'], 'books')).toBe(true);
  });

  it('rejects a key whose collections pattern does not match', () => {
    expect(allows({ actions: ['*'], collections: ['org_a_.*'] }, { action: 'documents:get', collections: [{ name: 'org_b_x' }] })).toBe(false);
  });
});

describe('key storage', () => {
  it('stores an admin key as a hash only, and a search-only key with its value for scoped keys', async () => {
    const engine = openEngine();
    try {
      const admin = await createKey(engine.store, { description: 'a', actions: ['*'], collections: ['*'] });
      const search = await createKey(engine.store, { description: 's', actions: ['documents:search'], collections: ['*'] });
      const rawAdmin = engine.store.keys.get(admin.id) as KeyRecord;
      const rawSearch = engine.store.keys.get(search.id) as KeyRecord;
      expect(rawAdmin.value).toBeUndefined();
      expect(JSON.stringify(rawAdmin)).not.toContain(admin.value);
      expect(rawAdmin.value_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(rawSearch.value).toBe(search.value);
      expect(findKeyByValue(engine.store, admin.value)?.id).toBe(admin.id);
      expect(getKey(engine.store, admin.id)).not.toHaveProperty('value');
      expect(listKeys(engine.store).every((k) => !('value' in k) && !('value_hash' in k))).toBe(true);
    } finally {
      await engine.close();
    }
  });

  it('keeps the data directory owner-only', async () => {
    const dir = dataDirPath();
    const engine = openEngine(dir);
    await createKey(engine.store, { description: 'a', actions: ['*'], collections: ['*'] });
    await engine.close();
    expect(fs.statSync(dir).mode & 0o077).toBe(0);
    expect(fs.statSync(path.join(dir, 'data.mdb')).mode & 0o077).toBe(0);
  });

  it('refuses an expired key and purges expired autodelete keys only', async () => {
    const engine = openEngine();
    try {
      const past = Math.floor(Date.now() / 1000) - 5;
      const keep = await createKey(engine.store, { description: 'k', actions: ['*'], collections: ['*'], expires_at: past });
      const purge = await createKey(engine.store, { description: 'p', actions: ['*'], collections: ['*'], expires_at: past, autodelete: true });
      const live = await createKey(engine.store, { description: 'l', actions: ['*'], collections: ['*'], autodelete: true });
      const auth = new Authenticator(engine.store);
      expect(auth.identify(keep.value)).toEqual({ ok: false, reason: 'expired' });
      expect(auth.identify(live.value).ok).toBe(true);
      expect(await purgeExpiredKeys(engine.store)).toEqual([purge.id]);
      expect(listKeys(engine.store).map((k) => k.id)).toEqual([keep.id, live.id]);
      expect(auth.identify(purge.value)).toEqual({ ok: false, reason: 'invalid' });
      await deleteKey(engine.store, keep.id);
      await expect(deleteKey(engine.store, keep.id)).rejects.toMatchObject({ status: 404 });
    } finally {
      await engine.close();
    }
  });

  it('validates a key body precisely', async () => {
    const engine = openEngine();
    try {
      await expect(createKey(engine.store, { actions: ['*'], collections: ['*'] })).rejects.toThrow(/description/);
      await expect(createKey(engine.store, { description: 'x', actions: 'documents:search', collections: ['*'] })).rejects.toThrow(/actions/);
      await expect(createKey(engine.store, { description: 'x', actions: ['documents search'], collections: ['*'] })).rejects.toThrow(/resource:verb/);
      await expect(createKey(engine.store, { description: 'x', actions: ['*'], collections: ['*'], expires_at: -1 })).rejects.toThrow(/expires_at/);
      await expect(createKey(engine.store, { description: 'x', actions: ['*'], collections: ['*'], value: 'has space' })).rejects.toThrow(/visible ASCII/);
      await expect(createKey(engine.store, { description: 'x', actions: ['*'], collections: ['(a)\\1'] })).rejects.toThrow(/backreferences/);
      await expect(createKey(engine.store, { description: 'x', actions: ['*'], collections: ['(?!a).*'] })).rejects.toThrow(/lookahead/);
      await expect(createKey(engine.store, { description: 'x', actions: ['*'], collections: ['(a+)+$', 'org_.*'] })).resolves.toMatchObject({ collections: ['(a+)+$', 'org_.*'] });
    } finally {
      await engine.close();
    }
  });
});

describe('keys stored before patterns were checked for linear-time matching', () => {
  it('load and keep working: their refused entries match nothing, the others as before', async () => {
    const dir = dataDirPath();
    const engine = openEngine(dir);
    let id: number;
    let value: string;
    try {
      await engine.createCollection({ name: 'books', fields: [{ name: 'title', type: 'string' }] });
      await engine.createCollection({ name: 'bb', fields: [{ name: 'title', type: 'string' }] });
      ({ id, value } = await createKey(engine.store, { description: 'old', actions: ['documents:search', 'collections:get'], collections: ['books'] }));
      // as an older version stored it: entries the writers now refuse
      const rec = engine.store.keys.get(id) as KeyRecord;
      await engine.store.keys.put(id, { ...rec, collections: ['(a)\\1', '(?=b)b+', 'books', 'x{5000}'] });
    } finally {
      await engine.close();
    }
    const server = await startServer({ dataDir: dir, apiKey: 'boot', address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'off' } });
    servers.push(server);
    const get = (p: string, key = value) => fetch(`${server.url}${p}`, { headers: { 'x-typesense-api-key': key } });
    expect((await get('/collections/books/documents/search?q=*')).status).toBe(200);
    expect((await get('/collections/bb/documents/search?q=*')).status).toBe(401);
    expect((await get('/collections/aa/documents/search?q=*')).status).toBe(401);
    expect((await get('/collections/bb')).status).toBe(401);
    const shown = (await (await get(`/keys/${id}`, 'boot')).json()) as { collections: string[] };
    expect(shown.collections).toEqual(['(a)\\1', '(?=b)b+', 'books', 'x{5000}']);
  });
});

describe('scoped search keys', () => {
  it('are the same bytes the typesense client generates', () => {
    const client = new Client({ nodes: [{ host: 'localhost', port: 1, protocol: 'http' }], apiKey: 'x', logLevel: 'silent' });
    const params = { filter_by: 'company_id:124', expires_at: 1906054106 };
    expect(generateScopedSearchKey('RN23GFr1s6jQ9kgSNg2O7fYcAUXU7127', params)).toBe(client.keys().generateScopedSearchKey('RN23GFr1s6jQ9kgSNg2O7fYcAUXU7127', params));
  });

  it('keep their filter and field bounds apart from the request, and replace its other parameters', () => {
    const r = applyEmbedded({ q: '*', filter_by: 'a:1 || b:2', per_page: 20 }, { filter_by: 'tenant:=7', per_page: 5, exclude_fields: 'secret' });
    expect(r.params).toEqual({ q: '*', filter_by: 'a:1 || b:2', per_page: 5 });
    expect(r.scope).toEqual({ filter_by: 'tenant:=7', exclude_fields: ['secret'] });
    expect(applyEmbedded({ q: '*' }, { per_page: 5 })).toEqual({ params: { q: '*', per_page: 5 } });
  });
});

describe('fathom keys', () => {
  it('creates, lists, gets and deletes keys on the data directory, and a running server sees them at once', async () => {
    const dir = dataDirPath();
    const server = await startServer({ dataDir: dir, apiKey: 'boot', address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'off' } });
    servers.push(server);
    const created = await cli(['keys', 'create', '-d', dir, '--actions', 'collections:list', '--collections', '*', '--description', 'from the CLI']);
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout);
    expect(key.value).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await fetch(`${server.url}/collections`, { headers: { 'x-typesense-api-key': key.value } })).status).toBe(200);

    const list = await cli(['keys', 'list', '-d', dir]);
    expect(list.stdout).toContain(`${key.value.slice(0, 4)}...`);
    expect(list.stdout).not.toContain(key.value);
    const json = JSON.parse((await cli(['keys', 'list', '-d', dir, '--json'])).stdout);
    expect(json.keys[0]).toMatchObject({ id: key.id, description: 'from the CLI', value_prefix: key.value.slice(0, 4) });
    expect(JSON.parse((await cli(['keys', 'get', '-d', dir, String(key.id)])).stdout)).not.toHaveProperty('value');

    expect(JSON.parse((await cli(['keys', 'delete', '-d', dir, String(key.id)])).stdout)).toEqual({ id: key.id });
    expect((await fetch(`${server.url}/collections`, { headers: { 'x-typesense-api-key': key.value } })).status).toBe(401);
    const missing = await cli(['keys', 'get', '-d', dir, String(key.id)]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not found/);
  });

  it('takes a fixed value, an expiry and autodelete', async () => {
    const dir = dataDirPath();
    const r = await cli(['keys', 'create', '-d', dir, '--actions', 'documents:search', '--collections', 'books,films', '--description', 'd', '--value', 'my-fixed-key', '--expires-at', '4102444800', '--autodelete']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ value: 'my-fixed-key', collections: ['books', 'films'], expires_at: 4102444800, autodelete: true });
  });

  it('refuses a collections pattern with a backreference in one line', async () => {
    const r = await cli(['keys', 'create', '-d', dataDirPath(), '--actions', '*', '--collections', 'books,(x)\\1', '--description', 'd']);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/`collections` entry `\(x\)\\1` cannot be used as a pattern: backreferences/);
  });

  it('reports a usage error for a bad expiry', async () => {
    const r = await cli(['keys', 'create', '-d', dataDirPath(), '--actions', '*', '--collections', '*', '--description', 'd', '--expires-at', 'tomorrow']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/expires-at/);
  });
});
