/**
 * `fathom synonyms`, `fathom curation` and `fathom presets` on a data directory (the real
 * binary), and `fathom serve` processes seeing what the CLI writes at their next search.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, cli, dataDirPath } from './helpers.js';

const SCHEMA = JSON.stringify({ name: 'products', fields: [{ name: 'title', type: 'string' }, { name: 'brand', type: 'string', facet: true }] });
const DOCS = [
  { id: '1', title: 'Winter coat', brand: 'North' },
  { id: '2', title: 'Blazer for men', brand: 'Tailor' },
  { id: '3', title: 'Leather jacket', brand: 'North' },
].map((d) => JSON.stringify(d)).join('\n');

async function products(): Promise<string> {
  const dir = dataDirPath();
  expect((await cli(['collections', 'create', '-d', dir], { input: SCHEMA })).code).toBe(0);
  expect((await cli(['import', 'products', '-d', dir, '-q'], { input: DOCS })).code).toBe(0);
  return dir;
}

const hitIds = (stdout: string) => (JSON.parse(stdout).hits as Array<{ document: { id: string } }>).map((h) => h.document.id);

describe('fathom synonyms', () => {
  it('puts, lists, gets and deletes a collection\'s synonyms, and search uses them', async () => {
    const dir = await products();
    const put = await cli(['synonyms', 'put', 'coats', '--collection', 'products', '--synonyms', 'blazer, coat, jacket', '-d', dir]);
    expect(put.code).toBe(0);
    expect(JSON.parse(put.stdout)).toEqual({ id: 'coats', root: '', synonyms: ['blazer', 'coat', 'jacket'] });
    expect((await cli(['synonyms', 'put', 'one-way', '-c', 'products', '--root', 'outerwear', '--synonyms', 'coat', '-d', dir])).code).toBe(0);
    expect((await cli(['synonyms', 'list', '-c', 'products', '-d', dir])).stdout).toBe('coats  blazer = coat = jacket\none-way  outerwear -> coat\n');
    expect(JSON.parse((await cli(['synonyms', 'list', '-c', 'products', '--json', '-d', dir])).stdout)).toHaveLength(2);
    expect(JSON.parse((await cli(['synonyms', 'get', 'one-way', '-c', 'products', '-d', dir])).stdout)).toEqual({ id: 'one-way', root: 'outerwear', synonyms: ['coat'] });
    const s = await cli(['search', 'products', '-q', 'coat', '--query-by', 'title', '--json', '-d', dir]);
    expect(hitIds(s.stdout).sort()).toEqual(['1', '2', '3']);
    expect(JSON.parse((await cli(['synonyms', 'delete', 'coats', '-c', 'products', '-d', dir])).stdout)).toEqual({ id: 'coats' });
    expect(hitIds((await cli(['search', 'products', '-q', 'coat', '--query-by', 'title', '--json', '-d', dir])).stdout)).toEqual(['1']);
  });

  it('manages synonym sets and their items', async () => {
    const dir = await products();
    const set = await cli(['synonyms', 'put', '--set', 'clothing', '-d', dir], { input: '{"items": [{"id": "a", "synonyms": ["coat", "blazer"]}]}' });
    expect(set.code).toBe(0);
    expect((await cli(['synonyms', 'put', 'b', '--set', 'clothing', '--synonyms', 'coat,jacket', '-d', dir])).code).toBe(0);
    expect((await cli(['synonyms', 'list', '-d', dir])).stdout).toBe('clothing  2 items\n');
    expect(JSON.parse((await cli(['synonyms', 'get', '--set', 'clothing', '-d', dir])).stdout).items).toHaveLength(2);
    const s = await cli(['search', 'products', '-q', 'coat', '--query-by', 'title', '--synonym-sets', 'clothing', '--json', '-d', dir]);
    expect(hitIds(s.stdout).sort()).toEqual(['1', '2', '3']);
    expect(JSON.parse((await cli(['synonyms', 'delete', 'a', '--set', 'clothing', '-d', dir])).stdout)).toEqual({ id: 'a' });
    expect(JSON.parse((await cli(['synonyms', 'delete', '--set', 'clothing', '-d', dir])).stdout)).toEqual({ name: 'clothing' });
  });

  it('refuses bad input with one line and a non-zero exit', async () => {
    const dir = await products();
    const one = await cli(['synonyms', 'put', 'x', '-c', 'products', '--synonyms', 'coat', '-d', dir]);
    expect(one.code).toBe(1);
    expect(one.stderr.trim().split('\n')).toHaveLength(1);
    expect(one.stderr).toMatch(/at least two words/);
    const both = await cli(['synonyms', 'list', '-c', 'products', '--set', 's', '-d', dir]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--collection or --set, not both/);
    expect((await cli(['synonyms', 'put', 'x', '-d', dir])).code).toBe(2);
    const json = await cli(['synonyms', 'put', 'x', '-c', 'products', '-d', dir], { input: '{nope' });
    expect(json.code).toBe(2);
    expect(json.stderr).toMatch(/not valid JSON/);
  });
});

describe('fathom curation', () => {
  it('puts, lists, gets and deletes rules, and search applies them', async () => {
    const dir = await products();
    const rule = { rule: { query: 'coat', match: 'exact' }, includes: [{ id: '3', position: 1 }], metadata: { banner: 'sale' } };
    const put = await cli(['curation', 'put', 'pin', '--collection', 'products', '-d', dir], { input: JSON.stringify(rule) });
    expect(put.code).toBe(0);
    expect(JSON.parse(put.stdout)).toEqual({ id: 'pin', ...rule, remove_matched_tokens: false, filter_curated_hits: false, stop_processing: true });
    expect((await cli(['curation', 'list', '-c', 'products', '-d', dir])).stdout).toBe('pin  q exact "coat": pins 3@1; metadata\n');
    const s = JSON.parse((await cli(['search', 'products', '-q', 'coat', '--query-by', 'title', '--json', '-d', dir])).stdout);
    expect(s.hits.map((h: { document: { id: string } }) => h.document.id)).toEqual(['3', '1']);
    expect(s.metadata).toEqual({ banner: 'sale' });
    // a pinned document need not exist yet
    const later = await cli(['curation', 'put', 'later', '-c', 'products', '-d', dir], { input: '{"rule": {"query": "coat", "match": "exact"}, "includes": [{"id": "9", "position": 1}]}' });
    expect(later.code).toBe(0);
    const bad = await cli(['curation', 'put', 'bad', '-c', 'products', '-d', dir], { input: '{"rule": {"query": "coat", "match": "sometimes"}, "excludes": [{"id": "9"}]}' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/match/);
    expect((await cli(['curation', 'put', '--set', 'promos', '-d', dir], { input: '{"items": []}' })).code).toBe(0);
    expect((await cli(['curation', 'list', '--json', '-d', dir])).stdout).toContain('"promos"');
    expect(JSON.parse((await cli(['curation', 'delete', 'pin', '-c', 'products', '-d', dir])).stdout)).toEqual({ id: 'pin' });
  });
});

describe('fathom presets', () => {
  it('puts, lists, gets and deletes presets, and search starts from them', async () => {
    const dir = await products();
    const put = await cli(['presets', 'put', 'north', '--param', 'query_by=title', '--param', 'filter_by=brand:=North', '-d', dir]);
    expect(put.code).toBe(0);
    expect(JSON.parse(put.stdout)).toEqual({ name: 'north', value: { query_by: 'title', filter_by: 'brand:=North' } });
    expect((await cli(['presets', 'put', 'plain', '-d', dir], { input: '{"q": "*", "per_page": 1}' })).code).toBe(0);
    expect((await cli(['presets', 'list', '-d', dir])).stdout).toBe('north  query_by=title filter_by=brand:=North\nplain  q=* per_page=1\n');
    expect(JSON.parse((await cli(['presets', 'list', '--json', '-d', dir])).stdout).presets).toHaveLength(2);
    expect(JSON.parse((await cli(['presets', 'get', 'plain', '-d', dir])).stdout)).toEqual({ name: 'plain', value: { q: '*', per_page: 1 } });
    expect(hitIds((await cli(['search', 'products', '-q', '*', '--preset', 'north', '--json', '-d', dir])).stdout).sort()).toEqual(['1', '3']);
    const missing = await cli(['search', 'products', '-q', '*', '--preset', 'nope', '-d', dir]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/preset `nope` not found/);
    expect(JSON.parse((await cli(['presets', 'delete', 'plain', '-d', dir])).stdout)).toEqual({ name: 'plain' });
  });
});

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

function serve(dir: string): Promise<{ child: ChildProcess; port: number }> {
  const { FATHOM_API_KEY: _k, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, 'serve', '--api-address', '127.0.0.1', '--api-port', '0', '--data-dir', dir, '--api-key', 'k', '--processes', '2', '--log-level', 'info'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const j = JSON.parse(line);
        if (j.msg === 'serving') resolve({ child, port: j.port });
      }
    });
    child.on('exit', (code) => reject(new Error(`fathom serve exited with ${code}: ${err}`)));
  });
}

describe('fathom serve processes and the CLI on one data directory', () => {
  it('every serving process sees a synonym, a rule and a preset the moment they are written', async () => {
    const dir = await products();
    const s = await serve(dir);
    const get = async (path: string) => (await (await fetch(`http://127.0.0.1:${s.port}${path}`, { headers: { 'x-typesense-api-key': 'k' } })).json()) as any;
    const searchIds = async (q: string, more = '') => (await get(`/collections/products/documents/search?q=${q}&query_by=title${more}`)).hits.map((h: any) => h.document.id);
    // warm every process's caches
    for (let i = 0; i < 6; i++) expect(await searchIds('coat')).toEqual(['1']);
    expect((await cli(['synonyms', 'put', 'coats', '-c', 'products', '--synonyms', 'coat,blazer', '-d', dir])).code).toBe(0);
    for (let i = 0; i < 6; i++) expect((await searchIds('coat')).sort()).toEqual(['1', '2']);
    expect((await cli(['curation', 'put', 'pin', '-c', 'products', '-d', dir], { input: '{"rule": {"query": "coat", "match": "exact"}, "includes": [{"id": "3", "position": 1}]}' })).code).toBe(0);
    for (let i = 0; i < 6; i++) expect((await searchIds('coat'))[0]).toBe('3');
    expect((await cli(['presets', 'put', 'p', '--param', 'per_page=1', '-d', dir])).code).toBe(0);
    for (let i = 0; i < 6; i++) expect(await searchIds('coat', '&preset=p')).toEqual(['3']);
    s.child.kill('SIGTERM');
    await new Promise((r) => s.child.once('exit', r));
  });
});
