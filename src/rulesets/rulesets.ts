/**
 * src/rulesets/rulesets.ts: where synonyms and curation rules are kept.
 *
 * Both are items with an id, kept in one of two ways, as the two generations of Typesense's
 * API have them:
 *
 *   a collection's own items   Typesense up to 29: /collections/:c/synonyms/:id and
 *                              /collections/:c/overrides/:id; deleted with the collection
 *   named sets                 Typesense 30: /synonym_sets/:name and /curation_sets/:name,
 *                              each with `items`; a collection links sets by name (its
 *                              `synonym_sets` / `curation_sets` attribute), a search may
 *                              name more (`synonym_sets`)
 *
 * `aux` layout (ordered array keys):
 *
 *   [ownArea, collId, itemId]  -> item              ('synonyms' | 'overrides')
 *   [setArea, name]            -> {name, items}     ('synonym_sets' | 'curation_sets')
 *   'rules:rev'                -> number            bumped by every write here
 *
 * Every write is a replicated command (src/cluster/command.ts): rule.put / rule.delete for a
 * collection's items, ruleset.put / ruleset.delete for whole sets, ruleset.item.put /
 * ruleset.item.delete for one item of a set. Each is checked before the command is made (a
 * precise 400 without a round trip through a cluster) and again when it is applied (the
 * same check, on the state every node has then). Searches read the items through
 * `compiledFor`: compiled once per process and revision, so a write from any process (or
 * `fathom synonyms` / `fathom curation`) is seen by the next search everywhere.
 */
