/**
 * `voice_query_model` of a collection: which speech recogniser transcribes its voice queries.
 *
 *   ts/whisper/<name>     a whisper.cpp (ggml) model from the model repository, downloaded once
 *                         into <data_dir>/models/audio_query/whisper/<name>.bin (base.en, base,
 *                         tiny.en, small.en, medium, large-v3, ...)
 *   openai/<model>        OpenAI's transcription API (`openai/whisper-1`, needs `api_key`), or
 *                         any server at `url` speaking POST /v1/audio/transcriptions
 *   pocketsphinx/en-us    CMU PocketSphinx with Debian's US English model (apt-get install
 *                         pocketsphinx pocketsphinx-en-us): offline, nothing to download
 *
 * Validation here is cheap and synchronous; whether the model can be had is checked when
 * the collection is created (voice/index.ts).
 */
import { FathomError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { plainOrUndefined } from '../storage/secrets.js';

export type VoiceSpec =
  | { kind: 'whisper'; modelName: string; name: string }
  | { kind: 'openai'; modelName: string; model: string; apiKey?: string; url?: string }
  | { kind: 'pocketsphinx'; modelName: string; hmm?: string; lm?: string; dict?: string };

/** Every attribute a voice_query_model may carry. */
export const VOICE_MODEL_KEYS = ['model_name', 'api_key', 'url', 'hmm', 'lm', 'dict'] as const;

const NAME_PART = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function bad(message: string): never {
  throw new FathomError('BAD_SCHEMA', `\`voice_query_model\`: ${message}`);
}

export function parseVoiceModel(raw: unknown): VoiceSpec {
  if (!isPlainObject(raw)) bad('must be an object with a `model_name` such as "ts/whisper/base.en"');
  for (const k of Object.keys(raw)) if (!(VOICE_MODEL_KEYS as readonly string[]).includes(k)) bad(`unknown attribute \`${k}\` (known: ${VOICE_MODEL_KEYS.join(', ')})`);
  const str = (k: string): string | undefined => {
    const v = raw[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v.length === 0) bad(`\`${k}\` must be a non-empty string`);
    return v;
  };
  const name = str('model_name');
  if (!name) bad('`model_name` is required, e.g. "ts/whisper/base.en", "openai/whisper-1" or "pocketsphinx/en-us"');
  const url = str('url');
  if (url !== undefined) {
    let u: URL | undefined;
    try {
      u = new URL(url);
    } catch {
      /* reported below */
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) bad(`\`url\` must be an http(s) URL, got "${url}"`);
  }
  const onlyFor = (keys: string[], what: string) => {
    for (const k of keys) if (raw[k] !== undefined) bad(`\`${k}\` applies to ${what} models only`);
  };
  const slash = name.indexOf('/');
  const ns = slash < 0 ? '' : name.slice(0, slash);
  const rest = name.slice(slash + 1);
  if (ns === 'ts' && rest.startsWith('whisper/')) {
    const model = rest.slice('whisper/'.length);
    if (!NAME_PART.test(model)) bad(`"${name}" is not a valid whisper model name (e.g. ts/whisper/base.en)`);
    onlyFor(['api_key', 'url', 'hmm', 'lm', 'dict'], 'remote or pocketsphinx');
    return { kind: 'whisper', modelName: name, name: model };
  }
  if (ns === 'openai') {
    if (!rest) bad(`"${name}" names no model after \`openai/\``);
    const apiKey = str('api_key');
    if (apiKey === undefined && url === undefined) bad('`api_key` is required for OpenAI (`openai/<model>`) transcription, unless `url` names another server');
    onlyFor(['hmm', 'lm', 'dict'], 'pocketsphinx');
    return { kind: 'openai', modelName: name, model: rest, apiKey, url };
  }
  if (ns === 'pocketsphinx') {
    if (rest !== 'en-us' && (raw.hmm === undefined || raw.lm === undefined || raw.dict === undefined)) {
      bad(`"${name}": the built-in pocketsphinx model is \`pocketsphinx/en-us\`; another name needs \`hmm\`, \`lm\` and \`dict\` paths`);
    }
    onlyFor(['api_key', 'url'], 'remote');
    return { kind: 'pocketsphinx', modelName: name, hmm: str('hmm'), lm: str('lm'), dict: str('dict') };
  }
  return bad(`unknown model "${name}"; use \`ts/whisper/<model>\` (e.g. ts/whisper/base.en), \`openai/<model>\` (e.g. openai/whisper-1) or \`pocketsphinx/en-us\``);
}

/** The model config as shown in a collection's schema: an `api_key` is masked (opened first when it is stored encrypted). */
export function publicVoiceModel(raw: Record<string, unknown>): Record<string, unknown> {
  if (typeof raw.api_key !== 'string') return raw;
  const k = plainOrUndefined(raw.api_key) ?? '';
  return { ...raw, api_key: `${k.length >= 12 ? k.slice(0, 3) : ''}${'*'.repeat(8)}` };
}
