/**
 * What every remote embedding API has in common: batching, timeouts and retries per request,
 * checking and normalising the vectors, and turning failures into EmbeddingErrors.
 *
 * A vendor implements `requestBatch`: one logical request for a batch of texts (it may itself
 * send several, e.g. one per text), throwing ProviderError for a failure of the whole batch
 * and putting an Error in a slot for a failure of one text.
 */
import { EMBED_DEFAULTS } from '../../defaults.js';
import { EmbeddingError, toUnitVector, type EmbedOptions, type EmbedPurpose, type TextModel } from '../types.js';
import { ProviderError } from './http.js';

export interface CallOptions {
  purpose: EmbedPurpose;
  /** Per-attempt timeout, ms. */
  timeoutMs: number;
  /** Attempts, the first included. */
  numTries: number;
}

/** ProviderError → EmbeddingError: refused by the provider (4xx) is BAD_REQUEST, the rest SERVICE_UNAVAILABLE. */
export function toEmbeddingError(e: unknown): EmbeddingError {
  if (e instanceof EmbeddingError) return e;
  if (e instanceof ProviderError) {
    const refused = e.status !== undefined && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429;
    return new EmbeddingError(refused ? 'BAD_REQUEST' : 'SERVICE_UNAVAILABLE', e.message, e.status);
  }
  return new EmbeddingError('SERVICE_UNAVAILABLE', (e as Error)?.message ?? String(e));
}

export abstract class RemoteModel implements TextModel {
  private vectorSize = 0;

  /** Names the API in messages, e.g. 'OpenAI API'. */
  abstract readonly label: string;
  /** Most texts the API takes in one request. */
  protected abstract readonly maxBatch: number;

  /** One batch; vectors as the API returned them (normalised by the caller). */
  protected abstract requestBatch(texts: string[], call: CallOptions): Promise<Array<unknown[] | Error>>;

  get dims(): number {
    return this.vectorSize;
  }

  /**
   * Checks the configuration with one real request (credentials, model name, URL) and learns
   * the vector size. Throws EmbeddingError with the provider's message.
   */
  async probe(): Promise<void> {
    const call: CallOptions = { purpose: 'query', timeoutMs: EMBED_DEFAULTS.remoteTimeoutMsQuery, numTries: EMBED_DEFAULTS.remoteNumTries };
    let results: Array<unknown[] | Error>;
    try {
      results = await this.probeRequest(['fathom'], call);
    } catch (e) {
      throw toEmbeddingError(e);
    }
    const v = results[0] instanceof Error ? toEmbeddingError(results[0]) : this.check(results[0] ?? []);
    if (v instanceof Error) throw v;
    this.vectorSize = v.length;
  }

  /** The request `probe` sends; vendors with load-time rules (GCP) override it. */
  protected probeRequest(texts: string[], call: CallOptions): Promise<Array<unknown[] | Error>> {
    return this.requestBatch(texts, call);
  }

  async run(texts: string[], opts: EmbedOptions): Promise<Array<Float32Array | Error>> {
    const call: CallOptions = {
      purpose: opts.purpose,
      timeoutMs: opts.timeoutMs ?? (opts.purpose === 'query' ? EMBED_DEFAULTS.remoteTimeoutMsQuery : EMBED_DEFAULTS.remoteTimeoutMsIndex),
      numTries: opts.numTries ?? EMBED_DEFAULTS.remoteNumTries,
    };
    const batchSize = Math.max(1, Math.min(opts.batchSize ?? EMBED_DEFAULTS.remoteBatchSize, this.maxBatch));
    const out: Array<Float32Array | Error> = [];
    for (let i = 0; i < texts.length; i += batchSize) {
      const batch = texts.slice(i, i + batchSize);
      let results: Array<unknown[] | Error>;
      try {
        results = await this.requestBatch(batch, call);
        if (results.length !== batch.length) {
          throw new EmbeddingError('SERVICE_UNAVAILABLE', `${this.label} error: ${results.length} embeddings for ${batch.length} texts`);
        }
      } catch (e) {
        const err = toEmbeddingError(e);
        for (let k = 0; k < batch.length; k++) out.push(err);
        continue;
      }
      for (const r of results) out.push(r instanceof Error ? toEmbeddingError(r) : this.check(r));
    }
    return out;
  }

  private check(values: unknown[]): Float32Array | Error {
    const v = toUnitVector(values);
    if (!v) return new EmbeddingError('SERVICE_UNAVAILABLE', `${this.label} error: the answer holds no valid embedding`);
    if (this.vectorSize > 0 && v.length !== this.vectorSize) {
      return new EmbeddingError('SERVICE_UNAVAILABLE', `${this.label} error: got ${v.length} dimensions, expected ${this.vectorSize}`);
    }
    return v;
  }

  async close(): Promise<void> {}
}

/** `base` without trailing slashes. */
export function trimSlash(base: string): string {
  return base.replace(/\/+$/, '');
}
