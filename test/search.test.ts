import { describe, expect, it } from 'vitest';
import { BOOKS_SCHEMA, cli, dataDirPath, openEngine, rng } from './helpers.js';
import type { Engine } from '../src/engine.js';
import { enumerateTerms } from '../src/termdict/walk.js';
import { editDistance, prefixDistance } from './edit-distance.js';
import { withinEdits } from '../src/termdict/distance.js';
import { StringTable } from '../src/termdict/table.js';
import { selectCandidates, selectCandidatesShared } from '../src/search/candidates.js';
import { getSchema } from '../src/collection/catalog.js';
import { snapshot } from '../src/index/manifest.js';
import { SegmentReader } from '../src/index/segment.js';

async function coll(docs: Record<string, unknown>[], fields: unknown[] = [{ name: 'title', type: 'string' }, { name: 'body', type: 'string', optional: true }], extra: Record<string, unknown> = {}): Promise<Engine> {
  const e = openEngine();
  await e.createCollection({ name: 'c', fields, ...extra });
  await e.import('c', [Buffer.from(docs.map((d) => JSON.stringify(d)).join('\n'))], {}, () => {});
  return e;
}
const ids = (r: { hits?: { document: Record<string, unknown> }[] }) => r.hits!.map((h) => h.document.id);

