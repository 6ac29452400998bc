/**
 * `gcp/<model>`: Vertex AI's prediction API, authorised with an OAuth access token that is
 * refreshed with the configured refresh token.
 *
 *   POST <base>/v1/projects/<project_id>/locations/<region>/publishers/google/models/<model>:predict
 *        base default https://<region>-aiplatform.googleapis.com (`model_config.url` replaces it)
 *   Authorization: Bearer <access_token>
 *   { "instances": [ { "content": "…", "task_type": document_task | query_task } ],
 *     "parameters"?: { "outputDimensionality": num_dim } }
 *   → { "predictions": [ { "embeddings": { "values": [ … ], "statistics": … } } ] }
 *   at most EMBED_DEFAULTS.gcpMaxInstances instances per call
 *
 * Token refresh (Google's OAuth 2.0 token endpoint, `model_config.token_url` replaces it):
 *   POST https://oauth2.googleapis.com/token  (form) grant_type=refresh_token, client_id,
 *        client_secret, refresh_token  → { "access_token", "expires_in", … }
 * It happens at load (which also checks the refresh credentials), before a call when the
 * token is about to expire, and when a call is answered 401 (then the call is repeated once,
 * without counting as a try). Concurrent callers share one refresh.
 */
import { EMBED_DEFAULTS } from '../../defaults.js';
import { ProviderError, requestJson, withRetries } from './http.js';
import { RemoteModel, trimSlash, type CallOptions } from './remote.js';
import type { RemoteSpec } from '../config.js';

export const GCP_TOKEN_URL = 'https://oauth2.googleapis.com/token';

export type GcpOptions = RemoteSpec<'gcp'> & { numDim?: number; fetch: typeof fetch };

export class GcpModel extends RemoteModel {
  readonly label = 'GCP API';
  protected readonly maxBatch = EMBED_DEFAULTS.gcpMaxInstances;
  private readonly endpoint: string;
  private accessToken: string;
  /** When the current token expires (ms since epoch); unknown for the configured one. */
  private expiresAt = Infinity;
  private refreshing: Promise<void> | undefined;
  /** Refreshes so far (for tests and diagnostics). */
  refreshCount = 0;

  constructor(private readonly o: GcpOptions) {
    super();
    this.accessToken = o.accessToken;
    const base = trimSlash(o.url ?? `https://${o.region}-aiplatform.googleapis.com`);
    this.endpoint =
      `${base}/v1/projects/${encodeURIComponent(o.projectId)}/locations/${encodeURIComponent(o.region)}` +
      `/publishers/google/models/${encodeURIComponent(o.model)}:predict`;
  }

  /** Gets a new access token; concurrent callers share one request. */
  refresh(timeoutMs: number = EMBED_DEFAULTS.remoteTimeoutMsQuery): Promise<void> {
    this.refreshing ??= (async () => {
      try {
        const form = new URLSearchParams({
          grant_type: 'refresh_token',
          client_id: this.o.clientId,
          client_secret: this.o.clientSecret,
          refresh_token: this.o.refreshToken,
        });
        let res: unknown;
        try {
          res = await requestJson(this.o.fetch, this.label, { url: this.o.tokenUrl ?? GCP_TOKEN_URL, body: form }, timeoutMs);
        } catch (e) {
          const pe = e as ProviderError;
          throw new ProviderError(
            `${this.label} error: refreshing the access token failed: ${pe.message.replace(`${this.label} error: `, '')}`,
            pe.status,
            pe.retryable,
          );
        }
        const r = res as { access_token?: unknown; expires_in?: unknown };
        if (typeof r.access_token !== 'string' || r.access_token.length === 0) {
          throw new ProviderError(`${this.label} error: the token endpoint answered without an access_token`, 200, false);
        }
        this.accessToken = r.access_token;
        this.expiresAt = typeof r.expires_in === 'number' ? Date.now() + r.expires_in * 1000 : Infinity;
        this.refreshCount++;
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }

  /**
   * Load-time check, as the reference does it: the configured access token must work as it
   * is (no refresh), and the refresh credentials must work too.
   */
  protected override async probeRequest(texts: string[], call: CallOptions): Promise<Array<unknown[] | Error>> {
    const res = await this.predict(texts, call, false);
    await this.refresh(call.timeoutMs);
    return this.vectors(res);
  }

  private async predict(texts: string[], call: CallOptions, mayRefresh: boolean): Promise<unknown> {
    const task = call.purpose === 'query' ? this.o.queryTask : this.o.documentTask;
    const body: Record<string, unknown> = { instances: texts.map((content) => ({ content, task_type: task })) };
    if (this.o.numDim !== undefined) body.parameters = { outputDimensionality: this.o.numDim };
    return withRetries(call.numTries, async () => {
      if (mayRefresh && Date.now() > this.expiresAt - EMBED_DEFAULTS.oauthRefreshMarginMs) await this.refresh(call.timeoutMs);
      const send = () =>
        requestJson(this.o.fetch, this.label, { url: this.endpoint, headers: { authorization: `Bearer ${this.accessToken}` }, body }, call.timeoutMs);
      try {
        return await send();
      } catch (e) {
        if (!mayRefresh || !(e instanceof ProviderError) || e.status !== 401) throw e;
        await this.refresh(call.timeoutMs);
        return send();
      }
    });
  }

  protected async requestBatch(texts: string[], call: CallOptions): Promise<Array<unknown[] | Error>> {
    return this.vectors(await this.predict(texts, call, true));
  }

  private vectors(res: unknown): Array<unknown[] | Error> {
    const predictions = (res as { predictions?: unknown }).predictions;
    if (!Array.isArray(predictions)) throw new ProviderError(`${this.label} error: the answer has no \`predictions\` array`, 200, false);
    return predictions.map((p) => {
      const values = (p as { embeddings?: { values?: unknown } })?.embeddings?.values;
      return Array.isArray(values) ? values : new ProviderError(`${this.label} error: a prediction has no embeddings.values`, 200, false);
    });
  }
}
