/**
 * Stopword sets: named lists of words removed from queries (never from the index) when a
 * search names the set with `stopwords=<name>`. Phrases are split into words with the
 * set's locale and stored lower-cased.
 */
import { FathomError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { write, type Store } from '../storage/store.js';
import { tokenizerFor } from '../tokenizer/tokenizer.js';

/** A set as stored and answered: the reference's shape, `{id, stopwords, locale}`. */
export interface StopwordSet {
  /** The set's name. */
  id: string;
  stopwords: string[];
  locale?: string;
}

const NAME_RE = /^[^\s/?#%]{1,256}$/;

export function validateStopwordSet(name: string, body: unknown): StopwordSet {
  if (!NAME_RE.test(name)) throw new FathomError('BAD_PARAMETER', `stopword set name \`${name}\` must be 1-256 characters without whitespace, '/', '?', '#' or '%'`);
  if (!isPlainObject(body)) throw new FathomError('BAD_REQUEST', 'the stopword set must be a JSON object with `stopwords`');
  const words = body.stopwords;
  if (!Array.isArray(words) || !words.every((w) => typeof w === 'string')) {
    throw new FathomError('BAD_REQUEST', '`stopwords` must be an array of strings');
  }
  const locale = body.locale;
  if (locale !== undefined && typeof locale !== 'string') throw new FathomError('BAD_REQUEST', '`locale` must be a string');
  const tok = tokenizerFor({ locale: locale ?? '' });
  const out: string[] = [];
  const seen = new Set<string>();
  for (const phrase of words) {
    for (const w of tok.tokens(phrase)) {
      if (!seen.has(w)) {
        seen.add(w);
        out.push(w);
      }
    }
  }
  return { id: name, stopwords: out, ...(locale ? { locale } : {}) };
}

export async function putStopwords(store: Store, name: string, body: unknown): Promise<StopwordSet> {
  const set = validateStopwordSet(name, body);
  await write(store, () => store.stopwords.put(name, set));
  return set;
}

/** A stored set as answered (sets stored with a `name` beside their id answer without it). */
function shown(set: StopwordSet): StopwordSet {
  const { id, stopwords, locale } = set;
  return { id, stopwords, ...(locale ? { locale } : {}) };
}

export function getStopwords(store: Store, name: string): StopwordSet {
  const set = store.stopwords.get(name) as StopwordSet | undefined;
  if (!set) throw new FathomError('NOT_FOUND', `stopword set \`${name}\` not found`);
  return shown(set);
}

export function listStopwords(store: Store): StopwordSet[] {
  return [...store.stopwords.getRange({})].map(({ value }) => shown(value as StopwordSet));
}

export async function deleteStopwords(store: Store, name: string): Promise<{ id: string }> {
  return write(store, () => {
    if (store.stopwords.get(name) === undefined) throw new FathomError('NOT_FOUND', `stopword set \`${name}\` not found`);
    store.stopwords.remove(name);
    return { id: name };
  });
}