describe('ranking', () => {
  it('exact beats one typo beats two typos', async () => {
    const e = await coll([
      { id: 'two', title: 'quarentina' },
      { id: 'one', title: 'quarantina' },
      { id: 'exact', title: 'quarantine' },
    ]);
    expect(ids(await e.search('c', { q: 'quarantine', query_by: 'title', typo_tokens_threshold: 10 }))).toEqual(['exact', 'one', 'two']);
    await e.close();
  });

  it('more matched tokens beat fewer (when tokens are dropped)', async () => {
    const e = await coll([
      { id: 'one', title: 'apple pie' },
      { id: 'two', title: 'apple banana pie' },
    ]);
    const r = await e.search('c', { q: 'apple banana cherry', query_by: 'title', drop_tokens_threshold: 5 });
    expect(ids(r)).toEqual(['two', 'one']);
    expect(r.hits![0]!.text_match_info).toMatchObject({ tokens_matched: 2, num_tokens_dropped: 1 });
    await e.close();
  });

  it('an earlier query_by field beats a later one', async () => {
    const e = await coll([
      { id: 'in-body', title: 'something else', body: 'kayak' },
      { id: 'in-title', title: 'kayak', body: 'something else' },
    ]);
    expect(ids(await e.search('c', { q: 'kayak', query_by: 'title,body' }))).toEqual(['in-title', 'in-body']);
    expect(ids(await e.search('c', { q: 'kayak', query_by: 'body,title' }))).toEqual(['in-body', 'in-title']);
    expect(ids(await e.search('c', { q: 'kayak', query_by: 'title,body', query_by_weights: '1,5' }))).toEqual(['in-body', 'in-title']);
    await e.close();
  });

  it('closer tokens rank above distant ones', async () => {
    const e = await coll([
      { id: 'far', title: 'quick one two three four five fox' },
      { id: 'near', title: 'the quick fox jumps' },
    ]);
    expect(ids(await e.search('c', { q: 'quick fox', query_by: 'title' }))).toEqual(['near', 'far']);
    await e.close();
  });

  it('a whole word ranks above a completion of it with as many typos', async () => {
    // `evcince` finds `evincecommon` as a completion of `evince`
    const e = await coll([
      { id: 'whole', title: 'evince' },
      { id: 'completion', title: 'evincecommon' },
    ]);
    const r = await e.search('c', { q: 'evcince', query_by: 'title' });
    expect(ids(r)).toEqual(['whole', 'completion']);
    expect(r.hits!.map((h) => h.text_match_info!.typo_prefix_score)).toEqual([2, 3]);
    // no typo: the word itself is exact, its completion neither exact nor free
    const exact = await e.search('c', { q: 'evince', query_by: 'title' });
    expect(ids(exact)).toEqual(['whole', 'completion']);
    expect(exact.hits!.map((h) => h.text_match_info!.typo_prefix_score)).toEqual([0, 1]);
    await e.close();
  });

  it('credits a document with the fields of its cheapest candidates only', async () => {
    // for `evcince`, `evince` (one typo) is cheaper than the completion `evincecommon`: the
    // completion does not lend the title to `lent`, which holds `evince` in its body only
    const e = await coll([
      { id: 'in-title', title: 'evince', body: 'a document viewer' },
      { id: 'lent', title: 'evincecommon', body: 'files for evince' },
    ]);
    const r = await e.search('c', { q: 'evcince', query_by: 'title,body' });
    expect(ids(r)).toEqual(['in-title', 'lent']);
    expect(r.hits![1]!.text_match_info).toMatchObject({ fields_matched: 1, best_field_weight: 99, typo_prefix_score: 2 });
    await e.close();
  });

  it('finds a hyphenated or slashed word by each of its parts, below the whole word', async () => {
    const e = await coll([
      { id: 'hyphen', title: 'a unit-aware calculator' },
      { id: 'slash', title: 'CD ripper/encoder/tagger' },
      { id: 'whole', title: 'aware of units' },
    ]);
    expect(ids(await e.search('c', { q: 'aware', query_by: 'title' }))).toEqual(['whole', 'hyphen']);
    expect(ids(await e.search('c', { q: 'unit', query_by: 'title', prefix: 'false' }))).toEqual(['hyphen']);
    expect(ids(await e.search('c', { q: 'encoder', query_by: 'title' }))).toEqual(['slash']);
    expect(ids(await e.search('c', { q: 'tagger ripper', query_by: 'title' }))).toEqual(['slash']);
    // with typos, and as a prefix
    expect(ids(await e.search('c', { q: 'encodr', query_by: 'title' }))).toEqual(['slash']);
    expect(ids(await e.search('c', { q: 'calculator awa', query_by: 'title' }))).toEqual(['hyphen']);
    // a part costs what the word costs, but is never exact, and the field holding the word
    // whole ranks first among equals (bit 18 of best_field_score)
    const r = await e.search('c', { q: 'aware', query_by: 'title' });
    expect(r.hits!.map((h) => h.text_match_info!.typo_prefix_score)).toEqual([0, 0]);
    const whole = (h: { text_match_info?: Record<string, unknown> }) => Number((BigInt(h.text_match_info!.best_field_score as string) >> 18n) % 2n);
    expect(r.hits!.map(whole)).toEqual([1, 0]);
    await e.close();
  });

  it('ranks a glued word\'s part in a heavier field above the word in a lighter one', async () => {
    // `dash` in `Lo-dash` (title) against `dash` in a body: the part costs as the word, so
    // the title's weight decides; a part of a glued word is never an exact match
    const e = await coll([
      { id: 'body', title: 'a library of utilities', body: 'a dash of javascript' },
      { id: 'title', title: 'Lo-dash', body: 'a javascript utility library' },
    ]);
    const r = await e.search('c', { q: 'dash', query_by: 'title,body' });
    expect(ids(r)).toEqual(['title', 'body']);
    expect(r.hits!.map((h) => h.text_match_info!.best_field_weight)).toEqual([100, 99]);
    expect(r.hits!.map((h) => (BigInt(h.text_match_info!.best_field_score as string) >> 19n) % 2n)).toEqual([0n, 0n]);
    await e.close();
  });

  it('ranks the joined form of a hyphenated word as the exact match, and its parts next to each other', async () => {
    const e = await coll([
      { id: 'glued', title: 'unit-aware' },
      { id: 'apart', title: 'unit tests aware' },
      { id: 'joined', title: 'unitaware' },
    ]);
    // `unit-aware` and `unitaware` are one word, `unitaware`: both exact
    const joined = await e.search('c', { q: 'unit-aware', query_by: 'title' });
    expect(ids(joined)).toEqual(['joined', 'glued']);
    expect(joined.hits!.every((h) => (BigInt(h.text_match_info!.best_field_score as string) >> 19n) % 2n === 1n)).toBe(true);
    // its parts are found as adjacent words (a window of one word): closer than two words
    // one apart
    const parts = await e.search('c', { q: 'unit aware', query_by: 'title' });
    expect(ids(parts)).toEqual(['glued', 'apart']);
    const prox = (h: { text_match_info?: Record<string, unknown> }) => Number((BigInt(h.text_match_info!.best_field_score as string) >> 28n) % 256n);
    expect(parts.hits!.map(prox)).toEqual([255, 254]);
    await e.close();
  });

  it('matches whole words only with split_join_tokens=off', async () => {
    const e = await coll([{ id: 'hyphen', title: 'a unit-aware calculator' }]);
    expect((await e.search('c', { q: 'aware', query_by: 'title' })).found).toBe(1);
    expect((await e.search('c', { q: 'aware', query_by: 'title', split_join_tokens: 'off' })).found).toBe(0);
    expect((await e.search('c', { q: 'unitaware', query_by: 'title', split_join_tokens: 'off' })).found).toBe(1);
    await expect(e.search('c', { q: 'aware', query_by: 'title', split_join_tokens: 'sometimes' })).rejects.toThrow(/split_join_tokens.*one of `fallback`, `always`, `off`/);
    await e.close();
  });

  it('joins or splits the query\'s words when nothing matches them as typed (split_join_tokens)', async () => {
    const e = await coll([
      { id: 'joined', title: 'basketball shoes' },
      { id: 'apart', title: 'a basket ball' },
      { id: 'other', title: 'red shoes' },
    ]);
    const search = (text: string, split_join_tokens?: string) =>
      e.search('c', { q: text, query_by: 'title', prefix: 'false', drop_tokens_threshold: 0, ...(split_join_tokens ? { split_join_tokens } : {}) });
    const q = async (text: string, split_join_tokens?: string) => ids(await search(text, split_join_tokens));
    // fallback (the default): only when the words as typed find nothing
    expect(await q('basket ball')).toEqual(['apart']);
    expect(await q('basketball')).toEqual(['joined']);
    expect(await q('bask etball')).toEqual(['joined']);
    expect(await q('basket ball shoes')).toEqual(['joined']);
    expect(await q('redshoes')).toEqual(['other']);
    expect(await q('shoes redshoes')).toEqual(['other']);
    // a match of the joined or split words stands for every word as typed, at the cost of a typo
    expect((await search('bask etball')).hits![0]!.text_match_info).toMatchObject({ tokens_matched: 2, typo_prefix_score: 2, num_tokens_dropped: 0 });
    // always: the joined or split words too, ranked below the words as typed
    expect(await q('basket ball', 'always')).toEqual(['apart', 'joined']);
    expect(await q('basketball', 'always')).toEqual(['joined', 'apart']);
    // off: never
    expect(await q('redshoes', 'off')).toEqual([]);
    await e.close();
  });

  it('ranks, among documents equal in every bucket, the same words in a shorter field first, and rarer words first', async () => {
    const e = await coll([
      { id: 'short', title: 'alpha beta one' },
      // imported later: newest first would put it first on a tie
      { id: 'long', title: 'alpha beta one two three four five six' },
    ]);
    const r = await e.search('c', { q: 'alpha beta', query_by: 'title' });
    expect(ids(r)).toEqual(['short', 'long']);
    // text_match is equal: the tie-break is not part of it
    expect(r.hits![0]!.text_match).toBe(r.hits![1]!.text_match);
    expect(r.hits![0]!.text_match_info).toEqual(r.hits![1]!.text_match_info);
    // a rarer correction of a typo ranks above a common one at the same cost
    const f = await coll([
      { id: 'rare', title: 'red bolt' },
      ...Array.from({ length: 6 }, (_, i) => ({ id: `common${i}`, title: i === 0 ? 'red boat' : 'boat' })),
    ]);
    expect(ids(await f.search('c', { q: 'red bost', query_by: 'title', prefix: 'false' })).slice(0, 2)).toEqual(['rare', 'common0']);
    // one word: no tie-break, equals stay newest first
    expect(ids(await e.search('c', { q: 'alpha', query_by: 'title' }))).toEqual(['long', 'short']);
    // sort fields come first: the tie-break only orders what they leave equal
    const g = await coll(
      [
        { id: 'short', title: 'alpha beta one', year: 2001 },
        { id: 'long', title: 'alpha beta one two three four five six', year: 2020 },
      ],
      [
        { name: 'title', type: 'string' },
        { name: 'year', type: 'int32' },
      ],
      { default_sorting_field: 'year' },
    );
    expect(ids(await g.search('c', { q: 'alpha beta', query_by: 'title' }))).toEqual(['long', 'short']);
    await g.close();
    await e.close();
    await f.close();
  });

  it('ranks a query word earlier in the field first with prioritize_token_position, before sort fields', async () => {
    const e = await coll(
      [
        { id: 'early', title: 'red fox and a few more words', year: 2000 },
        { id: 'late', title: 'a big red fox', year: 2020 },
      ],
      [
        { name: 'title', type: 'string' },
        { name: 'year', type: 'int32' },
      ],
    );
    const q = async (extra: Record<string, string> = {}) => ids(await e.search('c', { q: 'red fox', query_by: 'title', ...extra }));
    // equal text matches: the rarity tie-break puts the shorter field first
    expect(await q()).toEqual(['late', 'early']);
    expect(await q({ prioritize_token_position: 'true' })).toEqual(['early', 'late']);
    // one word too
    expect(ids(await e.search('c', { q: 'fox', query_by: 'title', prioritize_token_position: 'true' }))).toEqual(['early', 'late']);
    // the position counts as part of the text match: before sort_by's fields
    expect(await q({ sort_by: '_text_match:desc,year:desc' })).toEqual(['late', 'early']);
    expect(await q({ sort_by: '_text_match:desc,year:desc', prioritize_token_position: 'true' })).toEqual(['early', 'late']);
    // text_match itself is unchanged
    const [a, b] = (await e.search('c', { q: 'red fox', query_by: 'title', prioritize_token_position: 'true' })).hits!;
    expect(a!.text_match).toBe(b!.text_match);
    await expect(e.search('c', { q: 'fox', query_by: 'title', prioritize_token_position: 'maybe' })).rejects.toThrow(/prioritize_token_position/);
    await e.close();
  });

  it('drops the query\'s words from the side drop_tokens_mode names when nothing matches them all', async () => {
    const e = await coll([
      { id: 'first', title: 'alpha beta' },
      { id: 'last', title: 'beta gamma' },
    ]);
    const q = async (mode?: string) =>
      ids(await e.search('c', { q: 'alpha beta gamma', query_by: 'title', prefix: 'false', ...(mode ? { drop_tokens_mode: mode } : {}) }));
    // right to left (the default): `alpha beta` is searched first
    expect(await q()).toEqual(['first']);
    expect(await q('right_to_left')).toEqual(['first']);
    // left to right: `beta gamma`
    expect(await q('left_to_right')).toEqual(['last']);
    // both sides, for queries of up to 3 words: each side's match
    expect((await q('both_sides:3')).sort()).toEqual(['first', 'last']);
    // longer queries drop right to left
    expect(ids(await e.search('c', { q: 'alpha beta gamma delta', query_by: 'title', prefix: 'false', drop_tokens_mode: 'both_sides:3' }))).toEqual(['first']);
    await expect(e.search('c', { q: 'alpha', query_by: 'title', drop_tokens_mode: 'middle' })).rejects.toThrow(/drop_tokens_mode.*one of `right_to_left`, `left_to_right`, `both_sides:3`/);
    await e.close();
  });

  it('keeps the parts of glued words through segment merges and in every field type', async () => {
    const e = openEngine(dataDirPath(), { merges: 'off' });
    await e.createCollection({ name: 'c', fields: [{ name: 'title', type: 'string' }, { name: 'tags', type: 'string[]' }] });
    for (let b = 0; b < 4; b++) {
      await e.writeBatch('c', [
        { kind: 'write', action: 'create', doc: { id: `t${b}`, title: `item ${b} of a well-known set`, tags: ['plain', `x-ray${b}`] } },
        { kind: 'write', action: 'create', doc: { id: `n${b}`, title: `item ${b}`, tags: ['known'] } },
      ]);
    }
    await e.deleteDocument('c', 't1');
    const before = (await e.search('c', { q: 'known', query_by: 'title,tags', per_page: 20 })).hits!.map((h) => h.document.id).sort();
    expect(await e.optimize('c')).toBeGreaterThan(0);
    const after = (await e.search('c', { q: 'known', query_by: 'title,tags', per_page: 20 })).hits!.map((h) => h.document.id).sort();
    expect(after).toEqual(before);
    expect(after).toEqual(['n0', 'n1', 'n2', 'n3', 't0', 't2', 't3']);
    expect(ids(await e.search('c', { q: 'ray2', query_by: 'tags' }))).toEqual(['t2']);
    await e.close();
  });

  it('ranks two query words on one document word below the same words adjacent, without touching the typo count', async () => {
    // `p` completes to `python` itself in `one-word`: one word of the document cannot stand for both
    const e = await coll([
      { id: 'adjacent', title: 'python pandas' },
      { id: 'one-word', title: 'python' },
    ]);
    const r = await e.search('c', { q: 'python p', query_by: 'title' });
    expect(ids(r)).toEqual(['adjacent', 'one-word']);
    const [adjacent, oneWord] = r.hits!.map((h) => h.text_match_info as Record<string, unknown>);
    expect(oneWord!.typo_prefix_score).toBe(adjacent!.typo_prefix_score);
    expect(oneWord!.tokens_matched).toBe(2);
    await e.close();
  });

  it('an exact field match ranks first among equals', async () => {
    const e = await coll([
      { id: 'longer', title: 'red shoe store' },
      { id: 'exact', title: 'red shoe' },
    ]);
    expect(ids(await e.search('c', { q: 'red shoe', query_by: 'title', prefix: false }))).toEqual(['exact', 'longer']);
    await e.close();
  });

  it('a phrase only matches adjacent tokens, in order, without typos', async () => {
    const e = await coll([
      { id: 'adjacent', title: 'new york city' },
      { id: 'apart', title: 'new shoes in york' },
      { id: 'reversed', title: 'york new' },
    ]);
    expect(ids(await e.search('c', { q: '"new york"', query_by: 'title' }))).toEqual(['adjacent']);
    expect((await e.search('c', { q: '"new yrok"', query_by: 'title' })).found).toBe(0);
    await e.close();
  });

  it('excludes documents with -word and -"phrase"', async () => {
    const e = await coll([
      { id: 'a', title: 'apple pie' },
      { id: 'b', title: 'apple tart' },
      { id: 'c', title: 'apple crumble pie' },
    ]);
    expect(ids(await e.search('c', { q: 'apple -pie', query_by: 'title' }))).toEqual(['b']);
    expect(ids(await e.search('c', { q: 'apple -"crumble pie"', query_by: 'title' })).sort()).toEqual(['a', 'b']);
    await e.close();
  });

  it('matches the last token as a prefix unless prefix is off', async () => {
    const e = await coll([{ id: 'a', title: 'television' }]);
    expect((await e.search('c', { q: 'televi', query_by: 'title' })).found).toBe(1);
    expect((await e.search('c', { q: 'televi', query_by: 'title', prefix: 'false' })).found).toBe(0);
    await e.close();
  });

  it('searches string[] and nested fields', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'n', enable_nested_fields: true, fields: [{ name: 'tags', type: 'string[]' }, { name: 'meta', type: 'object' }] });
    await e.writeDocument('n', { id: '1', tags: ['alpha', 'beta gamma'], meta: { author: { name: 'Ursula Le Guin' } } });
    expect((await e.search('n', { q: 'gamma', query_by: 'tags' })).found).toBe(1);
    expect((await e.search('n', { q: 'guin', query_by: 'meta.author.name' })).found).toBe(1);
    // a phrase does not span two array elements
    expect((await e.search('n', { q: '"alpha beta"', query_by: 'tags' })).found).toBe(0);
    await e.close();
  });
});

