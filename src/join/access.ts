/**
 * src/join/access.ts: which collections may a request reach through a join, and which of
 * their documents?
 *
 * A join reads another collection: `$c(...)` in filter_by (forward or reverse, nested),
 * `$c(...)` in include_fields and `$c(field:dir)` in sort_by. A key reaches through a join
 * only the collections it could act on itself: each joined collection (as written, or the
 * collection an alias stands for) must pass the key's own action and collection patterns
 * (`allows`, src/keys/scope.ts), or the request gets the same 401 as a direct request on
 * that collection. The check comes before the collection is looked up, so a refusal says
 * nothing about whether the collection exists.
 *
 * A scoped key's embedded filter bounds the joined side too: every `$c(F)` clause in it,
 * wherever it stands, means the key sees of `c` only the documents passing F. Joined
 * documents are then those passing both the request's inner filter and every such F
 * (AND-ed, so an OR between two clauses never widens what either allows), in filters,
 * included fields and joined sorts alike. The key's own clauses are evaluated with the
 * collection checks but without the bounds (they are the bounds), so nothing recurses.
 */
import { resolveName } from '../collection/catalog.js';
import { FathomError } from '../errors.js';
import { SEARCH_ACTION } from '../keys/keys.js';
import { allows, type Scope } from '../keys/scope.js';
import { parseFilter, type FilterNode } from '../query/filter.js';
import type { SearchScope } from '../query/scope.js';
import type { Store } from '../storage/store.js';

export class JoinAccess {
  /** Per collection (resolved name), the seqs its bound lets through; filled by src/join/join.ts. */
  readonly boundSeqs = new Map<string, Set<number>>();

  private constructor(
    private readonly store: Store,
    /** The key's own scope; undefined: every collection. */
    private readonly key: Scope | undefined,
    private readonly action: string,
    /** Per collection (resolved name), the key filter's clauses about it. */
    private readonly bounds: Map<string, FilterNode[]> | undefined,
  ) {}

  /**
   * The access of a request made under `scope` (a search's, by default), or undefined when
   * it bounds no join: a key that may act on every collection and whose filter names none.
   */
  static of(store: Store, scope: SearchScope | undefined, action: string = SEARCH_ACTION): JoinAccess | undefined {
    const key = scope?.access && !scope.access.collections.includes('*') ? scope.access : undefined;
    const bounds = scope?.filter_by !== undefined ? keyBounds(store, scope.filter_by) : undefined;
    if (!key && !bounds) return undefined;
    return new JoinAccess(store, key, action, bounds);
  }

  /** Throws 401 unless the key may reach collection `name` (as the request wrote it) through a join. */
  check(name: string, where: string): void {
    if (!this.key) return;
    const target = resolveName(this.store, name);
    const access = { action: this.action, collections: [target === name ? { name } : { name, target }] };
    if (!allows(this.key, access)) {
      throw new FathomError('UNAUTHORIZED', `this API key does not allow \`${this.action}\` on \`${name}\` (joined in ${where})`);
    }
  }

  /** True when the key's filter joins another collection (so what it lets through depends on that one too). */
  get bounded(): boolean {
    return this.bounds !== undefined;
  }

  /** The key's bound on collection `name` (resolved): one filter its joined documents must pass. */
  bound(name: string): FilterNode | undefined {
    const nodes = this.bounds?.get(name);
    if (!nodes) return undefined;
    return nodes.length === 1 ? nodes[0]! : { kind: 'and', children: nodes };
  }

  /** The same collection checks without the bounds: for evaluating the bounds themselves. */
  checksOnly(): JoinAccess | undefined {
    if (!this.bounds) return this;
    return this.key ? new JoinAccess(this.store, this.key, this.action, undefined) : undefined;
  }
}

/** Every `$c(F)` clause of a key's filter, by the collection it names (aliases resolved). */
function keyBounds(store: Store, filter: string): Map<string, FilterNode[]> | undefined {
  let tree: FilterNode;
  try {
    tree = parseFilter(filter);
  } catch {
    // an invalid key filter is refused where the search parses it (src/query/scope.ts)
    return undefined;
  }
  const out = new Map<string, FilterNode[]>();
  const walk = (n: FilterNode): void => {
    if (n.kind === 'and' || n.kind === 'or') n.children.forEach(walk);
    else if (n.kind === 'join') {
      const name = resolveName(store, n.collection);
      const list = out.get(name);
      if (list) list.push(n.inner);
      else out.set(name, [n.inner]);
      walk(n.inner);
    }
  };
  walk(tree);
  return out.size > 0 ? out : undefined;
}

/** The access of a document request (get, export, update or delete by filter) by a key with these patterns. */
export function joinAccessOf(store: Store, keyScope: Scope | undefined, action: string): JoinAccess | undefined {
  return keyScope ? JoinAccess.of(store, { access: keyScope }, action) : undefined;
}
