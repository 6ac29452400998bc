import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BIN, ROOT, cli, dataDirPath, openEngine, rng, tmpDir } from './helpers.js';
import { parseVectorQuery } from '../src/vector/vquery.js';
import type { Engine } from '../src/engine.js';

const DIMS = 16;

/** Clustered random vectors: 20 centres, points spread around them. */
function clustered(n: number, seed: number, dims = DIMS): number[][] {
  const r = rng(seed);
  const centres = Array.from({ length: 20 }, () => Array.from({ length: dims }, () => r() * 2 - 1));
  return Array.from({ length: n }, () => {
    const c = centres[Math.floor(r() * centres.length)]!;
    return c.map((x) => x + (r() - 0.5) * 0.6);
  });
}

function cosineDistance(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return 1 - dot / Math.sqrt(na * nb);
}

async function vectorsEngine(n: number, seed = 1, dir?: string): Promise<{ e: Engine; vecs: number[][] }> {
  const e = openEngine(dir);
  await e.createCollection({
    name: 'v',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'group', type: 'int32', facet: true },
      { name: 'emb', type: 'float[]', num_dim: DIMS },
    ],
  });
  const vecs = clustered(n, seed);
  const lines = vecs.map((v, i) => JSON.stringify({ id: `d${i}`, title: `document ${i} ${i % 3 === 0 ? 'fizz' : 'buzz'}`, group: i % 10, emb: v }));
  await e.import('v', [Buffer.from(lines.join('\n'))], {}, () => {});
  return { e, vecs };
}

function bruteForce(vecs: number[][], q: number[], k: number, allow: (i: number) => boolean = () => true): string[] {
  return vecs
    .map((v, i) => ({ i, d: cosineDistance(v, q) }))
    .filter((x) => allow(x.i))
    .sort((a, b) => a.d - b.d)
    .slice(0, k)
    .map((x) => `d${x.i}`);
}

const vq = (v: number[], opts = '') => `emb:([${v.join(',')}]${opts})`;