describe('matching against a brute-force scan', () => {
  it('finds exactly the documents holding every token, query after query, on common and rare words alike', async () => {
    // word k appears with weight 1/(k+1): w0 is in most documents, w30 in a few, so one-token
    // queries take both the dense and the sparse path, and two-token ones both
    // term-at-a-time (every token common) and the leapfrog (one rare token)
    const r = rng(11);
    const words = Array.from({ length: 40 }, (_, k) => `wrd${k}q`);
    const cdf: number[] = [];
    let acc = 0;
    for (let k = 0; k < words.length; k++) cdf.push((acc += 1 / (k + 1)));
    const pick = () => words[cdf.findIndex((c) => c >= r() * acc)]!;
    const docs = Array.from({ length: 3000 }, (_, i) => ({ id: `d${i}`, title: Array.from({ length: 2 + Math.floor(r() * 3) }, pick).join(' '), body: Array.from({ length: 4 + Math.floor(r() * 6) }, pick).join(' ') }));
    const e = await coll(docs);
    const queries = ['wrd0q', 'wrd33q', 'wrd0q wrd1q', 'wrd2q wrd35q', 'wrd39q', 'wrd1q wrd3q wrd0q', 'wrd20q', 'wrd0q wrd28q'];
    // with one typo allowed, `wrd1z` also matches wrd1q .. wrd9q at cost 1: repeated runs must rank alike
    const typoQueries = ['wrd0q wrd1z', 'wrd2z', 'wrd0z wrd3q'];
    const expected = (q: string) => docs.filter((d) => q.split(' ').every((w) => `${d.title} ${d.body}`.split(' ').includes(w))).length;
    const opts = { query_by: 'title,body', num_typos: 0, prefix: false, drop_tokens_threshold: 0, per_page: 20 };
    const first = new Map<string, unknown>();
    for (const q of typoQueries) first.set(q, ids(await e.search('c', { q, ...opts, num_typos: 1 })));
    for (const q of queries) {
      const res = await e.search('c', { q, ...opts });
      expect(res.found, q).toBe(expected(q));
      first.set(q, ids(res));
    }
    for (const q of [...queries, ...typoQueries].reverse()) {
      const typo = typoQueries.includes(q);
      if (typo) await e.search('c', { q: 'wrd0q', ...opts }); // leaves nothing behind for the next query
      const res = await e.search('c', { q, ...opts, num_typos: typo ? 1 : 0 });
      if (!typo) expect(res.found, q).toBe(expected(q));
      expect(ids(res), q).toEqual(first.get(q));
    }
    await e.close();
  });
});

