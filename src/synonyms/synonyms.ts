/**
 * src/synonyms/synonyms.ts: here is a query's words, which other words may it be searched with?
 *
 * A synonym item is multi-way (`synonyms: [a, b, c]`: each stands for every other) or one-way
 * (`root: r, synonyms: [a, b]`: r stands for a and b, not the reverse). Each entry is a word
 * or a phrase ("smart phone"), tokenized as queries are (the collection's separators and
 * symbols, plus the item's `symbols_to_index`). An item with a `locale` applies only to
 * queries on fields of that locale; one without applies to all.
 *
 * Items live in src/rulesets (a collection's own, or named sets it links); a search uses its
 * collection's own items, its linked sets and the sets the request names (`synonym_sets`).
 * Expansion (`expandSynonyms`) finds every span of the query that a rule's words match
 * (exactly; with `synonym_num_typos`, within that many typos per word; with
 * `synonym_prefix`, the query's last word may be a prefix of the rule's last word). A word
 * that stands for one word ("coat" -> "jacket") becomes an alternative of that query word:
 * the search looks it up beside the word, as written, in the same pass (query/plan.ts
 * QueryWords.synonyms, search/candidates.ts), so any number of them cost one search. A
 * replacement with another number of words ("smart phone" -> "iphone") makes a variant of
 * the query, one per replacement and per combination of replacements that do not overlap,
 * fewest first, at most RULE_LIMITS.maxSynonymVariants; each variant is a search of its own
 * (src/synonyms/variants.ts). The words of a quoted phrase are never replaced.
 */
import { RULE_LIMITS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject } from '../json.js';
import type { Store } from '../storage/store.js';
import type { CollectionRecord } from '../schema/schema.js';
import { tokenizerFor } from '../tokenizer/tokenizer.js';
import { CompiledCache, findSet, listOwnItems, type KindSpec, type RuleItem } from '../rulesets/rulesets.js';

export interface SynonymItem extends RuleItem {
  synonyms: string[];
  root?: string;
  locale?: string;
  symbols_to_index?: string[];
}

const FIELDS = ['id', 'synonyms', 'root', 'locale', 'symbols_to_index'];

function bad(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

function symbolList(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((c) => typeof c === 'string' && [...c].length === 1 && !/\s/.test(c))) {
    bad('`symbols_to_index` must be an array of single characters (not whitespace)');
  }
  return v as string[];
}

/** Checks a synonym item (the body of PUT .../synonyms/:id, or one item of a synonym set). */
export function validateSynonym(id: string, body: unknown): SynonymItem {
  if (!isPlainObject(body)) bad('a synonym must be a JSON object with `synonyms`');
  for (const k of Object.keys(body)) {
    if (!FIELDS.includes(k)) bad(`unknown synonym attribute \`${k}\`; a synonym has ${FIELDS.map((f) => `\`${f}\``).join(', ')}`);
  }
  const list = body.synonyms;
  if (!Array.isArray(list) || list.length === 0) bad('`synonyms` must be a non-empty array of words or phrases');
  if (list.length > RULE_LIMITS.maxSynonyms) bad(`\`synonyms\` holds at most ${RULE_LIMITS.maxSynonyms} words or phrases, got ${list.length}`);
  const root = body.root === '' || body.root === null ? undefined : body.root;
  if (root !== undefined && typeof root !== 'string') bad('`root` must be a string: the word or phrase the synonyms stand for');
  const locale = body.locale === '' || body.locale === null ? undefined : body.locale;
  if (locale !== undefined && typeof locale !== 'string') bad('`locale` must be a language code such as `en` or `fr`');
  const symbols = symbolList(body.symbols_to_index);
  const tok = tokenizerFor({ locale: locale ?? '', symbols: symbols ?? [] });
  const check = (text: unknown, where: string): void => {
    if (typeof text !== 'string' || text.trim() === '') bad(`${where} must be a non-empty string`);
    const n = tok.tokens(text).length;
    if (n === 0) bad(`${where} (${JSON.stringify(text)}) has no word that can be searched`);
    if (n > RULE_LIMITS.maxSynonymWords) bad(`${where} has ${n} words; a synonym phrase has at most ${RULE_LIMITS.maxSynonymWords}`);
  };
  list.forEach((w, i) => check(w, `synonyms[${i}]`));
  if (root !== undefined) check(root, '`root`');
  else if (list.length < 2) {
    bad('a multi-way synonym needs at least two words or phrases in `synonyms` (for a one-way synonym, give the word they stand for as `root`)');
  }
  return {
    id,
    synonyms: (list as string[]).slice(),
    ...(root !== undefined ? { root } : {}),
    ...(locale !== undefined ? { locale } : {}),
    ...(symbols ? { symbols_to_index: symbols } : {}),
  };
}

