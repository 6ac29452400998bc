/**
 * The search cache: answers of searches sent with `use_cache=true`, kept for `cache_ttl`
 * seconds (default 60), at most `entries` of them (least recently used first out).
 *
 * An entry is keyed by the collection name and every parameter except `use_cache` and
 * `cache_ttl`, and the bounds of the scoped key it was made with (its other embedded
 * parameters are among the parameters). It also remembers the
 * collection's record and index state as read when it was made: any write to the
 * collection, from this process or another, or a schema change or an alias moved, gives
 * those shared objects a new identity (Store.readShared), so an entry never outlives the
 * data it was computed from. What only the TTL bounds: changes elsewhere that a search
 * reads, such as the documents of a joined collection or a stopword set. (The reference
 * engine bounds every change by the TTL alone.)
 */
import type { RawParams } from '../query/params.js';
import { scopeKey, type SearchScope } from '../query/scope.js';

interface Entry<V> {
  value: V;
  expires: number;
  version: readonly object[];
}

export class SearchCache<V> {
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    /** Most answers kept. Range 0.. (0: nothing is kept). */
    private readonly max: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The cache key of a search: the collection and its parameters in a fixed order. */
  static key(collection: string, raw: RawParams, scope?: SearchScope): string {
    const names = Object.keys(raw)
      .filter((k) => k !== 'use_cache' && k !== 'cache_ttl' && raw[k] !== undefined)
      .sort();
    return JSON.stringify([collection, scopeKey(scope), ...names.map((k) => [k, raw[k]])]);
  }

  /** The cached answer, if there is one, it has not expired, and the collection is unchanged. */
  get(key: string, version: readonly object[]): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires <= this.now() || !sameVersion(e.version, version)) {
      this.entries.delete(key);
      return undefined;
    }
    // most recently used last
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.value;
  }

  set(key: string, version: readonly object[], value: V, ttlMs: number): void {
    if (this.max <= 0 || ttlMs <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expires: this.now() + ttlMs, version });
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Forgets every answer (`POST /operations/cache/clear`). */
  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

function sameVersion(a: readonly object[], b: readonly object[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