describe('typo tolerance', () => {
  it('allows no typo under min_len_1typo, one from 4 characters, two from 7', async () => {
    const e = await coll([
      { id: 'cat', title: 'cat' },
      { id: 'book', title: 'book' },
      { id: 'library', title: 'library' },
    ]);
    const found = async (q: string) => (await e.search('c', { q, query_by: 'title', prefix: 'false' })).found;
    expect(await found('cot')).toBe(0);
    expect(await found('bokk')).toBe(1);
    expect(await found('bkko')).toBe(0);
    expect(await found('librery')).toBe(1);
    expect(await found('lybrery')).toBe(1);
    expect(await found('lybreri')).toBe(0);
    expect(await e.search('c', { q: 'bokk', query_by: 'title', prefix: 'false', min_len_1typo: 5 }).then((r) => r.found)).toBe(0);
    expect(await e.search('c', { q: 'librery', query_by: 'title', num_typos: 0, prefix: 'false' }).then((r) => r.found)).toBe(0);
    await e.close();
  });

  it('counts a transposition and a first-letter change as one typo each', async () => {
    const e = await coll([{ id: 'a', title: 'garden' }]);
    expect((await e.search('c', { q: 'gadren', query_by: 'title', prefix: 'false' })).found).toBe(1);
    expect((await e.search('c', { q: 'warden', query_by: 'title', prefix: 'false' })).found).toBe(1);
    await e.close();
  });

  it('stops at exact matches when typo_tokens_threshold is met', async () => {
    const e = await coll([
      { id: 'exact', title: 'piano' },
      { id: 'typo', title: 'pianos' },
      { id: 'typo2', title: 'plano' },
    ]);
    expect(ids(await e.search('c', { q: 'piano', query_by: 'title', prefix: 'false' }))).toEqual(['exact']);
    expect((await e.search('c', { q: 'piano', query_by: 'title', prefix: 'false', typo_tokens_threshold: 3 })).found).toBe(3);
    await e.close();
  });

  it.each([
    ['abcde', 400, 6, 2],
    ['abcdefghijkl', 1500, 8, 2],
    // one-letter words and characters beyond ASCII, first or second (the walk's head index covers ASCII only)
    ['ab\u007fé日', 600, 5, 1],
    // a full alphabet behind 12 shared stems: deep nodes with many children, most of them foreign to the
    // query, so whole runs of children are skipped or looked up as spent at once, at several depths in one walk
    ['abcdefghijklmnopqrstuvwxyz', 2500, 6, 2, 12],
  ])('the trie walk finds exactly the terms within the edit distance (alphabet %s, %i words)', (letters, count, maxLen, minLen, stems = 0) => {
    const r = rng(5);
    const L = letters.length;
    const word = (min: number, span: number) => Array.from({ length: min + Math.floor(r() * span) }, () => letters[Math.floor(r() * L)]).join('');
    const stem = Array.from({ length: stems }, () => word(1, 4));
    const words = [...new Set(Array.from({ length: count }, () => (stems ? stem[Math.floor(r() * stems)] : '') + word(minLen, maxLen)))].sort();
    // (the first walks of a table go without its head index, the later ones with it: both ways are checked)
    const table = StringTable.build(words);
    for (let trial = 0; trial < 60; trial++) {
      // half the queries are a dictionary word with one or two edits, so matches are found deep in the walk
      let q = word(2, 5);
      if (trial % 2) {
        const w = words[Math.floor(r() * words.length)]!.split('');
        for (let e = 0; e <= trial % 3; e++) w.splice(Math.floor(r() * w.length), r() < 0.5 ? 1 : 0, letters[Math.floor(r() * L)]!);
        q = w.join('') || q;
      }
      for (const max of [1, 2]) {
        // (every term at most once: the candidate lists add up document counts per emission)
        const got = new Map<string, number>();
        let emitted = 0;
        enumerateTerms(table, q, max, false, (i, c) => {
          got.set(words[i]!, c);
          emitted++;
        });
        expect(emitted).toBe(got.size);
        const want = new Map(words.map((w) => [w, editDistance(q, w)] as [string, number]).filter(([, d]) => d <= max));
        expect(got).toEqual(want);
        const gotP = new Map<string, number>();
        let emittedP = 0;
        const emitP = (i: number, c: number) => {
          gotP.set(words[i]!, Math.min(c, gotP.get(words[i]!) ?? 99));
          emittedP++;
        };
        enumerateTerms(table, q, max, true, emitP, (lo, hi, c) => {
          for (let i = lo; i < hi; i++) emitP(i, c);
        });
        expect(emittedP).toBe(gotP.size);
        const wantP = new Map(
          words
            .map((w) => [w, prefixDistance(q, w)] as [string, number])
            .filter(([, d]) => d <= max),
        );
        expect(gotP).toEqual(wantP);
      }
    }
  }, 30_000);

  it.each([
    // without prefix matching, 2 typos: q2 is the last 3 units ("fgh"); a substitution in q1, then a letter
    // inserted just before q2
    ['abcdefgh', 'abXdeYfgh', 2, 2, 'whole'],
    // a transposition across that split, after an edit in q1
    ['abcdefgh', 'aXcdefhg', 2, 2, 'whole'],
    ['abcdefgh', 'abcdfegh', 2, 1, 'whole'],
    // 1 typo: q2 is the longer half ("efgh"); a letter inserted just before it, or a transposition across it
    ['abcdefgh', 'abcdYefgh', 1, 1, 'whole'],
    ['abcdefgh', 'abcedfgh', 1, 1, 'whole'],
    // both typos in q1, none in q2: only the backward walk finds it
    ['abcdefgh', 'XbcYefgh', 2, 2, 'whole'],
    // prefix matching: q2 is the last 4 units ("efgh"); a transposition ending q1 (its skipped cell over the
    // forward budget)
    ['abcdefgh', 'abdcefghxy', 1, 1, 'prefix'],
    ['abcdefgh', 'aXbdcefgh', 2, 2, 'prefix'],
    // the whole budget spent on q1, so q2 sits 2 units early or late
    ['abcdefgh', 'abefghyy', 2, 2, 'prefix'],
    ['abcdefgh', 'aXbcYdefghy', 2, 2, 'prefix'],
    ['abcdefgh', 'XbcYefgh', 2, 2, 'prefix'],
    // within the forward budget
    ['abcdefgh', 'abcdefXhyy', 1, 1, 'prefix'],
    // q2 ("abab") at two of the offsets looked up: the term is still emitted once
    ['xyzwabab', 'XYzwababab', 2, 2, 'prefix'],
  ])('finds %s -> %s (typo budget %i, matching the %s term) once the walk is split in two', (query, term, max, cost, mode) => {
    const prefix = mode === 'prefix';
    const r = rng(11);
    const others = Array.from({ length: 300 }, () => Array.from({ length: 4 + Math.floor(r() * 8) }, () => 'abcdefghXY'[Math.floor(r() * 10)]).join(''));
    const words = [...new Set([term, ...others])].sort();
    const table = StringTable.build(words);
    // (the head index, and with it the split walk, comes after the table's first walks)
    for (let walk = 0; walk < 40; walk++) {
      const got = new Map<string, number>();
      const add = (i: number, c: number) => {
        expect(got.has(words[i]!)).toBe(false);
        got.set(words[i]!, c);
      };
      enumerateTerms(table, query, max, prefix, add, (lo, hi, c) => {
        for (let i = lo; i < hi; i++) add(i, c);
      });
      expect(got.get(term)).toBe(cost);
      const distance = prefix ? prefixDistance : editDistance;
      expect(got).toEqual(new Map(words.map((w) => [w, distance(query, w)] as [string, number]).filter(([, d]) => d <= max)));
    }
  });

  it('tells whether two words are within k edits as the plain edit distance does', () => {
    const r = rng(29);
    const word = () => Array.from({ length: Math.floor(r() * 9) }, () => 'abcd'[Math.floor(r() * 4)]).join('');
    for (let i = 0; i < 4000; i++) {
      const a = word();
      const b = i % 2 ? word() : a.slice(0, 2) + a.slice(3) + 'ab'.slice(0, Math.floor(r() * 3));
      const d = editDistance(a, b);
      for (const k of [0, 1, 2, 3]) expect(withinEdits(a, b, k), `${a} ${b} ${k}`).toBe(d <= k);
    }
  });

  it('keeps a whole word with a typo among the candidates before more frequent completions', async () => {
    // `libxmx` is one edit from `libxmi` (a whole word) and from the prefix of `libxml2`, `libxmlb`, ...
    const docs = [{ id: 'want', title: 'libxmi' }];
    for (const w of ['libxml2', 'libxmlb', 'libxmlsec', 'libxmlrpc', 'libxmlada'])
      for (let i = 0; i < 3; i++) docs.push({ id: `${w}-${i}`, title: w });
    const e = await coll(docs);
    const r = await e.search('c', { q: 'libxmx', query_by: 'title' });
    expect(ids(r)[0]).toBe('want');
    expect(r.hits![0]!.text_match_info).toMatchObject({ typo_prefix_score: 2 });
    expect(r.hits![1]!.text_match_info).toMatchObject({ typo_prefix_score: 3 });
    await e.close();
  });

  it('keeps each query_by field to its own num_typos and prefix when fields share a typo walk', async () => {
    const e = await coll([
      { id: 'a', title: 'orchestration', body: 'nothing here' },
      { id: 'b', title: 'nothing here', body: 'orchestration' },
    ]);
    // (the same searches again after the fields' shared dictionary is built)
    for (let round = 0; round < 20; round++) {
      expect(ids(e.searchSync('c', { q: 'orchestrasion', query_by: 'title,body', num_typos: '1,0' }))).toEqual(['a']);
      expect(ids(e.searchSync('c', { q: 'orchestrasion', query_by: 'title,body', num_typos: '0,1' }))).toEqual(['b']);
      expect(ids(e.searchSync('c', { q: 'orchestrasion', query_by: 'title,body', num_typos: '1,1' })).sort()).toEqual(['a', 'b']);
      expect(ids(e.searchSync('c', { q: 'orchestr', query_by: 'title,body', prefix: 'true,false' }))).toEqual(['a']);
      expect(ids(e.searchSync('c', { q: 'orchestr', query_by: 'title,body', prefix: 'false,true' }))).toEqual(['b']);
    }
    await e.close();
  });

  /** Seeded random words of 2 to 1 + `spread` letters over `letters`. */
  function wordMaker(seed: number, letters: string, spread: number) {
    const r = rng(seed);
    return { r, word: () => Array.from({ length: 2 + Math.floor(r() * spread) }, () => letters[Math.floor(r() * letters.length)]).join('') };
  }

  /** An engine without background merges and an empty collection `c` of two string fields, title and body. */
  async function titleAndBody(): Promise<Engine> {
    const e = openEngine(dataDirPath(), { merges: 'off' });
    await e.createCollection({ name: 'c', fields: [{ name: 'title', type: 'string' }, { name: 'body', type: 'string' }] });
    return e;
  }

  it('gives each field the same typo candidates from one walk of their shared dictionary as from its own walk', async () => {
    const { r, word } = wordMaker(23, 'abcdefgh', 7);
    // two fields with overlapping vocabularies, in two segments (merges off)
    const vocab = Array.from({ length: 900 }, word);
    const e = await titleAndBody();
    for (let batch = 0; batch < 2; batch++) {
      const docs = Array.from({ length: 150 }, (_, i) => ({
        id: `${batch}-${i}`,
        title: Array.from({ length: 3 }, () => vocab[Math.floor(r() * 500)]).join(' '),
        body: Array.from({ length: 8 }, () => vocab[300 + Math.floor(r() * 600)]).join(' '),
      }));
      await e.import('c', [Buffer.from(docs.map((d) => JSON.stringify(d)).join('\n'))], {}, () => {});
    }
    const schema = getSchema(e.store, 'c');
    const segs = snapshot(e.store, schema.id).segments;
    expect(segs.length).toBeGreaterThanOrEqual(2);
    const fields = [schema.field('title')!, schema.field('body')!];
    let shared = 0;
    for (let trial = 0; trial < 120; trial++) {
      const q = trial % 2 ? word() : vocab[Math.floor(r() * vocab.length)]!.replace(/.$/, 'x');
      for (const [max, prefix, limit] of [[1, false, 4], [2, false, 50], [1, true, 3], [2, true, 1000]] as const) {
        if (segs.every((s) => s.reader.sharedTerms([fields[0]!.id, fields[1]!.id]) !== null)) shared++;
        const got = selectCandidatesShared(segs, fields, q, max, prefix, limit);
        expect(got).toEqual(fields.map((f) => selectCandidates(segs, f, q, max, prefix, limit)));
      }
    }
    // (the union is built after a few walks: nearly every comparison above went through it)
    expect(shared).toBeGreaterThan(400);
    await e.close();
  });

  it('keeps the shared dictionaries of only the most recent query_by field combinations', async () => {
    const names = Array.from({ length: 7 }, (_, i) => `f${i}`);
    const e = await coll(
      [{ id: 'a', f0: 'orchestration', f1: 'kubernetes', f2: 'nothing', f3: 'nothing', f4: 'nothing', f5: 'nothing', f6: 'nothing' }],
      names.map((name) => ({ name, type: 'string' })),
    );
    const schema = getSchema(e.store, 'c');
    const reader = snapshot(e.store, schema.id).segments[0]!.reader;
    // every pair of fields, each searched often enough to get its union
    for (let i = 0; i < 7; i++) {
      for (let j = i + 1; j < 7; j++) {
        for (let k = 0; k < 20; k++) {
          const found = e.searchSync('c', { q: 'orchestrasion', query_by: `${names[i]},${names[j]}` }).found;
          expect(found).toBe(i === 0 ? 1 : 0);
        }
      }
    }
    expect(reader.sharedTerms([schema.field('f5')!.id, schema.field('f6')!.id])).not.toBeNull();
    expect((reader as unknown as { unions: Map<string, unknown> }).unions.size).toBeLessThanOrEqual(SegmentReader.SHARED_TERMS_KEPT);
    await e.close();
  });

  it('chooses, in one segment, the lowest-cost and most frequent candidates of all the terms that match (a whole word before a completion)', async () => {
    // a small alphabet: short prefixes with typos match hundreds of terms in many ranges
    const letters = 'abcd';
    const { r, word } = wordMaker(31, letters, 6);
    const vocab = Array.from({ length: 1500 }, word);
    const e = await titleAndBody();
    const docs = Array.from({ length: 400 }, (_, i) => ({
      id: String(i),
      // skewed draws, so that document counts differ (and tie too)
      title: Array.from({ length: 3 }, () => vocab[Math.floor(r() * r() * 700)]).join(' '),
      body: Array.from({ length: 6 }, () => vocab[400 + Math.floor(r() * r() * 1100)]).join(' '),
    }));
    // `cab` in one document, and 30 longer words that start with it in three each: the
    // token itself must still be chosen first
    docs.push({ id: 'cab', title: 'cab', body: 'cab' });
    const longer = Array.from({ length: 30 }, (_, i) => `cab${letters[i % 4]}${letters[Math.floor(i / 4) % 4]}${'d'.repeat(Math.floor(i / 16))}`);
    longer.forEach((w, i) => {
      for (let k = 0; k < 3; k++) docs.push({ id: `cab${i}-${k}`, title: w, body: w });
    });
    await e.import('c', [Buffer.from(docs.map((d) => JSON.stringify(d)).join('\n'))], { batchSize: 1000 }, () => {});
    const schema = getSchema(e.store, 'c');
    const segs = snapshot(e.store, schema.id).segments;
    expect(segs.length).toBe(1);
    const fields = [schema.field('title')!, schema.field('body')!];
    const docFreq = (name: 'title' | 'body') => {
      const m = new Map<string, number>();
      for (const d of docs) for (const w of new Set(d[name].split(' '))) m.set(w, (m.get(w) ?? 0) + 1);
      return m;
    };
    const dfs = [docFreq('title'), docFreq('body')];
    let wide = 0;
    for (let trial = 0; trial < 60; trial++) {
      const q = trial < 2 ? 'cab' : trial % 3 ? word() : vocab[Math.floor(r() * vocab.length)]!;
      for (const [max, prefix, limit] of [[1, true, 4], [2, true, 4], [1, false, 2], [2, false, 4], [0, true, 3], [2, true, 10], [2, true, 300]] as const) {
        // (the fields' union is built after a few calls: later ones walk it)
        const got = selectCandidatesShared(segs, fields, q, max, prefix, limit);
        dfs.forEach((df, f) => {
          // 2 per typo, and 1 more for a completion: a term whose closest prefix is nearer than the whole term
          const cost = (term: string) => {
            const whole = editDistance(q, term);
            if (!prefix) return whole <= max ? 2 * whole : Infinity;
            const p = prefixDistance(q, term);
            return p > max ? Infinity : 2 * p + (whole > p ? 1 : 0);
          };
          const all = [...df].map(([term, n]) => ({ term, n, cost: cost(term) })).filter((c) => c.cost < Infinity);
          if (all.length > 100) wide++;
          all.sort((a, b) => a.cost - b.cost || (a.term === q ? -1 : b.term === q ? 1 : 0) || b.n - a.n || (a.term < b.term ? -1 : 1));
          const want = all.slice(0, limit).map(({ term, cost }) => ({ term, cost }));
          const exact = all.find((c) => c.term === q);
          if (exact && !want.some((c) => c.term === q)) want.unshift({ term: q, cost: 0 });
          expect(got[f]).toEqual(want);
        });
      }
    }
    // many lookups matched far more terms than are kept
    expect(wide).toBeGreaterThan(200);
    await e.close();
  });

  it('chooses, under a filter, the same among the terms some allowed document holds (the word itself always)', async () => {
    const letters = 'abcd';
    const { r, word } = wordMaker(37, letters, 6);
    const vocab = Array.from({ length: 1200 }, word);
    const e = await titleAndBody();
    const docs = Array.from({ length: 500 }, (_, i) => ({ id: String(i), title: Array.from({ length: 3 }, () => vocab[Math.floor(r() * r() * 600)]).join(' '), body: Array.from({ length: 5 }, () => vocab[300 + Math.floor(r() * r() * 900)]).join(' ') }));
    await e.import('c', [Buffer.from(docs.map((d) => JSON.stringify(d)).join('\n'))], { batchSize: 1000 }, () => {});
    const schema = getSchema(e.store, 'c');
    const segs = snapshot(e.store, schema.id).segments;
    expect(segs.length).toBe(1);
    const fields = [schema.field('title')!, schema.field('body')!];
    let filtered = 0;
    for (let trial = 0; trial < 24; trial++) {
      // allowed: a random tenth of the documents (ordinal o is document o: one import, in order)
      const allowedIds = new Set(docs.filter(() => r() < 0.1).map((d) => d.id));
      const allow = [Uint8Array.from({ length: segs[0]!.reader.n }, (_, o) => (allowedIds.has(String(o)) ? 1 : 0))];
      const q = trial % 2 ? word() : vocab[Math.floor(r() * 600)]!;
      for (const [max, prefix, limit] of [[1, true, 4], [2, false, 4], [0, true, 3], [2, true, 10]] as const) {
        const got = selectCandidatesShared(segs, fields, q, max, prefix, limit, allow);
        (['title', 'body'] as const).forEach((name, f) => {
          const df = new Map<string, number>();
          const held = new Set<string>();
          for (const d of docs) {
            for (const w of new Set(d[name].split(' '))) {
              df.set(w, (df.get(w) ?? 0) + 1);
              if (allowedIds.has(d.id)) held.add(w);
            }
          }
          const cost = (term: string) => {
            const whole = editDistance(q, term);
            if (!prefix) return whole <= max ? 2 * whole : Infinity;
            const p = prefixDistance(q, term);
            return p > max ? Infinity : 2 * p + (whole > p ? 1 : 0);
          };
          const all = [...df].map(([term, n]) => ({ term, n, cost: cost(term) })).filter((c) => c.cost < Infinity);
          // every term the walk keeps is held by an allowed document, or is the word itself
          for (const c of got[f]!) expect(c.term === q || held.has(c.term), `${q} ${c.term}`).toBe(true);
          const admitted = all.filter((c) => c.term === q || held.has(c.term));
          if (admitted.length < all.length) filtered++;
          admitted.sort((a, b) => a.cost - b.cost || (a.term === q ? -1 : b.term === q ? 1 : 0) || b.n - a.n || (a.term < b.term ? -1 : 1));
          const want = admitted.slice(0, limit).map(({ term, cost }) => ({ term, cost }));
          const exact = admitted.find((c) => c.term === q);
          if (exact && !want.some((c) => c.term === q)) want.unshift({ term: q, cost: 0 });
          expect(got[f]).toEqual(want);
        });
      }
    }
    expect(filtered).toBeGreaterThan(30);
    await e.close();
  });

  /** The distance between q and w's closest prefix: editDistance's table, the smallest cell of its last column. */

});