export const SYNONYMS: KindSpec<SynonymItem> = {
  kind: 'synonym',
  ownArea: 'synonyms',
  setArea: 'synonym_sets',
  noun: 'synonym',
  setNoun: 'synonym set',
  setFields: [],
  validate: (_store, id, body) => validateSynonym(id, body),
  // answered with `root: ""` for a multi-way synonym, as the reference answers it
  shown: (item) => ({ ...item, root: item.root ?? '' }),
};

// ---------------------------------------------------------------------------
// Compiled rules and expansion
// ---------------------------------------------------------------------------

/** Words that stand for other words: `from` (a query span) may be replaced by any of `to`. */
export interface SynonymRule {
  from: string[];
  to: string[][];
}

export interface CompiledSynonyms {
  /** Rules by the first word of `from` (exact matching). */
  byFirst: Map<string, SynonymRule[]>;
  all: SynonymRule[];
}

const EMPTY: CompiledSynonyms = { byFirst: new Map(), all: [] };

function compile(items: readonly SynonymItem[], record: CollectionRecord, locale: string): CompiledSynonyms {
  const out: CompiledSynonyms = { byFirst: new Map(), all: [] };
  const add = (from: string[], to: string[][]) => {
    const others = to.filter((t) => t.join(' ') !== from.join(' '));
    if (from.length === 0 || others.length === 0) return;
    const rule = { from, to: others };
    out.all.push(rule);
    const list = out.byFirst.get(from[0]!);
    if (list) list.push(rule);
    else out.byFirst.set(from[0]!, [rule]);
  };
  for (const item of items) {
    // an item with a locale applies only to queries in that locale
    if (item.locale !== undefined && item.locale !== locale) continue;
    const tok = tokenizerFor({ locale, separators: record.token_separators, symbols: [...record.symbols_to_index, ...(item.symbols_to_index ?? [])] });
    const phrases = item.synonyms.map((s) => tok.tokens(s)).filter((t) => t.length > 0);
    if (item.root !== undefined) add(tok.tokens(item.root), phrases);
    else for (const p of phrases) add(p, phrases);
  }
  return out.all.length > 0 ? out : EMPTY;
}

const cache = new CompiledCache<CompiledSynonyms | null>();

/**
 * The compiled synonyms a search on `record` uses, for queries in `locale`: its own items,
 * the sets it links, and the sets the request names (unknown names: 404).
 */
export function synonymsFor(store: Store, record: CollectionRecord, locale: string, requested: readonly string[] = []): CompiledSynonyms[] {
  const units: CompiledSynonyms[] = [];
  const tk = `${record.id}\u0000${record.version}\u0000${locale}`;
  const own = cache.get(store, `own\u0000${tk}`, () => compile(listOwnItems(store, SYNONYMS, record), record, locale));
  if (own && own.all.length > 0) units.push(own);
  const names = new Set([...(record.synonym_sets ?? []), ...requested]);
  for (const name of names) {
    const unit = cache.get(store, `set\u0000${name}\u0000${tk}`, () => {
      const set = findSet(store, SYNONYMS, name);
      return set ? compile(set.items, record, locale) : null;
    });
    if (unit === null) {
      if (requested.includes(name)) throw new FathomError('NOT_FOUND', `synonym_sets: synonym set \`${name}\` not found`);
      continue; // a linked set deleted since: nothing to apply
    }
    if (unit.all.length > 0) units.push(unit);
  }
  return units;
}

/** How query words are compared with a rule's words. */
export interface MatchOptions {
  /** The query's last word may be a prefix of the rule's last word (synonym_prefix). */
  prefix: boolean;
  /** Typos allowed per word, for words long enough (synonym_num_typos, min_len_*typo). */
  typos: (word: string) => number;
}

/** A variant of the query: its words, and which of them a synonym put in. */
export interface SynonymVariant {
  tokens: string[];
  /** Indexes of the words a synonym put in (matched as written). */
  replaced: Set<number>;
  /** For each word, the index of the query word it is (-1: put in by a synonym). */
  origin: number[];
  /** Words of the query the replaced spans held, minus the words put in: what the variant's matches count extra. */
  extra: number;
}

