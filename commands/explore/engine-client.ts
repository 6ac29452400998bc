/**
 * commands/explore/engine-client.ts: searches straight on the data directory.
 *
 * Keyword search runs on this thread; each search first yields to the event loop so that
 * keystrokes queued behind it are handled, and a search whose signal was aborted in the
 * meantime is skipped instead of run.
 */
import type { Engine } from '../../src/engine.js';
import type { CollectionSchema, SearchClient, SearchParams, SearchResponse, Source } from './client.js';

function abortError(): Error {
  const e = new Error('search superseded by a newer one');
  e.name = 'AbortError';
  return e;
}

export class EngineClient implements SearchClient {
  readonly source: Source;
  constructor(
    private readonly engine: Engine,
    source: Source,
    /** Whether close() also closes the engine (true when this client opened it). */
    private readonly ownsEngine = true,
  ) {
    this.source = source;
  }

  async schema(collection: string): Promise<CollectionSchema> {
    return this.engine.getCollection(collection) as unknown as CollectionSchema;
  }

  async search(collection: string, params: SearchParams, signal?: AbortSignal): Promise<SearchResponse> {
    await new Promise((r) => setImmediate(r));
    if (signal?.aborted) throw abortError();
    return this.engine.search(collection, params);
  }

  async close(): Promise<void> {
    if (this.ownsEngine) await this.engine.close();
  }
}
