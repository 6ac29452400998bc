/**
 * Aliases: a name that stands for a collection wherever a collection name is accepted.
 * Re-pointing an alias swaps the collection behind it in one step (blue/green reindexing).
 * An alias may name a collection that does not exist yet: every use of it answers as for
 * a missing collection (404) until one is created under that name.
 */
import { FathomError } from '../errors.js';
import { MAX_NAME_LENGTH } from '../defaults.js';
import { isPlainObject } from '../json.js';
import { write, type Store } from '../storage/store.js';

export interface AliasRecord {
  name: string;
  collection_name: string;
}

/**
 * An alias name is any 1-256 characters but control characters: as in the reference,
 * names with spaces, '/', '?', '#' or '%' work, sent percent-encoded in URL paths (the
 * clients encode them).
 */
const NAME_RE = new RegExp(`^[^\\u0000-\\u001f\\u007f]{1,${MAX_NAME_LENGTH}}$`);

export async function upsertAlias(store: Store, name: string, body: unknown): Promise<AliasRecord> {
  if (!NAME_RE.test(name)) throw new FathomError('BAD_PARAMETER', `alias name ${JSON.stringify(name)} must be 1-${MAX_NAME_LENGTH} characters without control characters`);
  if (!isPlainObject(body) || typeof body.collection_name !== 'string' || !body.collection_name) {
    throw new FathomError('BAD_REQUEST', 'the alias needs a `collection_name`');
  }
  const target = body.collection_name;
  return write(store, () => {
    if (target.length > MAX_NAME_LENGTH) throw new FathomError('BAD_REQUEST', `collection_name: a collection name has at most ${MAX_NAME_LENGTH} characters`);
    // the collection need not exist yet (as in the reference): the alias answers 404 until it does
    if (store.collections.get(name) !== undefined) throw new FathomError('CONFLICT', `\`${name}\` is the name of a collection and cannot also be an alias`);
    store.aliases.put(name, target);
    return { name, collection_name: target };
  });
}

export function getAlias(store: Store, name: string): AliasRecord {
  const target = name.length <= MAX_NAME_LENGTH ? store.aliases.get(name) : undefined;
  if (target === undefined) throw new FathomError('NOT_FOUND', `alias \`${name}\` not found`);
  return { name, collection_name: target };
}

export function listAliases(store: Store): AliasRecord[] {
  return [...store.aliases.getRange({})].map(({ key, value }) => ({ name: key as string, collection_name: value as string }));
}

export async function deleteAlias(store: Store, name: string): Promise<AliasRecord> {
  return write(store, () => {
    const target = name.length <= MAX_NAME_LENGTH ? store.aliases.get(name) : undefined;
    if (target === undefined) throw new FathomError('NOT_FOUND', `alias \`${name}\` not found`);
    store.aliases.remove(name);
    return { name, collection_name: target };
  });
}
