/**
 * The query-embedding cache: a repeated search text is embedded once per process.
 *
 * An LRU of EMBED_DEFAULTS.queryCacheSize entries keyed by (embedder, text). It holds
 * promises, so identical queries that arrive together share one embedding call; a failed
 * call is not cached. Callers get their own copy of the vector.
 */
import { EMBED_DEFAULTS } from '../defaults.js';
import type { EmbedOptions, Embedder } from './types.js';

const ids = new WeakMap<Embedder, number>();
let nextId = 1;
const lru = new Map<string, Promise<Float32Array>>();
let capacity: number = EMBED_DEFAULTS.queryCacheSize;

function idOf(e: Embedder): number {
  let id = ids.get(e);
  if (id === undefined) {
    id = nextId++;
    ids.set(e, id);
  }
  return id;
}

/**
 * The query vector of `text` (query_prefix applied), from the cache when this embedder has
 * embedded the same text before. `opts` are the search's remote_embedding_timeout_ms /
 * num_tries; they do not take part in the key.
 */
export async function cachedEmbedQuery(embedder: Embedder, text: string, opts: Omit<EmbedOptions, 'purpose'> = {}): Promise<Float32Array> {
  if (capacity === 0) return (await embedder.embed([text], { ...opts, purpose: 'query' }))[0]!;
  const key = `${idOf(embedder)}\u0000${text}`;
  let p = lru.get(key);
  if (p) {
    lru.delete(key); // refresh recency
    lru.set(key, p);
  } else {
    p = embedder.embed([text], { ...opts, purpose: 'query' }).then((v) => v[0]!);
    lru.set(key, p);
    p.catch(() => {
      if (lru.get(key) === p) lru.delete(key);
    });
    while (lru.size > capacity) lru.delete(lru.keys().next().value!);
  }
  return (await p).slice();
}

/** Empties the cache and optionally changes its size (0 disables it). */
export function clearQueryCache(size?: number): void {
  lru.clear();
  if (size !== undefined) capacity = Math.max(0, Math.floor(size));
}

/** Entries currently cached (for tests and stats). */
export function queryCacheSize(): number {
  return lru.size;
}
