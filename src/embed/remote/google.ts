/**
 * `google/<model>`: Google's generative language API (API key in the `key` query parameter).
 * Base URL https://generativelanguage.googleapis.com unless `model_config.url` replaces it.
 *
 * Current models (text-embedding-004, gemini-embedding-001, embedding-001, …):
 *   POST <base>/v1beta/models/<model>:batchEmbedContents?key=<api_key>
 *   { "requests": [ { "model": "models/<model>", "content": { "parts": [ { "text" } ] },
 *                     "taskType": document_task | query_task, "outputDimensionality"?: num_dim } ] }
 *   → { "embeddings": [ { "values": [ … ] }, … ] }        at most 100 requests per call
 *
 * The reference's documented model, `embedding-gecko-001` (PaLM), uses the older method,
 * one text per call:
 *   POST <base>/v1beta2/models/embedding-gecko-001:embedText?key=<api_key>
 *   { "text": "…" } → { "embedding": { "value": [ … ] } }
 *
 * Errors: { "error": { "code", "message", "status" } }.
 */
import { EMBED_DEFAULTS } from '../../defaults.js';
import { requestJson, withRetries, ProviderError } from './http.js';
import { RemoteModel, trimSlash, type CallOptions } from './remote.js';
import type { RemoteSpec } from '../config.js';

export const GOOGLE_DEFAULT_URL = 'https://generativelanguage.googleapis.com';
const LEGACY_MODELS = new Set(['embedding-gecko-001']);

export type GoogleOptions = RemoteSpec<'google'> & { numDim?: number; fetch: typeof fetch };

export class GoogleModel extends RemoteModel {
  readonly label = 'Google API';
  protected readonly maxBatch: number;
  private readonly base: string;
  private readonly legacy: boolean;

  constructor(private readonly o: GoogleOptions) {
    super();
    this.base = trimSlash(o.url ?? GOOGLE_DEFAULT_URL);
    this.legacy = LEGACY_MODELS.has(o.model);
    this.maxBatch = EMBED_DEFAULTS.googleMaxBatch;
  }

  private url(version: string, method: string): string {
    return `${this.base}/${version}/models/${encodeURIComponent(this.o.model)}:${method}?key=${encodeURIComponent(this.o.apiKey)}`;
  }

  protected async requestBatch(texts: string[], call: CallOptions): Promise<Array<unknown[] | Error>> {
    if (this.legacy) {
      // One request per text: a failure concerns that text only.
      const out: Array<unknown[] | Error> = [];
      for (const text of texts) {
        try {
          const res = await withRetries(call.numTries, () =>
            requestJson(this.o.fetch, this.label, { url: this.url('v1beta2', 'embedText'), body: { text } }, call.timeoutMs),
          );
          const value = (res as { embedding?: { value?: unknown } }).embedding?.value;
          out.push(Array.isArray(value) ? value : new ProviderError(`${this.label} error: the answer has no embedding.value`, 200, false));
        } catch (e) {
          out.push(e as Error);
        }
      }
      return out;
    }
    const task = call.purpose === 'query' ? this.o.queryTask : this.o.documentTask;
    const requests = texts.map((text) => {
      const r: Record<string, unknown> = { model: `models/${this.o.model}`, content: { parts: [{ text }] }, taskType: task };
      if (this.o.numDim !== undefined) r.outputDimensionality = this.o.numDim;
      return r;
    });
    const res = await withRetries(call.numTries, () =>
      requestJson(this.o.fetch, this.label, { url: this.url('v1beta', 'batchEmbedContents'), body: { requests } }, call.timeoutMs),
    );
    const embeddings = (res as { embeddings?: unknown }).embeddings;
    if (!Array.isArray(embeddings)) throw new ProviderError(`${this.label} error: the answer has no \`embeddings\` array`, 200, false);
    return embeddings.map((e) => {
      const values = (e as { values?: unknown })?.values;
      return Array.isArray(values) ? values : [];
    });
  }
}
