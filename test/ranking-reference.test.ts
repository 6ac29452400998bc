/**
 * The ranking against a reference ranker written in plain code. For random documents and
 * queries, the reference finds each query word's candidate terms by brute force over the
 * document words and parts, the documents holding a candidate of every word, and per
 * document what text_match orders by: tokens matched, the cost of its cheapest candidates
 * (2 per typo, 1 more for a completion; a part of a glued word costs as a word), the
 * proximity of those candidates in the best field, that field's weight, whether the field
 * is exactly the query (never by parts), whether it holds its words whole (not only as
 * parts), and the fields matched (each word crediting only the fields of its cheapest
 * candidates in the document), then, for two words or more, their BM25 rarity
 * (with the whole collection's statistics, whatever its segments). The engine's hit order and text_match_info
 * must be exactly that.
 *
 * The vocabulary's words are at least four edits apart, but for a few that extend others
 * by two letters: with prefix matching on, the last word, whole, cut short or with a typo,
 * then also stands for completions, often in the same documents as the whole word. Some
 * document words are two words glued by a hyphen, found whole and by their parts (parts of
 * one word may stand for adjacent query words). max_candidates is large, so every
 * candidate counts.
 */
import { describe, expect, it } from 'vitest';
import { dataDirPath, openEngine, rng } from './helpers.js';
import { editDistance, prefixDistance } from './edit-distance.js';
import { bm25, rarityTie } from '../src/search/score.js';

const FIELDS = ['title', 'body'] as const;

function vocabulary(r: () => number, n: number): string[] {
  const out: string[] = [];
  while (out.length < n) {
    const w = Array.from({ length: 6 }, () => String.fromCharCode(97 + Math.floor(r() * 26))).join('');
    if (out.every((o) => editDistance(o, w) >= 4)) out.push(w);
  }
  return out;
}

/** A document word: a word of the vocabulary, or two glued by a hyphen (`a-b`: the word `ab` with the parts `a`, `b`). */
type Word = string | [string, string];

interface Doc {
  id: string;
  title: Word[];
  body: Word[];
}

const token = (w: Word) => (typeof w === 'string' ? w : w[0] + w[1]);
const text = (w: Word) => (typeof w === 'string' ? w : `${w[0]}-${w[1]}`);

/**
 * The smallest span (last - first word position) holding one occurrence of each query
 * word, each on its own document word, but for parts of glued words (several parts of one
 * word may stand for several query words); Infinity when they cannot. Occurrences are
 * [position, is a part].
 */
function minSpan(positions: Array<Array<[number, boolean]>>): number {
  let best = Infinity;
  const walk = (i: number, lo: number, hi: number, used: number[]) => {
    if (hi - lo >= best) return;
    if (i === positions.length) {
      best = hi - lo;
      return;
    }
    for (const [p, part] of positions[i]!) {
      if (!part && used.includes(p)) continue;
      walk(i + 1, Math.min(lo, p), Math.max(hi, p), part ? used : [...used, p]);
    }
  };
  walk(0, Infinity, -Infinity, []);
  return best;
}

interface Expected {
  id: string;
  seq: number;
  score: number;
  /** The rarity tie-break: after text_match, before newest first; never reported. */
  tie: number;
  info: Record<string, unknown>;
}

/** Typos allowed for a query word, under the defaults min_len_1typo 4, min_len_2typo 7 and num_typos 1. */
const allowed = (w: string) => (w.length >= 4 ? 1 : 0);

/**
 * A query word's candidates and their costs, as the typo rounds find them: the word itself
 * (and, as the last word with prefix, the words it starts) when there are any, else the
 * words within its typos: 2 per typo, 1 more for a completion (a word only a prefix of
 * which is that close); parts of glued words alike. Keys: `w:term` for words, `p:term`
 * for parts.
 */
function candidates(dict: string[], parts: string[], q: string, prefix: boolean): Map<string, number> {
  const out = new Map<string, number>();
  const kinds = [
    ['w', dict, 0],
    ['p', parts, 0],
  ] as const;
  for (const [kind, terms, extra] of kinds) {
    for (const w of terms) if (w === q || (prefix && w.startsWith(q))) out.set(`${kind}:${w}`, (w === q ? 0 : 1) + extra);
  }
  if (out.size > 0) return out;
  const max = allowed(q);
  for (const [kind, terms, extra] of kinds) {
    for (const w of terms) {
      const whole = editDistance(q, w);
      const p = prefix ? prefixDistance(q, w) : whole;
      if (p <= max) out.set(`${kind}:${w}`, 2 * p + (whole > p ? 1 : 0) + extra);
    }
  }
  return out;
}