describe('vector_query parser', () => {
  it('reads a vector and every option', () => {
    expect(parseVectorQuery('emb:([0.1, -2, 3e-1], k: 5, ef: 40, alpha: 0.5, distance_threshold: 0.7, flat_search_cutoff: 20)')).toEqual({
      field: 'emb',
      vector: Float32Array.from([0.1, -2, 0.3]),
      k: 5,
      ef: 40,
      alpha: 0.5,
      distanceThreshold: 0.7,
      flatSearchCutoff: 20,
    });
    expect(parseVectorQuery('emb:([], id: doc-7)')).toEqual({ field: 'emb', vector: new Float32Array(0), id: 'doc-7' });
    expect(parseVectorQuery('emb:([], queries: [red shoe, `blue, hat`], query_weights: [0.7, 0.3])')).toMatchObject({ queries: ['red shoe', 'blue, hat'], queryWeights: [0.7, 0.3] });
  });
  it('reads every number to the float32 that Number() and rounding would give', () => {
    const num = fc.oneof(
      fc.float({ noNaN: true, noDefaultInfinity: true }).map((f) => String(f)),
      fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e30, max: 1e30 }).map((d) => String(d)),
      fc.tuple(fc.integer({ min: -99999, max: 99999 }), fc.nat(99999999), fc.integer({ min: -40, max: 30 })).map(([a, b, e]) => `${a}.${String(b).padStart(8, '0')}e${e}`),
      fc.constantFrom('0', '-0', '0.0', '0e5', '1E+2', '-0.000001', '123456789012345678901234567890', '1e-40', '3.4028234663852886e38', '1.', '.5', '007'),
      // long digit strings: more significant digits than the reader keeps, leading zeros, exponents at the edges of its fast path
      fc
        .tuple(fc.boolean(), fc.stringMatching(/^[0-9]{1,25}$/), fc.stringMatching(/^[0-9]{0,25}$/), fc.option(fc.integer({ min: -45, max: 38 })))
        .map(([neg, a, b, e]) => `${neg ? '-' : ''}${a}${b ? '.' + b : ''}${e === null ? '' : 'e' + e}`)
        .filter((t) => Number.isFinite(Math.fround(Number(t)))),
    );
    fc.assert(
      fc.property(fc.array(num, { maxLength: 40 }), fc.constantFrom(',', ', ', ' ,\n'), (nums, sep) => {
        const got = parseVectorQuery(`emb:([${nums.join(sep)}], k: 3)`).vector;
        expect(Array.from(got)).toEqual(nums.map((x) => Math.fround(Number(x))));
      }),
      { numRuns: 500 },
    );
  });
  it('reads float32 values as clients print them, and decimals halfway between two float32s, exactly', () => {
    const f32 = new Float32Array(1);
    const u32 = new Uint32Array(f32.buffer);
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.float({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }), fc.boolean()), { minLength: 1, maxLength: 400 }), (pairs) => {
        const nums = pairs.map(([f, halfway]) => {
          if (!halfway || f === 0) return f;
          // the double halfway between f and the next float32 away from zero: rounding decides ties
          f32[0] = f;
          u32[0]! += 1;
          return (f + f32[0]!) / 2;
        });
        const text = nums.map((x) => String(x));
        const got = parseVectorQuery(`emb:([${text.join(',')}])`).vector;
        expect(Array.from(got)).toEqual(text.map((x) => Math.fround(JSON.parse(x) as number)));
      }),
      { numRuns: 300 },
    );
  });
  it('reads a vector whose text is longer than the parser keeps a buffer for (over 1 MiB)', () => {
    const text = Array.from({ length: 70_000 }, (_, i) => String(Math.fround(Math.sin(i) / 3)));
    const src = `emb:([${text.join(', ')}])`;
    expect(src.length).toBeGreaterThan(1 << 20);
    expect(Array.from(parseVectorQuery(src).vector)).toEqual(text.map((x) => Math.fround(Number(x))));
  });
  it('reads long decimals just either side of a float32 midpoint as Number() and rounding would', () => {
    const f32 = new Float32Array(1);
    const u32 = new Uint32Array(f32.buffer);
    // the exact decimal expansion of a positive double (m * 2^e = m * 5^-e / 10^-e)
    const exact = (x: number): string => {
      const dv = new DataView(new ArrayBuffer(8));
      dv.setFloat64(0, x);
      const bits = dv.getBigUint64(0);
      const e = Number((bits >> 52n) & 0x7ffn) - 1075;
      const m = (bits & ((1n << 52n) - 1n)) | (1n << 52n);
      if (e >= 0) return String(m << BigInt(e));
      const digits = String(m * 5n ** BigInt(-e)).padStart(-e + 1, '0');
      return `${digits.slice(0, digits.length + e)}.${digits.slice(digits.length + e)}`;
    };
    fc.assert(
      fc.property(fc.float({ noNaN: true, noDefaultInfinity: true, min: Math.fround(1e-3), max: 1e6 }), fc.integer({ min: 16, max: 24 }), (f, keep) => {
        f32[0] = f;
        u32[0]! += 1;
        const mid = exact((f + f32[0]!) / 2);
        // above the midpoint by less than the reader's 15 digits can see, and below it (truncated)
        const above = `${mid}000001`;
        const sig = mid.replace('.', '').replace(/^0+/, '');
        const cut = mid.length - Math.max(0, sig.length - keep);
        const below = mid.slice(0, cut).endsWith('.') ? mid.slice(0, cut - 1) : mid.slice(0, cut);
        const text = [above, below, mid];
        const got = parseVectorQuery(`emb:([${text.join(', ')}])`).vector;
        expect(Array.from(got)).toEqual(text.map((x) => Math.fround(Number(x))));
      }),
      { numRuns: 300 },
    );
  });
  it.each([
    ['emb([1,2])', /expected `:`/],
    ['emb:1,2', /expected/],
    ['emb:(1, 2)', /first element/],
    ['emb:([1, x])', /`x` is not a number/],
    ['emb:([1], k: 0)', /`k` must be an integer of at least 1/],
    ['emb:([1], k: 2.5)', /`k` must be an integer/],
    ['emb:([1], colour: red)', /unknown option `colour`/],
    ['emb:([1], alpha: 2)', /between 0 and 1/],
    ['emb:([], queries: [a], query_weights: [1, 2])', /one weight per entry/],
    ['emb:([1], id: x)', /either a vector or `id`/],
    ['emb:([1, 1e39])', /entry 1 is outside the float32 range/],
    ['emb:([1,, 2])', /`` is not a number/],
    ['emb:([1, \uff12])', /`\uff12` is not a number/],
    ['emb:([1, 2 3])', /`2 3` is not a number/],
  ])('rejects %s', (src, re) => expect(() => parseVectorQuery(src)).toThrow(re));
});

