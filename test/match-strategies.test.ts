/**
 * The three match strategies (search/match.ts) must agree: on the same candidates, filters
 * and segments, one-token (term-at-a-time for one token), term-at-a-time and
 * document-at-a-time each find the same documents with the same scores.
 */
import { describe, expect, it } from 'vitest';
import { dataDirPath, openEngine, rng } from './helpers.js';
import { snapshot } from '../src/index/manifest.js';
import { parseSearchParams } from '../src/query/params.js';
import { planSearch } from '../src/query/plan.js';
import { CandidateRounds } from '../src/search/candidates.js';
import { matchSegment, type MatchStrategy } from '../src/search/match.js';

// (and words glued by punctuation, which are also found by their parts)
const WORDS = ['alpha', 'alpine', 'alps', 'beta', 'better', 'bet', 'gamma', 'gammon', 'delta', 'deltas', 'omega', 'omen', 'linux', 'lynx', 'links', 'kernel', 'kernels', 'colonel', 'a', 'an', 'alpha-beta', 'linux/kernel', 'omen-a'];

function text(r: () => number, n: number): string {
  return Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]!).join(' ');
}

describe('match strategies', () => {
  it('find the same documents with the same scores, whichever strategy is forced', async () => {
    const r = rng(7);
    const e = openEngine(dataDirPath(), { merges: 'off' });
    await e.createCollection({
      name: 'docs',
      fields: [
        { name: 'title', type: 'string' },
        { name: 'body', type: 'string' },
        { name: 'tags', type: 'string[]' },
        { name: 'n', type: 'int32' },
      ],
    });
    // several segments (one per batch), some documents deleted or replaced
    let id = 0;
    for (let batch = 0; batch < 4; batch++) {
      const ops = Array.from({ length: 60 }, () => ({
        kind: 'write' as const,
        action: 'upsert' as const,
        doc: {
          id: String(id++ % 200),
          title: text(r, 1 + Math.floor(r() * 3)),
          body: text(r, 3 + Math.floor(r() * 12)),
          tags: Array.from({ length: Math.floor(r() * 3) }, () => text(r, 1 + Math.floor(r() * 2))),
          n: Math.floor(r() * 10),
        },
      }));
      await e.writeBatch('docs', ops);
    }
    await e.deleteDocument('docs', '3');
    const snap = snapshot(e.store, (e.store.collections.get('docs') as { id: number }).id);
    expect(snap.segments.length).toBeGreaterThan(1);

    let compared = 0;
    for (let i = 0; i < 150; i++) {
      const T = 1 + Math.floor(r() * 3);
      const q = Array.from({ length: T }, () => {
        const w = WORDS[Math.floor(r() * WORDS.length)]!;
        return r() < 0.3 && w.length > 4 ? w.slice(0, 2) + 'x' + w.slice(3) : w;
      }).join(' ');
      const raw: Record<string, string> = { q, query_by: r() < 0.5 ? 'title,body,tags' : 'body,tags', prefix: r() < 0.5 ? 'true' : 'false' };
      if (r() < 0.3) raw.prioritize_exact_match = 'false';
      if (r() < 0.3) raw.query_by_weights = r() < 0.5 ? '1,5,5' : '3,3,1';
      if (raw.query_by_weights && raw.query_by === 'body,tags') raw.query_by_weights = '2,2';
      const plan = planSearch(e.store, 'docs', parseSearchParams(raw));
      const tokens = plan.words.tokens.map((_, t) => t);
      if (tokens.length === 0) continue;
      const candidates = new CandidateRounds(plan, snap.segments, snap.segments.map(() => null)).at(plan.words.maxTypos, 'all');
      const allow = r() < 0.3 ? snap.segments.map((s) => Uint8Array.from({ length: s.reader.n }, () => (r() < 0.7 ? 1 : 0))) : null;
      const run = (strategy: MatchStrategy) => {
        const out: string[] = [];
        snap.segments.forEach((seg, s) => {
          matchSegment(
            seg,
            { fields: plan.fields, tokens, totalTokens: tokens.length, candidates, phrases: [], prioritizeExact: plan.params.prioritize_exact_match, dropped: 0, strategy },
            { allow: allow ? allow[s]! : null, exclude: null, seen: null },
            (ord, score) => out.push(`${s}:${ord}:${score}`),
            () => false,
          );
        });
        return out.sort();
      };
      const daat = run('daat');
      expect(run('taat'), q).toEqual(daat);
      if (tokens.length === 1) expect(run('one-token'), q).toEqual(daat);
      if (daat.length > 0) compared++;
    }
    expect(compared).toBeGreaterThan(60);
    await e.close();
  });
});
