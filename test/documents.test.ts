import { describe, expect, it } from 'vitest';
import { openEngine, BOOKS_SCHEMA } from './helpers.js';
import { validateId } from '../src/document/document.js';
import fc from 'fast-check';
import { hasLongInteger, parseJsonLine } from '../src/json.js';

async function books() {
  const e = openEngine();
  await e.createCollection(BOOKS_SCHEMA);
  return e;
}

describe('document ids', () => {
  it('generates an id when the document has none', async () => {
    const e = await books();
    const d = await e.writeDocument('books', { title: 'Dune', author: 'Herbert', year: 1965 });
    expect(typeof d.id).toBe('string');
    expect(e.getDocument('books', d.id as string)).toMatchObject({ title: 'Dune' });
    await e.close();
  });

  it('rejects a document whose id contains a space', async () => {
    const e = await books();
    await expect(e.writeDocument('books', { id: 'a b', title: 'x', author: 'y', year: 1 })).rejects.toThrow(/must not contain whitespace/);
    await e.close();
  });

  it('rejects ids with characters that need URL encoding', () => {
    for (const id of ['a/b', 'a?b', 'a#b', '100%', 'ünï', '']) expect(() => validateId(id)).toThrow();
    for (const id of ['libc6-dev', 'g++', 'a.b_c~d', "x:y@z!$&'()*,;="]) expect(validateId(id)).toBe(id);
  });

  it('stores every line of a batch as it arrived, with its generated id appended', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'raw', fields: [{ name: 'n', type: 'int64' }] });
    // Sizes from a few bytes to past the 64 KB scratch buffer, and integers beyond 2^53
    // (stored with the lossless marker), all in one transaction.
    const lines = Array.from({ length: 40 }, (_, i) =>
      i % 7 === 3 ? `{"n": 9007199254740993${i}, "s": "x"}` : JSON.stringify({ n: i, s: 'é'.repeat(i * i * 50), tail: i }),
    );
    await e.import('raw', [Buffer.from(lines.join('\n'))], { batchSize: 40 }, () => {});
    const out: string[] = [];
    for (const l of e.exportLines('raw', {})) out.push(l);
    expect(out).toHaveLength(40);
    out.forEach((line, i) => {
      const doc = JSON.parse(line.replace(/("n": ?)(\d+)/, '$1"$2"'));
      const want = JSON.parse(lines[i]!.replace(/("n": ?)(\d+)/, '$1"$2"'));
      expect({ ...doc, id: undefined }).toEqual({ ...want, id: undefined });
      expect(typeof doc.id).toBe('string');
    });
    await e.close();
  });

  it('answers every line of a many-batch import in order: failures echo their line, successes carry the document only with return_doc', async () => {
    const e = openEngine();
    await e.createCollection(BOOKS_SCHEMA);
    const lines = Array.from({ length: 20 }, (_, i) =>
      i % 5 === 2 ? `{"id": "b${i}", "title": ` : i % 5 === 4 ? JSON.stringify({ id: 'b0', title: 'dup', author: 'a', year: 1 }) : JSON.stringify({ id: `b${i}`, title: `t${i}`, author: 'a', year: 2000 + i }),
    );
    for (const returnDoc of [false, true]) {
      await e.createCollection({ ...BOOKS_SCHEMA, name: `books${returnDoc}` });
      const out: string[] = [];
      const sum = await e.import(`books${returnDoc}`, [Buffer.from(lines.join('\n'))], { batchSize: 3, returnDoc }, (l) => void out.push(l));
      expect(sum).toEqual({ total: 20, succeeded: 12, failed: 8 });
      out.forEach((line, i) => {
        const r = JSON.parse(line);
        if (i % 5 === 2) expect(r).toMatchObject({ success: false, error: expect.stringMatching(/^Bad JSON: /), document: lines[i] });
        else if (i % 5 === 4) expect(r).toMatchObject({ success: false, code: 409, document: lines[i] });
        else expect(r).toEqual(returnDoc ? { success: true, document: JSON.parse(lines[i]!) } : { success: true });
      });
    }
    await e.close();
  });

  it('rejects a numeric id', () => expect(() => validateId(12)).toThrow(/must be a string/));
});

