/**
 * `openai/<model>`: OpenAI's transcription API (`openai/whisper-1`), or any server at `url`
 * speaking its protocol: POST <url>/v1/audio/transcriptions, multipart/form-data with `file`
 * (the WAV) and `model`, answered with JSON `{text}`. Errors come back as the provider's own
 * message; network failures, timeouts, 408, 429 and 5xx are retried with back-off
 * (VOICE_DEFAULTS.remoteNumTries attempts of VOICE_DEFAULTS.remoteTimeoutMs each), other
 * 4xx are not.
 */
import { VOICE_DEFAULTS } from '../defaults.js';
import { ProviderError, providerMessage, withRetries } from '../embed/remote/http.js';
import type { Recognizer } from './recognizer.js';
import { wavFile } from './wav.js';

const OPENAI_URL = 'https://api.openai.com';

export class RemoteTranscriber implements Recognizer {
  constructor(
    readonly modelName: string,
    private readonly model: string,
    private readonly apiKey: string | undefined,
    private readonly url: string | undefined,
    private readonly fetchImpl: typeof fetch = globalThis.fetch,
  ) {}

  private get endpoint(): string {
    return `${(this.url ?? OPENAI_URL).replace(/\/+$/, '')}/v1/audio/transcriptions`;
  }

  private async once(wav: Buffer): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([wav], { type: 'audio/wav' }), 'voice_query.wav');
    form.append('model', this.model);
    form.append('response_format', 'json');
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    const timeout = VOICE_DEFAULTS.remoteTimeoutMs;
    const signal = AbortSignal.timeout(timeout);
    const label = 'transcription API';
    let res: Response;
    let text: string;
    try {
      res = await this.fetchImpl(this.endpoint, { method: 'POST', headers, body: form, signal });
      text = await res.text();
    } catch (e) {
      if (signal.aborted) throw new ProviderError(`${label} error: no answer within ${timeout} ms`, undefined, true);
      const cause = (e as Error & { cause?: Error }).cause?.message ?? (e as Error).message;
      throw new ProviderError(`${label} error: cannot reach ${new URL(this.endpoint).origin}: ${cause}`, undefined, true);
    }
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (res.status < 200 || res.status > 299) {
      throw new ProviderError(`${label} error: ${providerMessage(body, text, res.status)}`, res.status, res.status === 408 || res.status === 429 || res.status >= 500);
    }
    const t = (body as { text?: unknown } | undefined)?.text;
    if (typeof t !== 'string') throw new ProviderError(`${label} error: the answer has no \`text\``, res.status, false);
    return t.trim();
  }

  transcribe(samples: Int16Array): Promise<string> {
    const wav = wavFile(samples);
    return withRetries(VOICE_DEFAULTS.remoteNumTries, () => this.once(wav));
  }

  async close(): Promise<void> {}
}
