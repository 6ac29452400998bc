/**
 * The ranking against a reference ranker written in plain code. For random documents and
 * queries, the reference finds each query word's candidate terms by brute force over the
 * vocabulary, the documents holding a candidate of every word, and per document what
 * text_match orders by: tokens matched, the cost of its cheapest candidates (2 per typo,
 * 1 more for a completion), the proximity of those candidates in the best field, that
 * field's weight, whether the field is exactly the query, and the fields matched (each
 * word crediting only the fields of its cheapest candidates in the document). The engine's
 * hit order and text_match_info must be exactly that.
 *
 * The vocabulary's words are at least four edits apart, but for a few that extend others
 * by two letters: with prefix matching on, the last word, whole, cut short or with a typo,
 * then also stands for completions, often in the same documents as the whole word.
 * max_candidates is large, so every candidate counts.
 */
import { describe, expect, it } from 'vitest';
import { dataDirPath, openEngine, rng } from './helpers.js';
import { editDistance, prefixDistance } from './edit-distance.js';

const FIELDS = ['title', 'body'] as const;

function vocabulary(r: () => number, n: number): string[] {
  const out: string[] = [];
  while (out.length < n) {
    const w = Array.from({ length: 6 }, () => String.fromCharCode(97 + Math.floor(r() * 26))).join('');
    if (out.every((o) => editDistance(o, w) >= 4)) out.push(w);
  }
  return out;
}

interface Doc {
  id: string;
  title: string[];
  body: string[];
}

/**
 * The smallest span (last - first position) holding one occurrence of each word, each at
 * its own position (one document word stands for one query word); Infinity when they
 * cannot be.
 */
function minSpan(positions: number[][]): number {
  let best = Infinity;
  const walk = (i: number, lo: number, hi: number, used: number[]) => {
    if (hi - lo >= best) return;
    if (i === positions.length) {
      best = hi - lo;
      return;
    }
    for (const p of positions[i]!) if (!used.includes(p)) walk(i + 1, Math.min(lo, p), Math.max(hi, p), [...used, p]);
  };
  walk(0, Infinity, -Infinity, []);
  return best;
}

interface Expected {
  id: string;
  seq: number;
  score: number;
  info: Record<string, unknown>;
}

/** Typos allowed for a query word, under the defaults min_len_1typo 4, min_len_2typo 7 and num_typos 1. */
const allowed = (w: string) => (w.length >= 4 ? 1 : 0);

/**
 * A query word's candidates and their costs, as the typo rounds find them: the word itself
 * (and, as the last word with prefix, the words it starts) when there are any, else the
 * words within its typos: 2 per typo, 1 more for a completion (a word only a prefix of
 * which is that close).
 */
function candidates(vocab: string[], q: string, prefix: boolean): Map<string, number> {
  const out = new Map<string, number>();
  for (const w of vocab) if (w === q || (prefix && w.startsWith(q))) out.set(w, w === q ? 0 : 1);
  if (out.size > 0) return out;
  const max = allowed(q);
  for (const w of vocab) {
    const whole = editDistance(q, w);
    const p = prefix ? prefixDistance(q, w) : whole;
    if (p <= max) out.set(w, 2 * p + (whole > p ? 1 : 0));
  }
  return out;
}