describe('validation and dirty_values', () => {
  it('rejects a document missing a required field', async () => {
    const e = await books();
    await expect(e.writeDocument('books', { id: '1', title: 'x', year: 1 })).rejects.toThrow('Field `author` has been declared in the schema, but is not found in the document.');
    await e.close();
  });

  it('treats null as absent for optional fields', async () => {
    const e = await books();
    const d = await e.writeDocument('books', { id: '1', title: 'x', author: 'a', year: 1, rating: null });
    expect(d.rating).toBeNull();
    await e.close();
  });

  it('reject (the default without pattern fields) refuses a wrong type', async () => {
    const e = await books();
    await expect(e.writeDocument('books', { id: '1', title: 'x', author: 'a', year: '1999' })).rejects.toThrow('Field `year` must be an int32.');
    await e.close();
  });

  it('coerce_or_reject turns "1999" into 1999 and rejects "soon"', async () => {
    const e = await books();
    const d = await e.writeDocument('books', { id: '1', title: 'x', author: 'a', year: '1999' }, { dirtyValues: 'coerce_or_reject' });
    expect(d.year).toBe(1999);
    await expect(e.writeDocument('books', { id: '2', title: 'x', author: 'a', year: 'soon' }, { dirtyValues: 'coerce_or_reject' })).rejects.toThrow(/must be an int32/);
    await e.close();
  });

  it('coerce_or_drop drops what cannot be coerced and indexes the rest', async () => {
    const e = await books();
    const d = await e.writeDocument('books', { id: '1', title: 'x', author: 'a', year: 2, rating: 'great' }, { dirtyValues: 'coerce_or_drop' });
    expect(d).not.toHaveProperty('rating');
    const d2 = await e.writeDocument('books', { id: '2', title: 'x', author: 'a', year: 2, rating: '4.5' }, { dirtyValues: 'coerce_or_drop' });
    expect(d2.rating).toBe(4.5);
    await e.close();
  });

  it('drop drops a mismatched optional field without trying to coerce', async () => {
    const e = await books();
    const d = await e.writeDocument('books', { id: '1', title: 'x', author: 'a', year: 2, rating: '4.5' }, { dirtyValues: 'drop' });
    expect(d).not.toHaveProperty('rating');
    await expect(e.writeDocument('books', { id: '2', title: 'x', author: 'a', year: 'x' }, { dirtyValues: 'drop' })).rejects.toThrow(/required/);
    await e.close();
  });

  it('defaults to coerce_or_reject when the schema has a pattern field', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'p', fields: [{ name: 'n', type: 'int32' }, { name: '.*_s', type: 'string' }] });
    const d = await e.writeDocument('p', { id: '1', n: '5', x_s: 12 });
    expect(d).toMatchObject({ n: 5, x_s: '12' });
    await e.close();
  });

  it('enforces the int32 range', async () => {
    const e = await books();
    await expect(e.writeDocument('books', { id: '1', title: 'x', author: 'a', year: 2147483648 })).rejects.toThrow(/int32/);
    await expect(e.writeDocument('books', { id: '1', title: 'x', author: 'a', year: 2147483648 }, { dirtyValues: 'coerce_or_reject' })).rejects.toThrow(/int32/);
    const d = await e.writeDocument('books', { id: '2', title: 'x', author: 'a', year: -2147483648 });
    expect(d.year).toBe(-2147483648);
    await e.close();
  });

  it('keeps int64 values beyond 2^53 exact', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'n', fields: [{ name: 'big', type: 'int64' }] });
    await e.writeDocument('n', { id: '1', big: 9007199254740993n });
    expect(e.getDocument('n', '1').big).toBe(9007199254740993n);
    await expect(e.writeDocument('n', { id: '2', big: 2n ** 63n })).rejects.toThrow(/int64/);
    await e.close();
  });

  it('finds a 16-digit integer literal wherever a full regular-expression scan finds one', () => {
    const reference = /(?<![\d.])\d{16,}(?![\d.eE])/;
    const chunk = fc.oneof(fc.stringMatching(/^[0-9]{1,40}$/), fc.constantFrom('.', 'e', ' ', '"a":', ',', '-', 'x'));
    fc.assert(
      fc.property(fc.array(chunk, { maxLength: 30 }).map((a) => a.join('')), (text) => {
        expect(hasLongInteger(text)).toBe(reference.test(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('parses long integers exactly and long fractions natively', () => {
    expect(parseJsonLine('{"a":9007199254740993,"b":[-12345678901234567]}')).toEqual({ value: { a: 9007199254740993n, b: [-12345678901234567n] }, lossless: true });
    // float vectors are often written with 17 significant digits: no lossless parse needed
    // eslint-disable-next-line no-loss-of-precision -- the digits a JSON writer gives, compared as JSON.parse reads them
    expect(parseJsonLine('{"v":[0.12345678901234567,-0.9876543210987654321,1.5e-17]}')).toEqual({ value: { v: [0.12345678901234567, -0.9876543210987654321, 1.5e-17] }, lossless: false });
    expect(parseJsonLine('{"a":1234567890123456.5,"b":12345678901234567e2}').lossless).toBe(false);
  });

  it('string* stores numbers and arrays as strings', async () => {
    const e = openEngine();
    await e.createCollection({ name: 's', fields: [{ name: 'v', type: 'string*' }] });
    expect((await e.writeDocument('s', { id: '1', v: 76.24 })).v).toBe('76.24');
    expect((await e.writeDocument('s', { id: '2', v: [1, 'a', true] })).v).toEqual(['1', 'a', 'true']);
    expect((await e.search('s', { q: '7624', query_by: 'v' })).found).toBe(1);
    await e.close();
  });

  it('checks array element types and names the element', async () => {
    const e = await books();
    await expect(e.writeDocument('books', { id: '1', title: 'x', author: 'a', year: 1, tags: ['a', 3] })).rejects.toThrow('Field `tags` must be an array of string.');
    await e.close();
  });

  it('flattens nested objects for indexing and keeps the document nested', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'n', enable_nested_fields: true, fields: [{ name: 'address', type: 'object' }, { name: 'items', type: 'object[]', optional: true }] });
    await e.writeDocument('n', { id: '1', address: { city: 'Paris', zip: 75001 }, items: [{ sku: 'a1', qty: 2 }, { sku: 'b2', qty: 5 }] });
    expect(e.getDocument('n', '1')).toEqual({ id: '1', address: { city: 'Paris', zip: 75001 }, items: [{ sku: 'a1', qty: 2 }, { sku: 'b2', qty: 5 }] });
    expect((await e.search('n', { q: 'paris', query_by: 'address.city' })).found).toBe(1);
    expect((await e.search('n', { q: '*', filter_by: 'items.qty:>4' })).found).toBe(1);
    expect((await e.search('n', { q: '*', filter_by: 'address.zip:=75001' })).found).toBe(1);
    const fields = e.getCollection('n').fields.map((f) => `${f.name}:${f.type}`);
    expect(fields).toEqual(expect.arrayContaining(['address.city:string', 'address.zip:int64', 'items.sku:string[]', 'items.qty:int64[]']));
    await e.close();
  });

  it('auto fields take their type from the first document', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'a', fields: [{ name: '.*', type: 'auto' }] });
    await e.writeDocument('a', { id: '1', title: 'hello world', n: 3, tags: ['x'] });
    const types = Object.fromEntries(e.getCollection('a').fields.map((f) => [f.name, f.type]));
    expect(types).toMatchObject({ title: 'string', n: 'int64', tags: 'string[]' });
    expect((await e.search('a', { q: 'hello', query_by: 'title' })).found).toBe(1);
    await e.close();
  });
});