/** A field's occurrences, [candidate key, position, is a part]: its words, and the parts of its glued words. */
function occurrences(words: Word[]): Array<[string, number, boolean]> {
  const out: Array<[string, number, boolean]> = words.map((w, i) => [`w:${token(w)}`, i, false]);
  words.forEach((w, i) => {
    if (typeof w !== 'string') for (const p of w) out.push([`p:${p}`, i, true]);
  });
  return out;
}

/** The reference ranker: documents holding a candidate of every word, each with its text_match score and info. */
function rank(docs: Doc[], cands: Map<string, number>[], weights: number[], prioritizeExact: boolean, qTokens: string[]): Expected[] {
  const out: Expected[] = [];
  const T = cands.length;
  const occAll = docs.map((doc) => FIELDS.map((f) => occurrences(doc[f])));
  docs.forEach((doc, seq) => {
    const occ = occAll[seq]!;
    // per query word, the cheapest cost of its candidates in this document
    const costs = cands.map((c) => Math.min(...occ.flatMap((o) => o.map(([k]) => c.get(k) ?? Infinity))));
    if (costs.some((c) => c === Infinity)) return;
    // positions per field and word, of the cheapest candidates only
    const perField = occ.map((o) => cands.map((c, t) => o.filter(([k]) => c.get(k) === costs[t]).map(([, i, part]): [number, boolean] => [i, part])));
    const typoCost = costs.reduce((a, b) => a + b, 0);
    let fieldsMatched = 0;
    let best = [-1, 0, 0, 0, 0]; // count, prox, weight, exact, whole
    FIELDS.forEach((f, fi) => {
      const held = perField[fi]!.filter((ps) => ps.length > 0);
      if (held.length === 0) return;
      fieldsMatched++;
      const count = held.length;
      const prox = count > 1 ? 255 - Math.min(255, Math.max(0, minSpan(held) - (count - 1))) : 255;
      // every word it holds, held as a word of its own by a cheapest candidate (not only as a part)
      const whole = held.every((ps) => ps.some(([, part]) => !part)) ? 1 : 0;
      const exact = prioritizeExact && whole && count === T && typoCost === 0 && doc[f].length === T && qTokens.every((w, i) => token(doc[f][i]!) === w) ? 1 : 0;
      const cand = [count, prox, weights[fi]!, exact, whole];
      for (let k = 0; k < 5; k++) {
        if (cand[k]! === best[k]!) continue;
        if (cand[k]! > best[k]!) best = cand;
        break;
      }
    });
    const [, prox, weight, exact, whole] = best as [number, number, number, number, number];
    const bestFieldScore = (255 - typoCost) * 2 ** 36 + prox * 2 ** 28 + weight * 2 ** 20 + exact * 2 ** 19 + whole * 2 ** 18;
    // the rarity tie-break (two words or more): per word, the best BM25 weight of its
    // cheapest candidates in this document, with the statistics of the whole collection
    let tie = 0;
    if (T > 1) {
      const seg = docs.map((_, x) => x);
      let sum = 0;
      cands.forEach((c, t) => {
        let bestW = 0;
        FIELDS.forEach((f, fi) => {
          const avg = seg.reduce((a, x) => a + docs[x]![f].length, 0) / seg.length;
          for (const k of new Set(occ[fi]!.map(([key]) => key))) {
            if (c.get(k) !== costs[t]) continue;
            const df = seg.filter((x) => occAll[x]![fi]!.some(([key]) => key === k)).length;
            const tf = occ[fi]!.filter(([key]) => key === k).length;
            bestW = Math.max(bestW, bm25(df, seg.length, tf, doc[f].length, avg));
          }
        });
        sum += bestW;
      });
      tie = rarityTie(sum, T, seg.length);
    }
    const score = T * 2 ** 44 + bestFieldScore + fieldsMatched * 2 ** 13;
    out.push({
      id: doc.id,
      seq,
      score,
      tie,
      info: {
        best_field_score: String(bestFieldScore),
        best_field_weight: weight,
        fields_matched: fieldsMatched,
        num_tokens_dropped: 0,
        score: String(score),
        tokens_matched: T,
        typo_prefix_score: typoCost,
      },
    });
  });
  // text_match, the rarity tie-break, then newest first
  return out.sort((a, b) => b.score - a.score || b.tie - a.tie || b.seq - a.seq);
}