describe('vector search', () => {
  it('finds what an exact cosine scan finds (recall@10 above 0.95 at ef 100)', async () => {
    const { e, vecs } = await vectorsEngine(3000, 7);
    const queries = clustered(50, 99);
    let hits = 0;
    for (const q of queries) {
      const res = await e.search('v', { q: '*', vector_query: vq(q, ', k: 10, ef: 100'), per_page: 10 });
      const got = res.hits!.map((h) => h.document.id);
      const want = bruteForce(vecs, q, 10);
      hits += got.filter((id) => want.includes(id as string)).length;
      // ascending distances, each within [0, 2] and equal to the exact distance
      const d = res.hits!.map((h) => h.vector_distance as number);
      expect([...d].sort((a, b) => a - b)).toEqual(d);
      res.hits!.forEach((h) => expect(h.vector_distance).toBeCloseTo(cosineDistance(vecs[Number(String(h.document.id).slice(1))]!, q), 4));
    }
    const recall = hits / (queries.length * 10);
    // 3,000 points, M 16, ef 100: a correct graph is near-exact; below 0.95 something is broken
    expect(recall).toBeGreaterThan(0.95);
    await e.close();
  });

  it('rejects a vector of the wrong length, naming the field and both lengths', async () => {
    const { e } = await vectorsEngine(10);
    await expect(e.writeDocument('v', { id: 'bad', title: 'x', group: 1, emb: [1, 2, 3] })).rejects.toThrow('Field `emb` must have 16 dimensions.');
    await expect(e.search('v', { q: '*', vector_query: 'emb:([1,2,3])' })).rejects.toThrow(/has 16 dimensions but the query vector has 3/);
    await e.close();
  });

  it('the id form returns neighbours of a stored document and leaves it out', async () => {
    const { e, vecs } = await vectorsEngine(500, 3);
    const res = await e.search('v', { q: '*', vector_query: 'emb:([], id: d42, k: 5)', per_page: 5 });
    const ids = res.hits!.map((h) => h.document.id);
    expect(ids).not.toContain('d42');
    expect(ids).toEqual(bruteForce(vecs, vecs[42]!, 6).filter((x) => x !== 'd42').slice(0, 5));
    await e.close();
  });

  it('respects filters exactly, through the graph and through the exact scan', async () => {
    const { e, vecs } = await vectorsEngine(3000, 5);
    const q = clustered(1, 1234)[0]!;
    for (const [filter, allow] of [
      ['group:=3', (i: number) => i % 10 === 3], // 10%: filtered graph walk
      ['group:=3 && title:fizz', (i: number) => i % 10 === 3 && i % 3 === 0], // ~3%: exact scan
    ] as const) {
      const res = await e.search('v', { q: '*', vector_query: vq(q, ', k: 20, ef: 200'), filter_by: filter, per_page: 20 });
      for (const h of res.hits!) expect(allow(Number(String(h.document.id).slice(1)))).toBe(true);
      const want = bruteForce(vecs, q, 20, allow);
      const got = res.hits!.map((h) => h.document.id as string);
      expect(got.filter((id) => want.includes(id)).length).toBeGreaterThanOrEqual(19);
    }
    await e.close();
  });

  it('uses the larger of per_page and k, paginates, and honours distance_threshold', async () => {
    const { e, vecs } = await vectorsEngine(400, 11);
    const q = vecs[0]!;
    const a = await e.search('v', { q: '*', vector_query: vq(q, ', k: 3'), per_page: 10 });
    expect(a.found).toBe(10);
    const b = await e.search('v', { q: '*', vector_query: vq(q, ', k: 30'), per_page: 10, page: 2 });
    expect(b.found).toBe(30);
    expect(b.hits).toHaveLength(10);
    const c = await e.search('v', { q: '*', vector_query: vq(q, ', k: 50, distance_threshold: 0.05'), per_page: 50 });
    expect(c.hits!.every((h) => (h.vector_distance as number) <= 0.05)).toBe(true);
    expect(c.found).toBe(c.hits!.length);
    await e.close();
  });

  it('counts facets over the vector results and sorts by _vector_distance after a numeric field', async () => {
    const { e, vecs } = await vectorsEngine(300, 13);
    const res = await e.search('v', { q: '*', vector_query: vq(vecs[5]!, ', k: 20'), per_page: 20, facet_by: 'group', sort_by: 'group:asc,_vector_distance:asc' });
    expect(res.facet_counts[0]!.counts.reduce((s, c) => s + c.count, 0)).toBe(20);
    const keys = res.hits!.map((h) => [h.document.group as number, h.vector_distance as number]);
    for (let i = 1; i < keys.length; i++) {
      expect(keys[i]![0]! > keys[i - 1]![0]! || (keys[i]![0] === keys[i - 1]![0] && keys[i]![1]! >= keys[i - 1]![1]!)).toBe(true);
    }
    await e.close();
  });

  it('fuses keyword and vector ranks as 0.7/keyword_rank + 0.3/vector_rank', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'h', fields: [{ name: 'name', type: 'string' }, { name: 'emb', type: 'float[]', num_dim: 2 }] });
    // keyword ranks for "butter": butter (exact, 1), butterfly (2), butterball (3) by prefix frequency ties broken by seq
    await e.writeDocument('h', { id: '1', name: 'butter', emb: [1, 0] });
    await e.writeDocument('h', { id: '2', name: 'butterfly', emb: [0.6, 0.8] });
    await e.writeDocument('h', { id: '3', name: 'butterball', emb: [0.8, 0.6] });
    const res = await e.search('h', { q: 'butter', query_by: 'name', vector_query: 'emb:([1, 0])', prefix: 'true' });
    const byName = Object.fromEntries(res.hits!.map((h) => [h.document.name, h]));
    const kwOrder = (await e.search('h', { q: 'butter', query_by: 'name' })).hits!.map((h) => h.document.name as string);
    const vecOrder = ['butter', 'butterball', 'butterfly'];
    for (const name of ['butter', 'butterfly', 'butterball']) {
      const expected = 0.7 / (kwOrder.indexOf(name) + 1) + 0.3 / (vecOrder.indexOf(name) + 1);
      expect((byName[name]!.hybrid_search_info as { rank_fusion_score: number }).rank_fusion_score).toBeCloseTo(expected, 10);
    }
    // hits are ordered by the fused score
    const scores = res.hits!.map((h) => (h.hybrid_search_info as { rank_fusion_score: number }).rank_fusion_score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    // alpha moves the weight
    const a1 = await e.search('h', { q: 'butter', query_by: 'name', vector_query: 'emb:([1, 0], alpha: 1)' });
    expect(a1.hits!.map((h) => h.document.name)).toEqual(vecOrder);
    await e.close();
  });

  it('re-ranks keyword results by distance with _vector_query in sort_by', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'r', fields: [{ name: 'name', type: 'string' }, { name: 'emb', type: 'float[]', num_dim: 2 }] });
    await e.writeDocument('r', { id: '1', name: 'red shoe', emb: [0, 1] });
    await e.writeDocument('r', { id: '2', name: 'red shoe', emb: [1, 0] });
    await e.writeDocument('r', { id: '3', name: 'red shoe', emb: [0.7, 0.7] });
    const res = await e.search('r', { q: 'red shoe', query_by: 'name', sort_by: '_text_match:desc,_vector_query(emb:([1, 0])):asc' });
    expect(res.hits!.map((h) => h.document.id)).toEqual(['2', '3', '1']);
    await e.close();
  });

  it('keeps vectors consistent after update, delete and restart, without rebuilding a healthy graph', async () => {
    const dir = dataDirPath();
    const { e, vecs } = await vectorsEngine(200, 17, dir);
    await e.writeDocument('v', { id: 'd0', emb: vecs[150] }, { action: 'update' });
    await e.deleteDocument('v', 'd150');
    const near = async (eng: Engine) => (await eng.search('v', { q: '*', vector_query: vq(vecs[150]!, ', k: 1') })).hits![0]!.document.id;
    expect(await near(e)).toBe('d0');
    e.syncVectors('v');
    await e.close();
    const e2 = openEngine(dir);
    expect(await near(e2)).toBe('d0');
    const { vectorIndex } = await import('../src/vector/hnsw.js');
    const schema = (await import('../src/collection/catalog.js')).getSchema(e2.store, 'v');
    expect(vectorIndex(e2.store, schema.id, schema.field('emb')!).rebuilt).toBe(false);
    // a graph that is behind catches up from the log
    await e2.writeDocument('v', { id: 'new', title: 't', group: 1, emb: vecs[150] });
    expect(await near(e2)).toMatch(/^(d0|new)$/);
    await e2.close();
    // a missing graph is rebuilt from LMDB
    fs.rmSync(path.join(dir, 'vectors'), { recursive: true, force: true });
    const e3 = openEngine(dir);
    expect(['d0', 'new']).toContain(await near(e3));
    expect((await e3.search('v', { q: '*', vector_query: vq(vecs[150]!, ', k: 250'), per_page: 250 })).found).toBe(200);
    await e3.close();
  });

  it('survives a SIGKILL during a CLI import: the graph agrees with the stored vectors', async () => {
    const dir = dataDirPath();
    await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify({ name: 'v', fields: [{ name: 'title', type: 'string' }, { name: 'emb', type: 'float[]', num_dim: DIMS }] }) });
    const vecs = clustered(20000, 21);
    const file = path.join(tmpDir(), 'v.jsonl');
    fs.writeFileSync(file, vecs.map((v, i) => JSON.stringify({ id: `d${i}`, title: 't', emb: v })).join('\n'));
    await new Promise<void>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'import', 'v', file, '-d', dir], { cwd: ROOT });
      let n = 0;
      child.stdout.on('data', (d: Buffer) => {
        n += d.toString().split('\n').length - 1;
        if (n > 2000) child.kill('SIGKILL');
      });
      child.on('close', () => resolve());
    });
    const e = openEngine(dir);
    const count = e.getCollection('v').num_documents;
    expect(count).toBeGreaterThan(2000);
    const q = vecs[10]!;
    const res = await e.search('v', { q: '*', vector_query: vq(q, ', k: 10, ef: 200'), per_page: 10 });
    const present = new Set(Array.from({ length: 20000 }, (_, i) => i).filter((i) => { try { e.getDocument('v', `d${i}`); return true; } catch { return false; } }));
    const want = bruteForce(vecs, q, 10, (i) => present.has(i));
    expect(res.hits!.map((h) => h.document.id)).toEqual(want);
    await e.close();
  });

  it('stores a vector once, outside the document record, and returns it with the document', async () => {
    const e = openEngine();
    await e.createCollection({ name: 's', fields: [{ name: 'title', type: 'string' }, { name: 'emb', type: 'float[]', num_dim: 3 }] });
    await e.writeDocument('s', { id: '1', title: 'a', emb: [0.5, 0.25, 1] });
    const collId = (await import('../src/collection/catalog.js')).getSchema(e.store, 's').id;
    expect(e.store.docs.get([collId, e.store.ids.get([collId, '1'])!])).toEqual({ id: '1', title: 'a' });
    expect(e.getDocument('s', '1')).toEqual({ id: '1', title: 'a', emb: [0.5, 0.25, 1] });
    expect(e.getDocument('s', '1', { exclude: ['emb'] })).toEqual({ id: '1', title: 'a' });
    await e.updateDocument('s', '1', { title: 'b' });
    expect([...e.exportDocuments('s')]).toEqual([{ id: '1', title: 'b', emb: [0.5, 0.25, 1] }]);
    const r = await e.search('s', { q: '*', vector_query: 'emb:([0.5, 0.25, 1], k: 1)' });
    expect(r.hits![0]!.vector_distance).toBeCloseTo(0, 6);
    expect(r.hits![0]!.document).toEqual({ id: '1', title: 'b', emb: [0.5, 0.25, 1] });
    await e.close();
  });

  it('fathom search --vector-query prints the same JSON as the engine', async () => {
    const dir = dataDirPath();
    const { e, vecs } = await vectorsEngine(50, 23, dir);
    const params = { q: '*', vector_query: vq(vecs[1]!, ', k: 3'), per_page: '3', exclude_fields: 'emb' };
    const direct = await e.search('v', params);
    e.syncVectors('v');
    await e.close();
    const r = await cli(['search', 'v', '--vector-query', params.vector_query, '--per-page', '3', '--exclude-fields', 'emb', '--json', '-d', dir]);
    expect(r.code).toBe(0);
    const viaCli = JSON.parse(r.stdout);
    expect({ ...viaCli, search_time_ms: 0 }).toEqual({ ...direct, search_time_ms: 0 });
  });
});