/** The reference ranker: documents holding a candidate of every word, each with its text_match score and info. */
function rank(docs: Doc[], cands: Map<string, number>[], weights: number[], prioritizeExact: boolean, words: string[]): Expected[] {
  const out: Expected[] = [];
  const T = cands.length;
  docs.forEach((doc, seq) => {
    // per word, the cheapest cost of its candidates in this document
    const costs = cands.map((c) => Math.min(...FIELDS.flatMap((f) => doc[f].map((x) => c.get(x) ?? Infinity))));
    if (costs.some((c) => c === Infinity)) return;
    // positions per field and word, of the cheapest candidates only
    const perField = FIELDS.map((f) => cands.map((c, t) => doc[f].flatMap((x, i) => (c.get(x) === costs[t] ? [i] : []))));
    const typoCost = costs.reduce((a, b) => a + b, 0);
    let fieldsMatched = 0;
    let best: [number, number, number, number] = [-1, 0, 0, 0]; // count, prox, weight, exact
    FIELDS.forEach((f, fi) => {
      const held = perField[fi]!.filter((ps) => ps.length > 0);
      if (held.length === 0) return;
      fieldsMatched++;
      const count = held.length;
      const prox = count > 1 ? 255 - Math.min(255, minSpan(held) - (count - 1)) : 255;
      const exact = prioritizeExact && count === T && typoCost === 0 && doc[f].length === T && words.every((w, i) => doc[f][i] === w) ? 1 : 0;
      const cand: [number, number, number, number] = [count, prox, weights[fi]!, exact];
      for (let k = 0; k < 4; k++) {
        if (cand[k]! === best[k]!) continue;
        if (cand[k]! > best[k]!) best = cand;
        break;
      }
    });
    const [, prox, weight, exact] = best;
    const bestFieldScore = (255 - typoCost) * 2 ** 36 + prox * 2 ** 28 + weight * 2 ** 20 + exact * 2 ** 19;
    const score = T * 2 ** 44 + bestFieldScore + fieldsMatched * 2 ** 13;
    out.push({
      id: doc.id,
      seq,
      score,
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
  // text_match, then newest first
  return out.sort((a, b) => b.score - a.score || b.seq - a.seq);
}

describe('ranking against a reference ranker', () => {
  it('orders hits and reports text_match_info exactly as tokens, candidate costs, proximity, field weight and exactness say', async () => {
    const r = rng(11);
    // and four words that extend others by two letters: a query for the shorter one also
    // finds the longer as a completion, the same document often holding both
    const base = vocabulary(r, 14);
    const vocab = [...base, ...base.slice(0, 4).map((w) => w + String.fromCharCode(97 + Math.floor(r() * 26), 97 + Math.floor(r() * 26)))];
    const pick = () => vocab[Math.floor(r() * vocab.length)]!;
    const docs: Doc[] = Array.from({ length: 180 }, (_, i) => ({
      id: `d${i}`,
      title: Array.from({ length: 1 + Math.floor(r() * 3) }, pick),
      body: Array.from({ length: 2 + Math.floor(r() * 10) }, pick),
    }));
    const e = openEngine(dataDirPath(), { merges: 'off' });
    await e.createCollection({ name: 'docs', fields: FIELDS.map((name) => ({ name, type: 'string' })) });
    // three segments
    for (let i = 0; i < docs.length; i += 60) {
      await e.writeBatch(
        'docs',
        docs.slice(i, i + 60).map((d) => ({ kind: 'write' as const, action: 'create' as const, doc: { id: d.id, title: d.title.join(' '), body: d.body.join(' ') } })),
      );
    }

    let checked = 0;
    let completions = 0;
    for (let i = 0; i < 160; i++) {
      // words of one document, so that something matches and no word is dropped
      const from = docs[Math.floor(r() * docs.length)]!;
      const all = [...new Set([...from.title, ...from.body])];
      const T = Math.min(all.length, 1 + Math.floor(r() * 3));
      const words = all.sort(() => r() - 0.5).slice(0, T);
      const prefix = r() < 0.5;
      const qs = words.map((w, t) => {
        const u = r();
        // the last word cut short (a completion) or with a typo (one whole word, and maybe completions of others)
        if (prefix && t === T - 1 && u < 0.4) return w.slice(0, 2 + Math.floor(r() * 4));
        return u < 0.7 ? w : w.slice(0, 2) + (w[2] === 'q' ? 'z' : 'q') + w.slice(3);
      });
      const cands = qs.map((q, t) => candidates(vocab, q, prefix && t === T - 1));
      if ([...cands.at(-1)!.values()].some((c) => c % 2 === 1)) completions++;
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
      const want = rank(docs, cands, weights, prioritizeExact, qs);
      expect(res.found, qs.join(' ')).toBe(want.length);
      const got = res.hits!.map((h) => ({ id: h.document.id, score: h.text_match, info: h.text_match_info }));
      expect(got, qs.join(' ')).toEqual(want.map((w) => ({ id: w.id, score: w.score, info: w.info })));
      checked += want.length;
    }
    expect(checked).toBeGreaterThan(500);
    expect(completions).toBeGreaterThan(15);
    await e.close();
  });
});