describe('sorting, facets, grouping and paging', () => {
  async function books(): Promise<Engine> {
    const e = openEngine();
    await e.createCollection(BOOKS_SCHEMA);
    const r = rng(9);
    const authors = ['Austen', 'Borges', 'Calvino', 'Dickens'];
    const lines = Array.from({ length: 120 }, (_, i) =>
      JSON.stringify({ id: `b${i}`, title: `book ${i % 2 ? 'of sand' : 'of cities'}`, author: authors[i % 4], tags: [`t${i % 3}`, `t${(i + 1) % 3}`], year: 1800 + Math.floor(r() * 200), rating: Math.round(r() * 50) / 10, in_print: i % 5 !== 0 }),
    );
    await e.import('books', [Buffer.from(lines.join('\n'))], { batchSize: 17 }, () => {});
    return e;
  }

  it('sorts by up to three clauses and by the default sorting field', async () => {
    const e = await books();
    const all = [...e.exportDocuments('books')] as Record<string, number | string>[];
    const r = await e.search('books', { q: '*', sort_by: 'author:asc,rating:desc', per_page: 250 }).catch((x) => x);
    expect(String(r.message)).toMatch(/field `author` is not sortable/);
    const s = await e.search('books', { q: '*', sort_by: 'rating:desc,year:asc', per_page: 250 });
    const want = [...all].sort((a, b) => (b.rating as number) - (a.rating as number) || (a.year as number) - (b.year as number) || Number(String(b.id).slice(1)) - Number(String(a.id).slice(1)));
    expect(ids(s)).toEqual(want.map((d) => d.id));
    const d = await e.search('books', { q: '*', per_page: 5 });
    const years = d.hits!.map((h) => h.document.year as number);
    expect(years).toEqual([...all].map((x) => x.year as number).sort((a, b) => b - a).slice(0, 5));
    await expect(e.search('books', { q: '*', sort_by: 'a:asc,b:asc,c:asc,d:asc' })).rejects.toThrow(/at most 3 clauses/);
    await e.close();
  });

  it('counts facets like a direct tally, with stats and facet_query', async () => {
    const e = await books();
    const all = [...e.exportDocuments('books')] as Array<{ author: string; tags: string[]; year: number; title: string }>;
    const r = await e.search('books', { q: 'sand', query_by: 'title', facet_by: 'author,tags,year', max_facet_values: 100, per_page: 0 });
    const matched = all.filter((d) => d.title.includes('sand'));
    const tally = (vals: string[]) => vals.reduce((m, v) => m.set(v, (m.get(v) ?? 0) + 1), new Map<string, number>());
    const authorCounts = Object.fromEntries(r.facet_counts[0]!.counts.map((c) => [c.value, c.count]));
    expect(authorCounts).toEqual(Object.fromEntries(tally(matched.map((d) => d.author))));
    const tagCounts = Object.fromEntries(r.facet_counts[1]!.counts.map((c) => [c.value, c.count]));
    expect(tagCounts).toEqual(Object.fromEntries(tally(matched.flatMap((d) => d.tags))));
    const ys = matched.map((d) => d.year);
    expect(r.facet_counts[2]!.stats).toMatchObject({ min: Math.min(...ys), max: Math.max(...ys), sum: ys.reduce((a, b) => a + b, 0) });
    expect(r.facet_counts[2]!.stats.avg).toBeCloseTo(ys.reduce((a, b) => a + b, 0) / ys.length);
    const fq = await e.search('books', { q: '*', facet_by: 'author', facet_query: 'author:bor' });
    expect(fq.facet_counts[0]!.counts).toEqual([{ count: 30, value: 'Borges', highlighted: '<mark>Bor</mark>ges' }]);
    await expect(e.search('books', { q: '*', facet_by: 'title' })).rejects.toThrow(/`title` is not a facet field/);
    await e.close();
  });

  it('facet counts and hits never go stale after deletes and updates', async () => {
    const e = await books();
    await e.deleteByFilter('books', 'author:=Austen');
    await e.updateByFilter('books', 'author:=Borges', { author: 'Austen' });
    const r = await e.search('books', { q: 'book', query_by: 'title', facet_by: 'author', per_page: 0 });
    expect(Object.fromEntries(r.facet_counts[0]!.counts.map((c) => [c.value, c.count]))).toEqual({ Austen: 30, Calvino: 30, Dickens: 30 });
    expect(r.found).toBe(90);
    await e.optimize('books');
    const r2 = await e.search('books', { q: 'book', query_by: 'title', facet_by: 'author', per_page: 0 });
    expect(r2.facet_counts).toEqual(r.facet_counts);
    await e.close();
  });

  it('groups hits by a facet field', async () => {
    const e = await books();
    const r = await e.search('books', { q: 'book', query_by: 'title', group_by: 'author', group_limit: 2, per_page: 3 });
    expect(r.found).toBe(4);
    expect(r.found_docs).toBe(120);
    expect(r.grouped_hits).toHaveLength(3);
    for (const g of r.grouped_hits!) {
      expect(g.hits).toHaveLength(2);
      expect(g.found).toBe(30);
      for (const h of g.hits) expect(h.document.author).toBe(g.group_key[0]);
    }
    await e.close();
  });

  it('pages with page/per_page and offset/limit, and projects fields', async () => {
    const e = await books();
    const p2 = await e.search('books', { q: '*', per_page: 7, page: 2, sort_by: 'year:asc' });
    const ol = await e.search('books', { q: '*', offset: 7, limit: 7, sort_by: 'year:asc' });
    expect(ids(p2)).toEqual(ids(ol));
    const inc = await e.search('books', { q: '*', per_page: 1, include_fields: 'title,year' });
    expect(Object.keys(inc.hits![0]!.document).sort()).toEqual(['title', 'year']);
    const exc = await e.search('books', { q: '*', per_page: 1, exclude_fields: 'tags,rating' });
    expect(exc.hits![0]!.document).not.toHaveProperty('tags');
    await expect(e.search('books', { q: '*', per_page: 251 })).rejects.toThrow(/per_page.*between 0 and 250/);
    await e.close();
  });
});

