import { describe, expect, it } from 'vitest';
import { Schema, validateCollectionSchema, type CollectionRecord } from '../src/schema/schema.js';
import { FathomError } from '../src/errors.js';
import { cli, dataDirPath, openEngine } from './helpers.js';

const ok = (fields: unknown[], extra: Record<string, unknown> = {}) => validateCollectionSchema({ name: 'c', fields, ...extra });
const rejects = (fields: unknown[], re: RegExp, extra: Record<string, unknown> = {}) => {
  let err: unknown;
  try {
    ok(fields, extra);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(FathomError);
  expect((err as FathomError).code).toBe('BAD_SCHEMA');
  expect((err as Error).message).toMatch(re);
};

describe('collection schemas', () => {
  it('accepts every field type of the spec', () => {
    const types = ['string', 'string[]', 'string*', 'int32', 'int64', 'int32[]', 'int64[]', 'float', 'float[]', 'bool', 'bool[]', 'image'];
    const rec = ok(types.map((t, i) => ({ name: `f${i}`, type: t, optional: true })));
    expect(rec.fields.map((f) => f.type)).toEqual(types);
    const nested = ok([{ name: 'o', type: 'object' }, { name: 'oa', type: 'object[]' }, { name: '.*', type: 'auto' }], { enable_nested_fields: true });
    expect(nested.fields).toHaveLength(3);
  });

  it('fills defaults: numbers sortable, strings not, fields indexed and required', () => {
    const rec = ok([{ name: 'n', type: 'int32' }, { name: 's', type: 'string' }]);
    expect(rec.fields[0]).toMatchObject({ sort: true, index: true, optional: false, facet: false });
    expect(rec.fields[1]).toMatchObject({ sort: false, index: true });
  });

  it('rejects a field declared twice', () => rejects([{ name: 'a', type: 'string' }, { name: 'a', type: 'int32' }], /field `a` is declared more than once/));
  it('rejects an unknown type, naming the field', () => rejects([{ name: 'a', type: 'text' }], /field `a`: unknown type `text`/));
  it('rejects a field without a type', () => rejects([{ name: 'a' }], /field `a`: `type` is required/));
  it('rejects an unknown attribute', () => rejects([{ name: 'a', type: 'string', weight: 3 }], /unknown attribute `weight`/));
  it('rejects an invalid regular-expression name', () => rejects([{ name: '(.*', type: 'string' }], /not a valid regular expression/));
  it('accepts regular-expression names such as .*_name', () => {
    const s = new Schema({ ...ok([{ name: '.*_name', type: 'string' }]), id: 1, created_at: 0, version: 1 } as CollectionRecord);
    expect(s.resolve('first_name')?.name).toBe('.*_name');
    expect(s.resolve('name')).toBeUndefined();
  });
  it('rejects a name pattern with a backreference or a lookaround, saying why', () => {
    rejects([{ name: '(.)\\1_x', type: 'string' }], /field `\(\.\)\\1_x`: the name cannot be used as a pattern: backreferences/);
    rejects([{ name: '(?!id).*', type: 'string' }], /lookahead and lookbehind/);
    rejects([{ name: '.*_(?<=a_)x', type: 'string' }], /lookahead and lookbehind/);
    rejects([{ name: 'f{1001}', type: 'string' }], /repetition count above 1000/);
  });
  it('accepts `(a+)+$` as a name pattern and resolves a long name against it at once', () => {
    const s = new Schema({ ...ok([{ name: '(a+)+$', type: 'string' }]), id: 1, created_at: 0, version: 1 } as CollectionRecord);
    const t0 = performance.now();
    expect(s.resolve('a'.repeat(28) + '!')).toBeUndefined();
    expect(s.resolve('a'.repeat(75))?.name).toBe('(a+)+$');
    expect(performance.now() - t0).toBeLessThan(1000);
  });
  it('compiles a stored name pattern that can no longer be used to one that matches nothing', () => {
    const rec = ok([{ name: 'title', type: 'string' }, { name: 'x_.*', type: 'string' }]);
    rec.fields[1]!.name = '(?=x).*';
    const s = new Schema({ ...rec, id: 1, created_at: 0, version: 1 } as CollectionRecord);
    expect(s.resolve('x_1')).toBeUndefined();
    expect(s.resolve('title')?.name).toBe('title');
    expect(s.hasPatterns).toBe(true);
  });
  it('rejects nested types without enable_nested_fields', () => rejects([{ name: 'o', type: 'object' }], /needs `enable_nested_fields: true`/));
  it('rejects dotted names without enable_nested_fields', () => rejects([{ name: 'a.b', type: 'string' }], /dotted names/));
  it('rejects a default_sorting_field that is not numeric', () => rejects([{ name: 's', type: 'string' }], /must be a numeric field/, { default_sorting_field: 's' }));
  it('rejects a default_sorting_field that is missing', () => rejects([{ name: 's', type: 'int32' }], /not a field of the schema/, { default_sorting_field: 'x' }));
  it('rejects an optional default_sorting_field', () => rejects([{ name: 'n', type: 'int32', optional: true }], /cannot be optional/, { default_sorting_field: 'n' }));
  it('rejects num_dim on a non-float[] field', () => rejects([{ name: 'v', type: 'string', num_dim: 3 }], /`num_dim` is only allowed on `float\[\]`/));
  it('rejects hnsw_params on a plain field', () => rejects([{ name: 'v', type: 'float[]', hnsw_params: { M: 8 } }], /only allowed on vector fields/));
  it('rejects bad hnsw_params values', () => rejects([{ name: 'v', type: 'float[]', num_dim: 4, hnsw_params: { M: 1 } }], /hnsw_params.M/));
  it('fills hnsw_params defaults on vector fields', () => {
    expect(ok([{ name: 'v', type: 'float[]', num_dim: 4 }]).fields[0]!.hnsw_params).toEqual({ M: 16, ef_construction: 200 });
  });
  it('rejects embed.from naming an unknown field', () =>
    rejects([{ name: 'e', type: 'float[]', embed: { from: ['title'], model_config: { model_name: 'ts/x' } } }], /`embed.from` names `title`/));
  it('rejects a malformed reference', () => rejects([{ name: 'r', type: 'string', reference: 'nodot' }], /"<collection>.<field>"/));
  it('rejects a reference of a wrong type', () => rejects([{ name: 'r', type: 'float', reference: 'a.b' }], /reference field must be of type/));
  it('rejects a non-array reference inside object[]', () =>
    rejects([{ name: 'items', type: 'object[]' }, { name: 'items.pid', type: 'string', reference: 'p.id' }], /inside an object\[\] field must have an array type/, { enable_nested_fields: true }));
  it('rejects facet on an image or geopoint field', () => {
    rejects([{ name: 'i', type: 'image', facet: true }], /cannot be a facet/);
    rejects([{ name: 'g', type: 'geopoint', facet: true }], /cannot be a facet/);
  });
  it('rejects sorting on an array', () => rejects([{ name: 'a', type: 'int32[]', sort: true }], /cannot be sorted/));
  it('rejects index: false on a required field', () => rejects([{ name: 'a', type: 'string', index: false }], /must also be `optional: true`/));
  it('rejects multi-character token_separators', () => rejects([], /single characters/, { token_separators: ['ab'] }));
  it('rejects a bad locale', () => rejects([{ name: 'a', type: 'string', locale: 'not a locale!' }], /not a valid language tag/));
  it('rejects a declared id field', () => rejects([{ name: 'id', type: 'int32' }], /field `id` cannot be declared/));
  it('rejects an empty collection name', () => expect(() => validateCollectionSchema({ name: '', fields: [] })).toThrow(/non-empty string/));
  it('rejects a collection name with a slash', () => expect(() => validateCollectionSchema({ name: 'a/b', fields: [] })).toThrow(/must not contain/));
  it('accepts voice_query_model and the spec attributes', () => {
    const rec = ok([{ name: 'a', type: 'string', locale: 'ja', infix: false, stem: true }], { voice_query_model: { model_name: 'ts/whisper/base.en' }, symbols_to_index: ['+'], token_separators: ['-'] });
    expect(rec.voice_query_model).toEqual({ model_name: 'ts/whisper/base.en' });
  });
});

describe('collections', () => {
  it('creates, lists, retrieves with num_documents and created_at, and deletes', async () => {
    const e = openEngine();
    const created = await e.createCollection({ name: 'a', fields: [{ name: 't', type: 'string' }] });
    expect(created).toMatchObject({ name: 'a', num_documents: 0 });
    expect(created.created_at).toBeGreaterThan(1_600_000_000);
    await e.writeDocument('a', { id: '1', t: 'x' });
    expect(e.getCollection('a').num_documents).toBe(1);
    expect(e.listCollections().map((c) => c.name)).toEqual(['a']);
    await e.deleteCollection('a');
    expect(() => e.getCollection('a')).toThrow(/collection `a` not found/);
    await e.close();
  });

  it('refuses a second collection with the same name (409)', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'a', fields: [] });
    await expect(e.createCollection({ name: 'a', fields: [] })).rejects.toMatchObject({ status: 409 });
    await e.close();
  });

  it('deleting a collection removes its documents and index', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'a', fields: [{ name: 't', type: 'string' }] });
    await e.writeDocument('a', { id: '1', t: 'hello' });
    await e.deleteCollection('a');
    await e.createCollection({ name: 'a', fields: [{ name: 't', type: 'string' }] });
    expect((await e.search('a', { q: 'hello', query_by: 't' })).found).toBe(0);
    expect([...e.store.docs.getKeys({})]).toHaveLength(0);
    await e.close();
  });

  it('CLI: create from stdin, list as a table and as JSON, get, delete', async () => {
    const dir = dataDirPath();
    const c = await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify({ name: 'books', fields: [{ name: 'title', type: 'string' }] }) });
    expect(c.code).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({ name: 'books', num_documents: 0 });
    const l = await cli(['collections', 'list', '-d', dir]);
    expect(l.stdout).toMatch(/^NAME\s+DOCUMENTS/);
    expect(l.stdout).toMatch(/books\s+0/);
    const lj = await cli(['collections', 'list', '--json', '-d', dir]);
    expect(JSON.parse(lj.stdout)[0].name).toBe('books');
    const g = await cli(['collections', 'get', 'books', '-d', dir]);
    expect(JSON.parse(g.stdout).fields[0]).toMatchObject({ name: 'title', type: 'string' });
    const d = await cli(['collections', 'delete', 'books', '-d', dir]);
    expect(d.code).toBe(0);
    const g2 = await cli(['collections', 'get', 'books', '-d', dir]);
    expect(g2.code).toBe(1);
    expect(g2.stderr).toBe('error: collection `books` not found\n');
  });

  it('CLI: a bad schema gets one precise line and exit status 1', async () => {
    const dir = dataDirPath();
    const r = await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify({ name: 'x', fields: [{ name: 'a', type: 'wat' }] }) });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: field `a`: unknown type `wat`/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    const j = await cli(['collections', 'create', '-', '-d', dir], { input: '{not json' });
    expect(j.code).toBe(2);
    expect(j.stderr).toMatch(/^error: the schema is not valid JSON/);
  });
});