describe('ranking against a reference ranker', () => {
  it('orders hits and reports text_match_info exactly as tokens, candidate costs, proximity, field weight and exactness say', async () => {
    const r = rng(11);
    // and four words that extend others by two letters: a query for the shorter one also
    // finds the longer as a completion, the same document often holding both
    const base = vocabulary(r, 14);
    const vocab = [...base, ...base.slice(0, 4).map((w) => w + String.fromCharCode(97 + Math.floor(r() * 26), 97 + Math.floor(r() * 26)))];
    // and four pairs of words glued by a hyphen, found by their parts too
    const glued = Array.from({ length: 4 }, (_, k): [string, string] => [base[k + 2]!, base[(k * 5 + 7) % base.length]!]);
    const pick = (): Word => (r() < 0.15 ? glued[Math.floor(r() * glued.length)]! : vocab[Math.floor(r() * vocab.length)]!);
    const docs: Doc[] = Array.from({ length: 180 }, (_, i) => ({
      id: `d${i}`,
      title: Array.from({ length: 1 + Math.floor(r() * 3) }, pick),
      body: Array.from({ length: 2 + Math.floor(r() * 10) }, pick),
    }));
    const e = openEngine(dataDirPath(), { merges: 'off' });
    await e.createCollection({ name: 'docs', fields: FIELDS.map((name) => ({ name, type: 'string' })) });
    // three segments
    const SEG = 60;
    for (let i = 0; i < docs.length; i += SEG) {
      await e.writeBatch(
        'docs',
        docs.slice(i, i + SEG).map((d) => ({ kind: 'write' as const, action: 'create' as const, doc: { id: d.id, title: d.title.map(text).join(' '), body: d.body.map(text).join(' ') } })),
      );
    }
    // the dictionaries: every document word (a glued one as one word), and the parts
    const dict = [...new Set(docs.flatMap((d) => [...d.title, ...d.body].map(token)))];
    const partDict = [...new Set(glued.flat())];

    let checked = 0;
    let completions = 0;
    let parts = 0;
    for (let i = 0; i < 200; i++) {
      // words of one document (a glued one whole, or one of its parts), so that something matches and no word is dropped
      const from = docs[Math.floor(r() * docs.length)]!;
      const all = [...new Set([...from.title, ...from.body].map((w) => (typeof w === 'string' ? w : r() < 0.4 ? text(w) : w[Math.floor(r() * 2)]!)))];
      const T = Math.min(all.length, 1 + Math.floor(r() * 3));
      const words = all.sort(() => r() - 0.5).slice(0, T);
      const prefix = r() < 0.5;
      const qs = words.map((w, t) => {
        const u = r();
        // the last word cut short (a completion) or with a typo (one whole word, and maybe completions of others)
        if (prefix && t === T - 1 && u < 0.4) return w.slice(0, 2 + Math.floor(r() * 4));
        return u < 0.7 ? w : w.slice(0, 2) + (w[2] === 'q' ? 'z' : 'q') + w.slice(3);
      });
      const qTokens = qs.map((q) => q.replace('-', ''));
      const cands = qTokens.map((q, t) => candidates(dict, partDict, q, prefix && t === T - 1));
      if ([...cands.at(-1)!.entries()].some(([k, c]) => k.startsWith('w:') && c % 2 === 1)) completions++;
      if (cands.some((c) => [...c.keys()].some((k) => k.startsWith('p:')))) parts++;
      const weights = r() < 0.5 ? [100, 99] : [Math.floor(r() * 5), Math.floor(r() * 5)];
      const prioritizeExact = r() < 0.8;
      const res = e.searchSync('docs', {
        q: qs.join(' '),
        query_by: 'title,body',
        query_by_weights: weights.join(','),
        prefix: String(prefix),
        num_typos: '1',
        max_candidates: '100',
        prioritize_exact_match: String(prioritizeExact),
        per_page: '250',
      });
      const want = rank(docs, cands, weights, prioritizeExact, qTokens);
      expect(res.found, qs.join(' ')).toBe(want.length);
      const got = res.hits!.map((h) => ({ id: h.document.id, score: h.text_match, info: h.text_match_info }));
      expect(got, qs.join(' ')).toEqual(want.map((w) => ({ id: w.id, score: w.score, info: w.info })));
      checked += want.length;
    }
    expect(checked).toBeGreaterThan(500);
    expect(completions).toBeGreaterThan(15);
    expect(parts).toBeGreaterThan(30);
    await e.close();
  });
});
