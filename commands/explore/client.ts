/**
 * commands/explore/client.ts: what the explorer needs from "a place that answers searches".
 *
 * Two implementations: EngineClient reads the data directory in this process,
 * HttpClient talks to a running `fathom serve`. The UI sees only this interface, so the
 * same screens work on both, and tests drive it with a scripted fake.
 */
import type { SearchResponse } from '../../src/search/search.js';

export type { SearchResponse };
export type { SearchHit } from '../../src/search/search.js';
export type { FacetResult } from '../../src/search/facets.js';

/** Search parameters as strings, exactly as they travel in an HTTP query string. */
export type SearchParams = Record<string, string>;

/** The part of a collection's schema the explorer uses. */
export interface SchemaField {
  name: string;
  type: string;
  facet?: boolean;
  index?: boolean;
  [k: string]: unknown;
}

export interface CollectionSchema {
  name: string;
  fields: SchemaField[];
  num_documents?: number;
  [k: string]: unknown;
}

/** Where the searches go; shown in the header and used to write the equivalent commands. */
export type Source = { kind: 'local'; dataDir: string; defaultDataDir: boolean } | { kind: 'server'; url: string };

export interface SearchClient {
  readonly source: Source;
  /** The collection's schema; rejects with a one-line message when it does not exist. */
  schema(collection: string): Promise<CollectionSchema>;
  /**
   * One search. Rejects with an Error whose message is one line for people (a bad
   * filter, an unreachable server). An aborted signal may reject or may be ignored:
   * callers must not rely on it to drop stale answers (see sequencer.ts).
   */
  search(collection: string, params: SearchParams, signal?: AbortSignal): Promise<SearchResponse>;
  close(): Promise<void>;
}

/** The first line of an error's message: what the explorer shows inline. */
export function oneLineMessage(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return (msg.split('\n')[0] ?? '').trim() || 'unknown error';
}