describe('highlights', () => {
  it('marks matched tokens in highlight and highlights, with snippets of long fields', async () => {
    const long = Array.from({ length: 60 }, (_, i) => (i === 40 ? 'Zebra' : `word${i}`)).join(' ');
    const e = await coll([{ id: 'a', title: 'The Zebra crossing', body: long }]);
    const r = await e.search('c', { q: 'zebra', query_by: 'title,body', highlight_full_fields: 'title' });
    const h = r.hits![0]!;
    expect(h.highlight.title).toEqual({ matched_tokens: ['Zebra'], snippet: 'The <mark>Zebra</mark> crossing', value: 'The <mark>Zebra</mark> crossing' });
    expect((h.highlight.body as { snippet: string }).snippet).toBe('word36 word37 word38 word39 <mark>Zebra</mark> word41 word42 word43 word44');
    expect(h.highlights.map((x) => x.field)).toEqual(['title', 'body']);
    const t = await e.search('c', { q: 'zebr', query_by: 'title', highlight_start_tag: '[', highlight_end_tag: ']', highlight_affix_num_tokens: 1 });
    expect((t.hits![0]!.highlight.title as { snippet: string }).snippet).toBe('The [Zebra] crossing');
    await e.close();
  });

  it('highlights a glued word when one of its parts matched', async () => {
    const e = await coll([{ id: '1', title: 'a unit-aware calculator and a unit converter' }]);
    const r = await e.search('c', { q: 'aware calculator', query_by: 'title' });
    expect(r.hits![0]!.highlights![0]).toMatchObject({ field: 'title', snippet: 'a <mark>unit-aware</mark> <mark>calculator</mark> and a unit converter' });
    await e.close();
  });

  it('highlights array elements and typo matches', async () => {
    const e = await coll([{ id: 'a', tags: ['running shoes', 'red'] }], [{ name: 'tags', type: 'string[]' }]);
    const r = await e.search('c', { q: 'runing', query_by: 'tags' });
    expect(r.hits![0]!.highlight.tags).toEqual([
      { matched_tokens: ['running'], snippet: '<mark>running</mark> shoes' },
      { matched_tokens: [], snippet: 'red' },
    ]);
    expect(r.hits![0]!.highlights[0]).toMatchObject({ field: 'tags', indices: [0], matched_tokens: [['running']] });
    await e.close();
  });
});

