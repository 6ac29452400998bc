/**
 * src/keys/scope.ts: does this key allow this action on these collections?
 *
 * Actions are `resource:verb` (`documents:search`, `collections:create`, `keys:list`,
 * `analytics/rules:create`). A key's action entry matches when each part is equal or `*`,
 * and a resource also covers its sub-resources (`analytics:*` allows
 * `analytics/events:create`); the entry `*` alone allows everything. A key's collection
 * entries are regular expressions matched against the whole collection name (`org_.*`
 * covers every name starting with `org_`), with JavaScript's syntax and `u` flag, in
 * linear time (src/pattern.ts); `*` alone means every collection. When the
 * request names an alias, either the alias or the collection behind it may match, so a key
 * for `products` keeps working after `products` becomes an alias of `products_v2`.
 *
 * Hot: `allows` runs on every authenticated request; compiled patterns are cached.
 */
import { FathomError } from '../errors.js';
import { isLiteralPattern, namePattern, patternProblem } from '../pattern.js';

/** One thing a request does, as a key scope sees it. */
export interface Access {
  /** `resource:verb`, e.g. `documents:search`. */
  action: string;
  /**
   * Collections touched, each as the requested name plus the collection it stands for
   * when it is an alias. Empty for routes that touch no collection (keys, stopwords).
   */
  collections: Array<{ name: string; target?: string }>;
}

export interface Scope {
  actions: string[];
  collections: string[];
}

/** Throws BAD_REQUEST when a collection entry is not a valid regular expression, or one that cannot be matched in linear time. */
export function checkCollectionPattern(entry: string): void {
  if (entry === '*' || isLiteralPattern(entry)) return;
  const problem = patternProblem(entry, true);
  if (!problem) return;
  if (problem.invalid) throw new FathomError('BAD_REQUEST', `\`collections\` entry \`${entry}\` is not a valid regular expression: ${problem.message}`);
  throw new FathomError('BAD_REQUEST', `\`collections\` entry \`${entry}\` cannot be used as a pattern: ${problem.message} (patterns are matched in linear time, without backtracking)`);
}

/** Throws BAD_REQUEST unless an action entry has the shape `*` or `resource:verb`. */
export function checkActionPattern(entry: string): void {
  if (entry === '*') return;
  if (!/^[a-z_.*/-]+:[a-z_*-]+$/i.test(entry)) {
    throw new FathomError('BAD_REQUEST', `\`actions\` entry \`${entry}\` must be \`*\` or look like \`resource:verb\` (for example \`documents:search\`)`);
  }
}

export function actionAllowed(entries: readonly string[], action: string): boolean {
  const colon = action.indexOf(':');
  const resource = action.slice(0, colon);
  const verb = action.slice(colon + 1);
  for (const e of entries) {
    if (e === '*' || e === action) return true;
    const c = e.indexOf(':');
    if (c < 0) continue;
    const r = e.slice(0, c);
    const v = e.slice(c + 1);
    // `analytics:*` covers the sub-resources `analytics/rules:...` and `analytics/events:...`
    const covers = r === '*' || r === resource || (resource.length > r.length && resource.charCodeAt(r.length) === 47 /* / */ && resource.startsWith(r));
    if (covers && (v === '*' || v === verb)) return true;
  }
  return false;
}

export function collectionAllowed(entries: readonly string[], name: string): boolean {
  for (const e of entries) {
    if (e === '*' || e === name) return true;
    // (an entry without syntax matches only itself; a stored entry that is no usable pattern matches nothing)
    if (!isLiteralPattern(e) && namePattern(e, true).test(name)) return true;
  }
  return false;
}

/** True when `scope` allows `access`: the action, and every collection it touches. */
export function allows(scope: Scope, access: Access): boolean {
  if (!actionAllowed(scope.actions, access.action)) return false;
  for (const c of access.collections) {
    if (collectionAllowed(scope.collections, c.name)) continue;
    if (c.target !== undefined && c.target !== c.name && collectionAllowed(scope.collections, c.target)) continue;
    return false;
  }
  return true;
}