/** Are two words within `max` edits (optimal string alignment distance: a swap of neighbours is one)? */
function withinTypos(a: string, b: string, max: number): boolean {
  if (a === b) return true;
  if (max === 0 || Math.abs(a.length - b.length) > max) return false;
  const m = a.length;
  const n = b.length;
  let prev2 = new Array<number>(n + 1).fill(0);
  let prev = Array.from({ length: n + 1 }, (_, j) => j);
  let cur = new Array<number>(n + 1).fill(0);
  for (let i = 1; i <= m; i++) {
    cur[0] = i;
    let best = i;
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, prev2[j - 2]! + 1);
      cur[j] = v;
      if (v < best) best = v;
    }
    if (best > max) return false;
    [prev2, prev, cur] = [prev, cur, prev2];
  }
  return prev[n]! <= max;
}

interface Edit {
  start: number;
  len: number;
  to: string[];
}

/** What synonyms make of a query's words. */
export interface Expansion {
  /** [word]: the single words that stand for it, looked up beside it. */
  alternatives: string[][];
  /** Variants with replacements of another number of words (the query itself not among them). */
  variants: SynonymVariant[];
}

/**
 * What the given synonyms make of a query's words. `fixed(i)`: word i is in a quoted phrase
 * and is never replaced.
 */
export function expandSynonyms(tokens: readonly string[], fixed: (i: number) => boolean, units: readonly CompiledSynonyms[], opts: MatchOptions, max: number = RULE_LIMITS.maxSynonymVariants): Expansion {
  const T = tokens.length;
  const alternatives: string[][] = tokens.map(() => []);
  if (T === 0 || units.length === 0) return { alternatives, variants: [] };
  const fuzzy = opts.prefix || tokens.some((t) => opts.typos(t) > 0);
  const edits: Edit[] = [];
  const wordMatches = (q: number, w: string, last: boolean): boolean => {
    const t = tokens[q]!;
    if (t === w) return true;
    if (opts.prefix && last && q === T - 1 && w.startsWith(t)) return true;
    return withinTypos(t, w, opts.typos(t));
  };
  for (let i = 0; i < T; i++) {
    if (fixed(i)) continue;
    for (const unit of units) {
      const rules = fuzzy ? unit.all : unit.byFirst.get(tokens[i]!);
      if (!rules) continue;
      for (const r of rules) {
        const n = r.from.length;
        if (i + n > T) continue;
        let ok = true;
        for (let k = 0; k < n && ok; k++) ok = !fixed(i + k) && wordMatches(i + k, r.from[k]!, k === n - 1);
        if (!ok) continue;
        const alt = alternatives[i]!;
        const add = (w: string) => {
          if (w !== tokens[i] && !alt.includes(w)) alt.push(w);
        };
        // a word matched with a typo or as a prefix: the rule's word is what was meant
        if (n === 1) add(r.from[0]!);
        for (const to of r.to) {
          // one word for one word: an alternative of the query word
          if (n === 1 && to.length === 1) add(to[0]!);
          else edits.push({ start: i, len: n, to });
        }
      }
    }
  }
  if (edits.length === 0 || max <= 0) return { alternatives, variants: [] };
  edits.sort((a, b) => a.start - b.start || a.len - b.len);
  const out: SynonymVariant[] = [];
  const seen = new Set<string>([tokens.join('\u0000')]);
  // combinations of non-overlapping edits, fewest first
  const chosen: Edit[] = [];
  const emit = () => {
    const words: string[] = [];
    const origin: number[] = [];
    const replaced = new Set<number>();
    let extra = 0;
    let pos = 0;
    const keepWord = (i: number) => {
      words.push(tokens[i]!);
      origin.push(i);
    };
    for (const e of chosen) {
      for (; pos < e.start; pos++) keepWord(pos);
      for (const w of e.to) {
        replaced.add(words.length);
        words.push(w);
        origin.push(-1);
      }
      extra += e.len - e.to.length;
      pos = e.start + e.len;
    }
    for (; pos < T; pos++) keepWord(pos);
    const key = words.join('\u0000');
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ tokens: words, replaced, origin, extra });
  };
  const choose = (from: number, left: number): void => {
    if (out.length >= max) return;
    if (left === 0) {
      emit();
      return;
    }
    const after = chosen.length ? chosen[chosen.length - 1]!.start + chosen[chosen.length - 1]!.len : 0;
    for (let k = from; k < edits.length && out.length < max; k++) {
      if (edits[k]!.start < after) continue;
      chosen.push(edits[k]!);
      choose(k + 1, left - 1);
      chosen.pop();
    }
  };
  for (let size = 1; size <= T && out.length < max; size++) {
    const before = out.length;
    choose(0, size);
    if (out.length === before && size > 1) break;
  }
  return { alternatives, variants: out };
}
