/**
 * What a scoped search key lets a search see, and how it is enforced.
 *
 * A scoped search key (src/keys/scoped.ts) embeds search parameters. Most replace the
 * request's; three limit what any search made with the key may see, whatever the request
 * says, and are enforced here rather than by rewriting the request:
 *
 *   filter_by       the key's filter and the request's are parsed apart and joined as
 *                   AND(request tree, key tree). Never as text: a request filter such as
 *                   `id:*) || (id:*` would otherwise close the key's bracket and add a branch
 *                   outside it. A malformed request filter is refused before it meets the key's.
 *   include_fields  the only fields (plain names) a response may show: a request's own
 *                   include_fields can narrow them, never widen them.
 *   exclude_fields  fields a response never shows, added to the request's own.
 *
 * A field the key hides is absent from documents and highlights, and a request that would
 * reveal its values another way (query_by, filter_by, sort_by, facet_by, group_by,
 * highlight_fields) is refused with 401. Vector fields stay searchable (a hidden embedding
 * is a common way to keep responses small) but are never returned.
 *
 * Joined collections (`$c(...)`) are reached only when the key may search them itself, and
 * a `$c(F)` clause of the key's filter bounds what it sees of `c` there (src/join/access.ts).
 */
import { FathomError } from '../errors.js';
import { project, type Projection } from '../io/project.js';
import { parseFieldList } from './fields.js';
import { parseFilter, type FilterNode } from './filter.js';
import type { SearchParams } from './params.js';
import type { SortClause } from './sort.js';
import type { Schema } from '../schema/schema.js';
import type { Scope } from '../keys/scope.js';

/** The parts of a scoped key that bound what a search sees (absent: nothing bounded). */
export interface SearchScope {
  /** The key's filter; every hit passes it. */
  filter_by?: string;
  /** The key's include_fields (plain names bound the document; `$c(...)` entries replace the request's joins). */
  include_fields?: string[];
  /** The key's exclude_fields. */
  exclude_fields?: string[];
  /**
   * The key's own actions and collection patterns, when it may not search every collection:
   * a join reaches only the collections they allow (src/join/access.ts).
   */
  access?: Scope;
}

/** Parameters of a scoped key that are scope, not replacements (see applyEmbedded). */
export const SCOPE_PARAMS = ['filter_by', 'include_fields', 'exclude_fields'] as const;

function fieldsOf(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  const list = parseFieldList(Array.isArray(v) ? v.map(String) : String(v));
  return list && list.length > 0 ? list : undefined;
}

/** The scope carried by a scoped key's embedded parameters, or undefined when they bound nothing. */
export function scopeOf(embedded: Record<string, unknown>): SearchScope | undefined {
  const scope: SearchScope = {};
  const f = embedded.filter_by;
  if (f !== undefined && f !== null && String(f).trim() !== '') scope.filter_by = String(f);
  const inc = fieldsOf(embedded.include_fields);
  if (inc) scope.include_fields = inc;
  const exc = fieldsOf(embedded.exclude_fields);
  if (exc) scope.exclude_fields = exc;
  return Object.keys(scope).length > 0 ? scope : undefined;
}

/** A stable text form of a scope (search cache keys). */
export function scopeKey(scope: SearchScope | undefined): string {
  return scope ? JSON.stringify([scope.filter_by ?? null, scope.include_fields ?? null, scope.exclude_fields ?? null, scope.access ? [scope.access.actions, scope.access.collections] : null]) : '';
}

/**
 * The filter a search runs: the request's (already parsed, so a malformed one was refused
 * on its own), the key's, or both as one AND node. Each is parsed apart, so neither can
 * change how the other is read.
 */
export function scopedFilter(own: FilterNode | undefined, scope: SearchScope | undefined): FilterNode | undefined {
  const key = scope?.filter_by !== undefined ? parseKeyFilter(scope.filter_by) : undefined;
  if (own && key) return { kind: 'and', children: [own, key] };
  return own ?? key;
}

function parseKeyFilter(text: string): FilterNode {
  try {
    return parseFilter(text);
  } catch (e) {
    if (e instanceof FathomError) throw new FathomError('BAD_FILTER', `the API key's embedded filter_by is invalid: ${e.message}`);
    throw e;
  }
}

