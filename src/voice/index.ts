/**
 * src/voice: here is a spoken query, what did it say?
 *
 * A collection's `voice_query_model` (config.ts) names a recogniser; it is checked when the
 * collection is created (downloaded, loaded, probed: 400 when it cannot be had). A search
 * with `voice_query` (Base64 WAV, 16 kHz 16-bit mono PCM, wav.ts) is transcribed and the
 * text becomes `q`; the answer's `request_params.voice_query.transcribed_query` shows it.
 *
 *   model_name            recogniser                                  module
 *   ts/whisper/<name>     whisper.cpp (ggml), downloaded once         whisper.ts
 *   openai/<model>        OpenAI-compatible /v1/audio/transcriptions  remote.ts
 *   pocketsphinx/en-us    Debian's pocketsphinx, offline              pocketsphinx.ts
 *
 * Recognisers are loaded once per process and configuration; one whose process died is
 * loaded again by the next query.
 */
import path from 'node:path';
import { VOICE_DEFAULTS } from '../defaults.js';
import { FathomError, isFathomError } from '../errors.js';
import { DownloadError } from '../embed/repository.js';
import { ProviderError } from '../embed/remote/http.js';
import type { CollectionRecord } from '../schema/schema.js';
import { parseVoiceModel, type VoiceSpec } from './config.js';
import { isPlainObject } from '../json.js';
import { openFields } from '../storage/secrets.js';
import { PocketsphinxRecognizer } from './pocketsphinx.js';
import type { Recognizer } from './recognizer.js';
import { RemoteTranscriber } from './remote.js';
import { readWav, voiceBytes } from './wav.js';
import { ensureWhisperModel, WhisperRecognizer } from './whisper.js';

export { parseVoiceModel, publicVoiceModel } from './config.js';
export type { Recognizer } from './recognizer.js';

export interface VoiceEnv {
  /** Data directory: whisper models are cached in `<dataDir>/models/audio_query/`. */
  dataDir: string;
  /** Base URL of the model repository (default EMBED_DEFAULTS.modelRepositoryUrl). */
  modelRepositoryUrl?: string;
  fetch?: typeof fetch;
}

const recognizers = new Map<string, Promise<Recognizer>>();

function keyOf(spec: VoiceSpec, env: VoiceEnv): string {
  switch (spec.kind) {
    case 'whisper':
      return JSON.stringify(['whisper', path.resolve(env.dataDir), spec.name]);
    case 'openai':
      return JSON.stringify(['openai', spec.model, spec.apiKey ?? '', spec.url ?? '']);
    case 'pocketsphinx':
      return JSON.stringify(['pocketsphinx', spec.modelName, spec.hmm ?? '', spec.lm ?? '', spec.dict ?? '']);
  }
}

async function load(spec: VoiceSpec, env: VoiceEnv): Promise<Recognizer> {
  switch (spec.kind) {
    case 'whisper': {
      const file = await ensureWhisperModel(spec.name, { dataDir: env.dataDir, baseUrl: env.modelRepositoryUrl, fetch: env.fetch });
      return WhisperRecognizer.load(spec.modelName, file);
    }
    case 'openai': {
      const r = new RemoteTranscriber(spec.modelName, spec.model, spec.apiKey, spec.url, env.fetch ?? globalThis.fetch);
      // one short request checks the address and the key, as the remote embedders' probe does
      await r.transcribe(new Int16Array(VOICE_DEFAULTS.sampleRate / 2));
      return r;
    }
    case 'pocketsphinx':
      return PocketsphinxRecognizer.load(spec.modelName, {
        hmm: spec.hmm ?? VOICE_DEFAULTS.pocketsphinxHmm,
        lm: spec.lm ?? VOICE_DEFAULTS.pocketsphinxLm,
        dict: spec.dict ?? VOICE_DEFAULTS.pocketsphinxDict,
      });
  }
}

/**
 * The recogniser of a voice_query_model, loaded on first use (downloaded, started, probed).
 * FathomError('BAD_SCHEMA') naming the model and the reason when it cannot be had.
 */
export async function loadRecognizer(raw: unknown, env: VoiceEnv): Promise<Recognizer> {
  const spec = parseVoiceModel(isPlainObject(raw) ? openFields(raw, ['api_key'], 'the `voice_query_model`') : raw);
  const key = keyOf(spec, env);
  let p = recognizers.get(key);
  if (p) {
    const r = await p.catch(() => undefined);
    if (r?.failed && recognizers.get(key) === p) {
      recognizers.delete(key);
      await r.close().catch(() => undefined);
      p = undefined;
    }
  }
  if (!p) {
    const mine = load(spec, env).catch((e: unknown) => {
      if (recognizers.get(key) === mine) recognizers.delete(key);
      const msg = (e as Error)?.message ?? String(e);
      throw new FathomError('BAD_SCHEMA', `\`voice_query_model\`: ${e instanceof DownloadError ? 'cannot download' : 'cannot load'} \`${spec.modelName}\`: ${msg}`);
    });
    recognizers.set(key, mine);
    p = mine;
  }
  return p;
}

/** Checks a collection's voice_query_model at creation: known, and available or fetchable. */
export async function checkVoiceModel(raw: unknown, env: VoiceEnv): Promise<void> {
  await loadRecognizer(raw, env);
}

/** Stops every recogniser process and forgets them (shutdown, tests). */
export async function closeRecognizers(): Promise<void> {
  const all = [...recognizers.values()];
  recognizers.clear();
  await Promise.all(all.map((p) => p.then((r) => r.close(), () => undefined)));
}

function bad(message: string): never {
  throw new FathomError('BAD_PARAMETER', message);
}

/**
 * A search's `voice_query` turned into its `q`: the parameters to search with (q set,
 * voice_query removed) and the transcription. 400 for audio that is not what is needed,
 * for `q` sent along, for a collection without voice_query_model and for audio in which
 * nothing was recognised; 503 when the recogniser fails.
 */
export async function transcribeVoiceQuery(record: CollectionRecord, raw: Record<string, unknown>, env: VoiceEnv): Promise<{ params: Record<string, unknown>; text: string }> {
  if (raw.q !== undefined && raw.q !== null) bad('`voice_query` and `q` cannot be sent together: the audio is transcribed into `q`');
  if (!record.voice_query_model) {
    bad(`collection \`${record.name}\` has no \`voice_query_model\`; give it one (e.g. {"model_name": "ts/whisper/base.en"}) when creating the collection to search it by voice`);
  }
  const pcm = readWav(voiceBytes(raw.voice_query));
  let recognizer: Recognizer;
  try {
    recognizer = await loadRecognizer(record.voice_query_model, env);
  } catch (e) {
    if (!isFathomError(e)) throw e;
    throw new FathomError('SERVICE_UNAVAILABLE', e.message);
  }
  let text: string;
  try {
    text = await recognizer.transcribe(pcm.samples);
  } catch (e) {
    const msg = (e as Error)?.message ?? String(e);
    if (e instanceof ProviderError && e.status !== undefined && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429) {
      throw new FathomError('BAD_REQUEST', `voice_query: ${msg}`);
    }
    throw new FathomError('SERVICE_UNAVAILABLE', `voice_query: the transcription failed: ${msg}`);
  }
  if (!text) bad(`voice_query: no speech was recognised in the ${pcm.seconds.toFixed(1)} s of audio`);
  const { voice_query: _audio, ...rest } = raw;
  return { params: { ...rest, q: text }, text };
}
