/**
 * `openai/<model>`: OpenAI's embeddings API, or any server that speaks it (`model_config.url`,
 * the spec's "custom embedding server contract").
 *
 *   POST <url>/v1/embeddings            url default https://api.openai.com
 *   Authorization: Bearer <api_key>
 *   { "model": "<model>", "input": "<text>" | ["<text>", …], "dimensions"?: <num_dim> }
 *   → { "data": [ { "embedding": [ … ], "index": i }, … ], … }
 *   error → { "error": { "message", "type", "param", "code" } }
 *
 * A single query text is sent as a string (as the reference does), batches as arrays.
 * `dimensions` is sent only when the field declares num_dim and no custom `url` is set (many
 * compatible servers reject unknown keys).
 */
import type { EmbedPurpose } from '../types.js';
import { requestJson, withRetries, ProviderError } from './http.js';
import { RemoteModel, trimSlash, type CallOptions } from './remote.js';

export const OPENAI_DEFAULT_URL = 'https://api.openai.com';

export interface OpenAIOptions {
  model: string;
  apiKey: string;
  url?: string;
  numDim?: number;
  fetch: typeof fetch;
}

export class OpenAIModel extends RemoteModel {
  readonly label = 'OpenAI API';
  protected readonly maxBatch = 2048; // OpenAI's limit on inputs per request
  private readonly endpoint: string;

  constructor(private readonly o: OpenAIOptions) {
    super();
    this.endpoint = `${trimSlash(o.url ?? OPENAI_DEFAULT_URL)}/v1/embeddings`;
  }

  private body(texts: string[], purpose: EmbedPurpose): Record<string, unknown> {
    const body: Record<string, unknown> = { model: this.o.model, input: purpose === 'query' && texts.length === 1 ? texts[0] : texts };
    if (this.o.numDim !== undefined && this.o.url === undefined) body.dimensions = this.o.numDim;
    return body;
  }

  protected async requestBatch(texts: string[], call: CallOptions): Promise<unknown[][]> {
    const res = await withRetries(call.numTries, () =>
      requestJson(
        this.o.fetch,
        this.label,
        { url: this.endpoint, headers: { authorization: `Bearer ${this.o.apiKey}` }, body: this.body(texts, call.purpose) },
        call.timeoutMs,
      ),
    );
    const data = (res as { data?: unknown }).data;
    if (!Array.isArray(data)) throw new ProviderError(`${this.label} error: the answer has no \`data\` array`, 200, false);
    const rows = data as Array<{ embedding?: unknown; index?: unknown }>;
    // `index` orders the answers when present; else they are in input order.
    const ordered = rows.every((r) => typeof r?.index === 'number') ? [...rows].sort((a, b) => (a.index as number) - (b.index as number)) : rows;
    return ordered.map((r) => (Array.isArray(r?.embedding) ? (r.embedding as unknown[]) : []));
  }
}