describe('actions', () => {
  it('create fails when the id exists (409)', async () => {
    const e = await books();
    await e.writeDocument('books', { id: '1', title: 'a', author: 'x', year: 1 });
    await expect(e.writeDocument('books', { id: '1', title: 'b', author: 'x', year: 1 })).rejects.toMatchObject({ status: 409 });
    await e.close();
  });

  it('upsert replaces the whole document', async () => {
    const e = await books();
    await e.writeDocument('books', { id: '1', title: 'old title', author: 'x', year: 1, rating: 3 });
    await e.writeDocument('books', { id: '1', title: 'new title', author: 'y', year: 2 }, { action: 'upsert' });
    expect(e.getDocument('books', '1')).toEqual({ id: '1', title: 'new title', author: 'y', year: 2 });
    expect((await e.search('books', { q: 'old', query_by: 'title' })).found).toBe(0);
    expect((await e.search('books', { q: 'new', query_by: 'title' })).found).toBe(1);
    await e.close();
  });

  it('update merges a partial document and fails for a missing id (404)', async () => {
    const e = await books();
    await e.writeDocument('books', { id: '1', title: 'a', author: 'x', year: 1 });
    const applied = await e.updateDocument('books', '1', { year: 2000 });
    expect(applied).toEqual({ id: '1', year: 2000 });
    expect(e.getDocument('books', '1')).toMatchObject({ title: 'a', year: 2000 });
    await expect(e.updateDocument('books', 'nope', { year: 1 })).rejects.toMatchObject({ status: 404 });
    await e.close();
  });

  it('update with null removes an optional field', async () => {
    const e = await books();
    await e.writeDocument('books', { id: '1', title: 'a', author: 'x', year: 1, rating: 4 });
    await e.updateDocument('books', '1', { rating: null });
    expect(e.getDocument('books', '1')).not.toHaveProperty('rating');
    await e.close();
  });

  it('emplace creates or updates', async () => {
    const e = await books();
    await e.writeDocument('books', { id: '1', title: 'a', author: 'x', year: 1 }, { action: 'emplace' });
    await e.writeDocument('books', { id: '1', year: 5 }, { action: 'emplace' });
    expect(e.getDocument('books', '1')).toMatchObject({ title: 'a', year: 5 });
    await expect(e.writeDocument('books', { id: '2', year: 5 }, { action: 'emplace' })).rejects.toThrow(/declared in the schema, but is not found/);
    await e.close();
  });

  it('delete returns the document; a missing id fails unless ignore_not_found', async () => {
    const e = await books();
    await e.writeDocument('books', { id: '1', title: 'a', author: 'x', year: 1 });
    expect(await e.deleteDocument('books', '1')).toMatchObject({ id: '1', title: 'a' });
    await expect(e.deleteDocument('books', '1')).rejects.toMatchObject({ status: 404 });
    await expect(e.deleteDocument('books', '1', { ignoreNotFound: true })).resolves.toMatchObject({ id: '1' });
    expect((await e.search('books', { q: 'a', query_by: 'title' })).found).toBe(0);
    await e.close();
  });

  it('assigns internal sequential ids in indexing order', async () => {
    const e = await books();
    for (let i = 0; i < 5; i++) await e.writeDocument('books', { id: `b${i}`, title: 't', author: 'x', year: i });
    const seqs = [0, 1, 2, 3, 4].map((i) => e.store.ids.get([1, `b${i}`]));
    expect(seqs).toEqual([0, 1, 2, 3, 4]);
    await e.close();
  });

  it('delete and update by filter', async () => {
    const e = await books();
    for (let i = 0; i < 10; i++) await e.writeDocument('books', { id: `b${i}`, title: 't', author: i % 2 ? 'odd' : 'even', year: i });
    expect(await e.updateByFilter('books', 'author:=odd', { rating: 5 })).toEqual({ rating: 5, num_updated: 5 });
    expect((await e.search('books', { q: '*', filter_by: 'rating:=5' })).found).toBe(5);
    expect(await e.deleteByFilter('books', 'year:<4', 2)).toEqual({ num_deleted: 4 });
    expect(e.getCollection('books').num_documents).toBe(6);
    await e.close();
  });
});