describe('stopwords', () => {
  it('removes a set\'s words from queries only', async () => {
    const e = await coll([{ id: 'a', title: 'the lord of the rings' }, { id: 'b', title: 'rings of power' }]);
    const set = await e.putStopwords('common', { stopwords: ['The', 'of the'], locale: 'en' });
    expect(set).toEqual({ id: 'common', stopwords: ['the', 'of'], locale: 'en' });
    expect((await e.search('c', { q: 'the rings', query_by: 'title', drop_tokens_threshold: 0 })).found).toBe(1);
    expect((await e.search('c', { q: 'the rings', query_by: 'title', drop_tokens_threshold: 0, stopwords: 'common' })).found).toBe(2);
    await expect(e.search('c', { q: 'x', query_by: 'title', stopwords: 'nope' })).rejects.toThrow(/stopword set `nope` not found/);
    expect(e.listStopwords().map((s) => s.id)).toEqual(['common']);
    await e.deleteStopwords('common');
    expect(e.listStopwords()).toEqual([]);
    await e.close();
  });

  it('CLI: put from --words and --file, list, get, delete', async () => {
    const dir = dataDirPath();
    const p = await cli(['stopwords', 'put', 'en', '--words', 'a,an,The', '-d', dir]);
    expect(JSON.parse(p.stdout)).toEqual({ id: 'en', stopwords: ['a', 'an', 'the'] });
    const l = await cli(['stopwords', 'list', '-d', dir]);
    expect(l.stdout).toMatch(/^en\s+3 words/);
    const g = await cli(['stopwords', 'get', 'en', '-d', dir]);
    expect(JSON.parse(g.stdout).stopwords).toEqual(['a', 'an', 'the']);
    const bad = await cli(['stopwords', 'put', 'x', '-d', dir]);
    expect(bad.code).toBe(2);
    const d = await cli(['stopwords', 'delete', 'en', '-d', dir]);
    expect(JSON.parse(d.stdout)).toEqual({ id: 'en' });
  });
});