import { commit } from '../cluster/command.js';
import { RULE_LIMITS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { write, type Store } from '../storage/store.js';
import { getRecord } from '../collection/catalog.js';
import type { CollectionRecord } from '../schema/schema.js';

export type RuleKind = 'synonym' | 'curation';

/** An item as stored: its id and the kind's own attributes. */
export interface RuleItem {
  id: string;
  [k: string]: unknown;
}

export interface RuleSet<T extends RuleItem = RuleItem> {
  name: string;
  items: T[];
  description?: string;
}

/** What the store needs to know about one kind of item. */
export interface KindSpec<T extends RuleItem = RuleItem> {
  kind: RuleKind;
  /** `aux` area of a collection's own items. */
  ownArea: string;
  /** `aux` area of the named sets. */
  setArea: string;
  /** One item in messages: "synonym", "override". */
  noun: string;
  /** One set in messages: "synonym set", "curation set". */
  setNoun: string;
  /** Attributes a set may have besides `items` (and `name`, which must equal the path's). */
  setFields: readonly string[];
  /**
   * Checks an item and returns it as stored (with `id`). `collection`: the record of the
   * collection that owns it (a collection's own items), absent for a set's items.
   */
  validate(store: Store, id: string, body: unknown, collection?: CollectionRecord): T;
  /** An item as answered: the reference's defaults shown where the stored item leaves them out. */
  shown?(item: T): T;
}

export const REV_KEY = 'rules:rev';

const NAME_RE = /^[^\s/?#%\\]+$/;

function bad(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

/** Throws 400 unless `name` can name an item or a set (it travels in a URL path). */
export function checkName(name: unknown, what: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > RULE_LIMITS.maxNameLength || !NAME_RE.test(name)) {
    bad(`${what} must be 1-${RULE_LIMITS.maxNameLength} characters without whitespace, '/', '\\', '?', '#' or '%'`);
  }
  return name;
}

/** The revision of every synonym and curation rule in the directory (0: never written). */
export function revision(store: Store): number {
  return store.readShared<number>(store.aux, REV_KEY) ?? 0;
}

/** Bumps the revision; call inside the write transaction that changes an item or a set. */
function bump(store: Store): void {
  store.aux.put(REV_KEY, ((store.aux.get(REV_KEY) as number | undefined) ?? 0) + 1);
}

/** The item an item route writes: the body, whose `id` (if any) must be the path's. */
function itemBody<T extends RuleItem>(spec: KindSpec<T>, store: Store, id: string, body: unknown, collection?: CollectionRecord): T {
  checkName(id, `a ${spec.noun} id`);
  if (isPlainObject(body) && body.id !== undefined && body.id !== id) {
    bad(`the ${spec.noun}'s \`id\` (${JSON.stringify(body.id)}) differs from the id in the path (${JSON.stringify(id)})`);
  }
  return spec.validate(store, id, body, collection);
}

// ---------------------------------------------------------------------------
// A collection's own items
// ---------------------------------------------------------------------------

/** Creates or replaces one of a collection's own items. */
export async function putOwnItem<T extends RuleItem>(store: Store, spec: KindSpec<T>, collection: string, id: string, body: unknown): Promise<T> {
  itemBody(spec, store, id, body, getRecord(store, collection));
  return commit(store, { op: 'rule.put', kind: spec.kind, collection, id, body }, () =>
    write(store, () => {
      const rec = getRecord(store, collection);
      const item = itemBody(spec, store, id, body, rec);
      store.aux.put([spec.ownArea, rec.id, id], item);
      bump(store);
      return item;
    }),
  );
}

export function getOwnItem<T extends RuleItem>(store: Store, spec: KindSpec<T>, collection: string, id: string): T {
  const rec = getRecord(store, collection);
  const item = store.aux.get([spec.ownArea, rec.id, id]) as T | undefined;
  if (!item) throw new FathomError('NOT_FOUND', `${spec.noun} \`${id}\` not found in collection \`${collection}\``);
  return item;
}

/** A collection's own items, in id order (the order curation rules are tried in). */
export function listOwnItems<T extends RuleItem>(store: Store, spec: KindSpec<T>, collection: string | CollectionRecord): T[] {
  const rec = typeof collection === 'string' ? getRecord(store, collection) : collection;
  const out: T[] = [];
  for (const { value } of store.aux.getRange({ start: [spec.ownArea, rec.id], end: [spec.ownArea, rec.id + 1] })) out.push(value as T);
  return out;
}

export async function deleteOwnItem<T extends RuleItem>(store: Store, spec: KindSpec<T>, collection: string, id: string): Promise<{ id: string }> {
  getOwnItem(store, spec, collection, id);
  return commit(store, { op: 'rule.delete', kind: spec.kind, collection, id }, () =>
    write(store, () => {
      getOwnItem(store, spec, collection, id);
      store.aux.remove([spec.ownArea, getRecord(store, collection).id, id]);
      bump(store);
      return { id };
    }),
  );
}

// ---------------------------------------------------------------------------
// Named sets
// ---------------------------------------------------------------------------

function parseSet<T extends RuleItem>(spec: KindSpec<T>, store: Store, name: string, body: unknown): RuleSet<T> {
  checkName(name, `a ${spec.setNoun} name`);
  if (!isPlainObject(body)) bad(`a ${spec.setNoun} must be a JSON object with \`items\``);
  for (const k of Object.keys(body)) {
    if (k !== 'items' && k !== 'name' && !spec.setFields.includes(k)) {
      bad(`unknown ${spec.setNoun} attribute \`${k}\`; a ${spec.setNoun} has ${['items', ...spec.setFields].map((f) => `\`${f}\``).join(', ')}`);
    }
  }
  if (body.name !== undefined && body.name !== name) bad(`the ${spec.setNoun}'s \`name\` (${JSON.stringify(body.name)}) differs from the name in the path (${JSON.stringify(name)})`);
  const raw = body.items;
  if (!Array.isArray(raw)) bad(`a ${spec.setNoun} needs \`items\`: an array of ${spec.noun}s, each with an \`id\``);
  if (raw.length > RULE_LIMITS.maxSetItems) bad(`a ${spec.setNoun} holds at most ${RULE_LIMITS.maxSetItems} items, got ${raw.length}`);
  const seen = new Set<string>();
  const items = raw.map((it, i) => {
    if (!isPlainObject(it)) bad(`items[${i}] must be a JSON object`);
    if (it.id === undefined) bad(`items[${i}] needs an \`id\``);
    const id = checkName(it.id, `items[${i}].id`);
    if (seen.has(id)) bad(`items[${i}]: the id \`${id}\` is used twice in the set`);
    seen.add(id);
    try {
      return spec.validate(store, id, it);
    } catch (e) {
      if (e instanceof FathomError && e.status === 400) throw new FathomError(e.code, `items[${i}] (\`${id}\`): ${e.message}`);
      throw e;
    }
  });
  const set: RuleSet<T> = { name, items };
  for (const f of spec.setFields) {
    const v = body[f];
    if (v === undefined) continue;
    if (f === 'description' && typeof v !== 'string') bad('`description` must be a string');
    (set as unknown as Record<string, unknown>)[f] = v;
  }
  return set;
}

/** Creates or replaces a whole set. */
export async function putSet<T extends RuleItem>(store: Store, spec: KindSpec<T>, name: string, body: unknown): Promise<RuleSet<T>> {
  parseSet(spec, store, name, body);
  return commit(store, { op: 'ruleset.put', kind: spec.kind, name, body }, () =>
    write(store, () => {
      const set = parseSet(spec, store, name, body);
      store.aux.put([spec.setArea, name], set);
      bump(store);
      return set;
    }),
  );
}

export function findSet<T extends RuleItem>(store: Store, spec: KindSpec<T>, name: string): RuleSet<T> | undefined {
  return store.aux.get([spec.setArea, name]) as RuleSet<T> | undefined;
}

export function getSet<T extends RuleItem>(store: Store, spec: KindSpec<T>, name: string): RuleSet<T> {
  const set = findSet(store, spec, name);
  if (!set) throw new FathomError('NOT_FOUND', `${spec.setNoun} \`${name}\` not found`);
  return set;
}

export function listSets<T extends RuleItem>(store: Store, spec: KindSpec<T>): RuleSet<T>[] {
  const out: RuleSet<T>[] = [];
  for (const { key, value } of store.aux.getRange({ start: [spec.setArea, ''] })) {
    if (!Array.isArray(key) || key[0] !== spec.setArea) break;
    out.push(value as RuleSet<T>);
  }
  return out;
}

export async function deleteSet<T extends RuleItem>(store: Store, spec: KindSpec<T>, name: string): Promise<{ name: string }> {
  getSet(store, spec, name);
  return commit(store, { op: 'ruleset.delete', kind: spec.kind, name }, () =>
    write(store, () => {
      getSet(store, spec, name);
      store.aux.remove([spec.setArea, name]);
      bump(store);
      return { name };
    }),
  );
}

/** Creates or replaces one item of an existing set (the set keeps its other items, in order). */
export async function putSetItem<T extends RuleItem>(store: Store, spec: KindSpec<T>, name: string, id: string, body: unknown): Promise<T> {
  getSet(store, spec, name);
  itemBody(spec, store, id, body);
  return commit(store, { op: 'ruleset.item.put', kind: spec.kind, name, id, body }, () =>
    write(store, () => {
      const set = getSet(store, spec, name);
      const item = itemBody(spec, store, id, body);
      const items = set.items.slice();
      const i = items.findIndex((x) => x.id === id);
      if (i >= 0) items[i] = item;
      else {
        if (items.length >= RULE_LIMITS.maxSetItems) bad(`a ${spec.setNoun} holds at most ${RULE_LIMITS.maxSetItems} items`);
        items.push(item);
      }
      store.aux.put([spec.setArea, name], { ...set, items });
      bump(store);
      return item;
    }),
  );
}

export function getSetItem<T extends RuleItem>(store: Store, spec: KindSpec<T>, name: string, id: string): T {
  const item = getSet(store, spec, name).items.find((x) => x.id === id);
  if (!item) throw new FathomError('NOT_FOUND', `${spec.noun} \`${id}\` not found in ${spec.setNoun} \`${name}\``);
  return item;
}

export async function deleteSetItem<T extends RuleItem>(store: Store, spec: KindSpec<T>, name: string, id: string): Promise<{ id: string }> {
  getSetItem(store, spec, name, id);
  return commit(store, { op: 'ruleset.item.delete', kind: spec.kind, name, id }, () =>
    write(store, () => {
      const set = getSet(store, spec, name);
      getSetItem(store, spec, name, id);
      store.aux.put([spec.setArea, name], { ...set, items: set.items.filter((x) => x.id !== id) });
      bump(store);
      return { id };
    }),
  );
}

/**
 * Checks a collection's `synonym_sets` / `curation_sets` attribute: a list of names of sets
 * that exist. Returns the list (undefined when absent).
 */
export function checkLinkedSets<T extends RuleItem>(store: Store, spec: KindSpec<T>, attr: string, v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x !== '')) bad(`\`${attr}\` must be an array of ${spec.setNoun} names`);
  for (const name of v as string[]) if (!findSet(store, spec, name)) bad(`\`${attr}\`: ${spec.setNoun} \`${name}\` not found`);
  return [...new Set(v as string[])];
}

// ---------------------------------------------------------------------------
// Compiled forms, for searches
// ---------------------------------------------------------------------------

/**
 * One process's compiled forms of rules, per data directory, rebuilt when the revision
 * changes. `make` compiles one unit (a collection's own items, or a set) under `key` (the
 * caller's choice: the unit plus whatever else its compiled form depends on). Hot: one
 * shared read of the revision (a few bytes compared) and a map lookup per search.
 */
export class CompiledCache<C> {
  private readonly byStore = new WeakMap<Store, { rev: number; units: Map<string, C> }>();

  get(store: Store, key: string, make: () => C): C {
    const rev = revision(store);
    let s = this.byStore.get(store);
    if (!s || s.rev !== rev) {
      s = { rev, units: new Map() };
      this.byStore.set(store, s);
    }
    let c = s.units.get(key);
    if (c === undefined) {
      c = make();
      s.units.set(key, c);
    }
    return c;
  }
}

const tokens = new WeakMap<Store, { rev: number; token: object }>();

/**
 * An object that stays the same while no synonym or curation rule changes (search cache
 * entries are tagged with it, src/search/cache.ts).
 */
export function revisionToken(store: Store): object {
  const rev = revision(store);
  let t = tokens.get(store);
  if (!t || t.rev !== rev) tokens.set(store, (t = { rev, token: { rev } }));
  return t.token;
}

/** One kind's items and sets, for the engine's faces (the HTTP routes and the CLI): answered with the kind's defaults shown. */
export class Rules<T extends RuleItem> {
  constructor(
    private readonly store: Store,
    readonly spec: KindSpec<T>,
  ) {}

  private item = (item: T): T => (this.spec.shown ? this.spec.shown(item) : item);
  private set = (set: RuleSet<T>): RuleSet<T> => (this.spec.shown ? { ...set, items: set.items.map(this.item) } : set);

  /** Creates or replaces one of a collection's own items. */
  async put(collection: string, id: string, body: unknown): Promise<T> {
    return this.item(await putOwnItem(this.store, this.spec, collection, id, body));
  }
  get(collection: string, id: string): T {
    return this.item(getOwnItem(this.store, this.spec, collection, id));
  }
  list(collection: string): T[] {
    return listOwnItems(this.store, this.spec, collection).map(this.item);
  }
  delete(collection: string, id: string): Promise<{ id: string }> {
    return deleteOwnItem(this.store, this.spec, collection, id);
  }

  async putSet(name: string, body: unknown): Promise<RuleSet<T>> {
    return this.set(await putSet(this.store, this.spec, name, body));
  }
  getSet(name: string): RuleSet<T> {
    return this.set(getSet(this.store, this.spec, name));
  }
  listSets(): RuleSet<T>[] {
    return listSets(this.store, this.spec).map(this.set);
  }
  deleteSet(name: string): Promise<{ name: string }> {
    return deleteSet(this.store, this.spec, name);
  }

  async putItem(set: string, id: string, body: unknown): Promise<T> {
    return this.item(await putSetItem(this.store, this.spec, set, id, body));
  }
  getItem(set: string, id: string): T {
    return this.item(getSetItem(this.store, this.spec, set, id));
  }
  listItems(set: string): T[] {
    return getSet(this.store, this.spec, set).items.map(this.item);
  }
  deleteItem(set: string, id: string): Promise<{ id: string }> {
    return deleteSetItem(this.store, this.spec, set, id);
  }
}
