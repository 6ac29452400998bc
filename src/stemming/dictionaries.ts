/**
 * Stemming dictionaries: named word -> root lists (`{"word": "people", "root": "person"}`
 * lines), imported through `POST /stemming/dictionaries/import?id=<name>`. A text field
 * with `"stem_dictionary": "<name>"` indexes and searches a word the dictionary lists as
 * its root, before (and instead of) the Snowball stemmer that `stem: true` adds.
 *
 * Storage: aux ['stemdict', name] -> {id, words: [[word, root], ...]}, and
 * meta 'stemdict_version', bumped by every change, which the compiled schemas of
 * collections that use a dictionary are keyed by (catalog.ts compile), so a change is seen
 * by the next search and write of every process. Words and roots are kept as the
 * tokenizer makes them (lower case, folded), so that they meet the tokens they stand for.
 *
 * An import replaces or extends a dictionary in one transaction: a line that is not a
 * {word, root} object fails the whole import with 400 naming the line, and nothing is
 * written. Documents already indexed keep the roots they were indexed with (the
 * reference does the same); re-import them to apply a changed dictionary.
 */
import { FathomError } from '../errors.js';
import { isPlainObject, parseJson } from '../json.js';
import { write, type Store } from '../storage/store.js';
import { tokenizerFor } from '../tokenizer/tokenizer.js';

export interface StemmingDictionary {
  id: string;
  words: Array<{ word: string; root: string }>;
}

interface Stored {
  id: string;
  words: Array<[string, string]>;
}

const NAME_RE = /^[^\s/?#%]{1,256}$/;
const KEY = (id: string) => ['stemdict', id];

function checkName(id: string | undefined): string {
  if (id === undefined || id === '') throw new FathomError('BAD_PARAMETER', 'parameter `id` (the dictionary\'s name) is required');
  if (!NAME_RE.test(id)) throw new FathomError('BAD_PARAMETER', `stemming dictionary name \`${id}\` must be 1-256 characters without whitespace, '/', '?', '#' or '%'`);
  return id;
}

/** One word as the tokenizer makes it (lower case, folded); it must stay one token. */
function normal(s: string): string | undefined {
  const toks = tokenizerFor({}).tokens(s);
  return toks.length === 1 ? toks[0] : undefined;
}

/** Reads an import body (JSON Lines) into word -> root pairs; throws on the first bad line. */
export function parseDictionaryLines(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    let v: unknown;
    try {
      v = parseJson(line);
    } catch {
      throw new FathomError('BAD_REQUEST', `line ${i + 1} is not JSON: each line must be {"word": ..., "root": ...}`);
    }
    if (!isPlainObject(v) || typeof v.word !== 'string' || typeof v.root !== 'string') {
      throw new FathomError('BAD_REQUEST', `line ${i + 1} must be an object with string \`word\` and \`root\``);
    }
    const word = normal(v.word);
    const root = normal(v.root);
    if (word === undefined || root === undefined) throw new FathomError('BAD_REQUEST', `line ${i + 1}: \`word\` and \`root\` must each be one word`);
    out.push([word, root]);
  }
  if (out.length === 0) throw new FathomError('BAD_REQUEST', 'the import holds no {"word", "root"} lines');
  return out;
}

/** Adds (or replaces) the words of dictionary `id`; answers the pairs imported. */
export async function importDictionary(store: Store, id: string | undefined, words: Array<[string, string]>): Promise<Array<{ word: string; root: string }>> {
  const name = checkName(id);
  await write(store, () => {
    const cur = store.aux.get(KEY(name)) as Stored | undefined;
    const map = new Map(cur?.words ?? []);
    for (const [w, r] of words) map.set(w, r);
    store.aux.put(KEY(name), { id: name, words: [...map] } satisfies Stored);
    store.meta.put('stemdict_version', ((store.meta.get('stemdict_version') as number | undefined) ?? 0) + 1);
  });
  return words.map(([word, root]) => ({ word, root }));
}

export function getDictionary(store: Store, id: string): StemmingDictionary {
  const d = store.aux.get(KEY(id)) as Stored | undefined;
  if (!d) throw new FathomError('NOT_FOUND', `stemming dictionary \`${id}\` not found`);
  return { id: d.id, words: d.words.map(([word, root]) => ({ word, root })) };
}

export function listDictionaries(store: Store): { dictionaries: string[] } {
  const out: string[] = [];
  for (const { value } of store.aux.getRange({ start: ['stemdict'], end: ['stemdict', '\uffff'] })) out.push((value as Stored).id);
  return { dictionaries: out };
}

export async function deleteDictionary(store: Store, id: string): Promise<{ id: string }> {
  return write(store, () => {
    if (store.aux.get(KEY(id)) === undefined) throw new FathomError('NOT_FOUND', `stemming dictionary \`${id}\` not found`);
    store.aux.remove(KEY(id));
    store.meta.put('stemdict_version', ((store.meta.get('stemdict_version') as number | undefined) ?? 0) + 1);
    return { id };
  });
}

/** The current version of all dictionaries (0 before any), for cache keys. */
export function dictionariesVersion(store: Store): number {
  return (store.meta.get('stemdict_version') as number | undefined) ?? 0;
}

/** A dictionary's word -> root map, or an empty map when it does not exist (yet). */
export function dictionaryMap(store: Store, id: string): Map<string, string> {
  const d = store.aux.get(KEY(id)) as Stored | undefined;
  return new Map(d?.words ?? []);
}