describe('text in many scripts', () => {
  it('finds accented and CJK text', async () => {
    const e = await coll([
      { id: 'fr', title: 'Crème brûlée' },
      { id: 'ja', title: '東京タワーの写真' },
      { id: 'zh', title: '我喜欢北京烤鸭' },
    ]);
    expect(ids(await e.search('c', { q: 'creme brulee', query_by: 'title' }))).toEqual(['fr']);
    expect(ids(await e.search('c', { q: 'CRÈME', query_by: 'title' }))).toEqual(['fr']);
    expect(ids(await e.search('c', { q: '東京', query_by: 'title' }))).toEqual(['ja']);
    expect(ids(await e.search('c', { q: '北京', query_by: 'title' }))).toEqual(['zh']);
    await e.close();
  });
});

describe('fathom search', () => {
  it('prints hits for people, JSON for programs, JSON Lines for pipelines, and rejects bad parameters with exit 2', async () => {
    const dir = dataDirPath();
    const e = openEngine(dir);
    await e.createCollection(BOOKS_SCHEMA);
    await e.writeDocument('books', { id: '1', title: 'The Book of Sand', author: 'Borges', year: 1975, tags: ['fiction'] });
    await e.writeDocument('books', { id: '2', title: 'Invisible Cities', author: 'Calvino', year: 1972 });
    await e.close();
    const human = await cli(['search', 'books', '-q', 'sand', '--query-by', 'title', '--facet-by', 'author', '-d', dir]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^found 1 of 2 in \d+ ms, page 1/);
    expect(human.stdout).toContain('The Book of Sand');
    expect(human.stdout).toMatch(/author \(1 values\)\n\s+Borges \(1\)/);
    const json = await cli(['search', 'books', '-q', 'sand', '--query-by', 'title', '--json', '-d', dir]);
    const res = JSON.parse(json.stdout);
    expect(res).toMatchObject({ found: 1, out_of: 2, page: 1, request_params: { collection_name: 'books', q: 'sand', per_page: 10 } });
    expect(res.hits[0].highlight.title.snippet).toBe('The Book of <mark>Sand</mark>');
    const jl = await cli(['search', 'books', '--sort-by', 'year:asc', '--jsonl', '-d', dir]);
    expect(jl.stdout.trim().split('\n').map((l) => JSON.parse(l).id)).toEqual(['2', '1']);
    const p = await cli(['search', 'books', '-q', 'x', '--query-by', 'title', '--param', 'num_typos=0', '--json', '-d', dir]);
    expect(p.code).toBe(0);
    for (const [args, re] of [
      [['--filter-by', 'year:>'], /filter_by: expected a value after `year:>`/],
      [['--per-page', 'lots'], /per_page.*whole number/],
      [['--query-by', 'nope', '-q', 'x'], /no field named `nope`/],
      [['--sort-by', 'title:up'], /must end in `:asc` or `:desc`/],
    ] as const) {
      const r = await cli(['search', 'books', ...args, '-d', dir]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(re);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});