const plain = (names: string[] | undefined) => names?.filter((n) => !n.startsWith('$'));

/** Is `name` equal to `other` or inside it (`a.b` is inside `a`)? */
function within(name: string, other: string): boolean {
  return name === other || name.startsWith(other + '.');
}

/** A predicate: does the key hide this field? */
export function hiddenBy(scope: SearchScope | undefined): ((name: string) => boolean) | undefined {
  if (!scope) return undefined;
  const inc = plain(scope.include_fields);
  const exc = plain(scope.exclude_fields) ?? [];
  if ((!inc || inc.length === 0) && exc.length === 0) return undefined;
  return (name) => {
    if (exc.some((e) => within(name, e))) return true;
    if (inc && inc.length > 0) return !inc.some((i) => within(name, i) || within(i, name));
    return false;
  };
}

function refuse(field: string, where: string): never {
  throw new FathomError('UNAUTHORIZED', `this API key does not allow reading field \`${field}\` (used in ${where})`);
}

/** Field names a filter tests, outside join clauses (those test another collection). */
function filterFields(node: FilterNode, out: string[]): string[] {
  if (node.kind === 'cond') out.push(node.field);
  else if (node.kind === 'and' || node.kind === 'or') for (const c of node.children) filterFields(c, out);
  return out;
}

/**
 * Refuses a request that would reveal a field the key hides. `requestFilter` is the
 * request's own parsed filter (the key's may test hidden fields: it is the key's).
 */
export function checkVisible(
  scope: SearchScope | undefined,
  schema: Schema,
  params: SearchParams,
  requestFilter: FilterNode | undefined,
  sort: SortClause[] | undefined,
): void {
  const hidden = hiddenBy(scope);
  if (!hidden) return;
  for (const name of params.query_by) {
    const f = schema.field(name);
    if (f && f.kind === 'vector') continue;
    if (hidden(name)) refuse(name, 'query_by');
  }
  if (requestFilter) for (const name of filterFields(requestFilter, [])) if (hidden(name)) refuse(name, 'filter_by');
  for (const c of sort ?? []) if ((c.kind === 'field' || c.kind === 'geo') && hidden(c.field.name)) refuse(c.field.name, 'sort_by');
  for (const spec of params.facet_by) {
    const name = spec.replace(/\(.*$/s, '').trim();
    if (hidden(name)) refuse(name, 'facet_by');
  }
  for (const name of params.group_by ?? []) if (hidden(name)) refuse(name, 'group_by');
  for (const name of params.highlight_fields ?? []) if (hidden(name)) refuse(name, 'highlight_fields');
  for (const name of params.highlight_full_fields ?? []) if (hidden(name)) refuse(name, 'highlight_full_fields');
}

/** The key's bound on a hit's own fields, applied before highlighting and the request's projection. */
export function keyProjection(scope: SearchScope | undefined): Projection | undefined {
  if (!scope) return undefined;
  const include = plain(scope.include_fields);
  const exclude = plain(scope.exclude_fields);
  if ((!include || include.length === 0) && (!exclude || exclude.length === 0)) return undefined;
  return { ...(include && include.length ? { include } : {}), ...(exclude && exclude.length ? { exclude } : {}) };
}

/** Applies the key's bound to a stored document (itself when there is none). */
export function boundDocument(doc: Record<string, unknown>, bound: Projection | undefined): Record<string, unknown> {
  return bound ? project(doc, bound) : doc;
}

/**
 * The include / exclude lists that decide joins: the key's `$c(...)` include entries
 * replace the request's when it has any; exclusions add up.
 */
export function joinLists(params: SearchParams, scope: SearchScope | undefined): { include?: string[]; exclude?: string[] } {
  if (!scope) return { include: params.include_fields, exclude: params.exclude_fields };
  const keyJoins = scope.include_fields?.filter((n) => n.startsWith('$')) ?? [];
  const include = keyJoins.length > 0 ? keyJoins : params.include_fields;
  const exclude = [...(params.exclude_fields ?? []), ...(scope.exclude_fields?.filter((n) => n.startsWith('$')) ?? [])];
  return { include, exclude: exclude.length ? exclude : undefined };
}
