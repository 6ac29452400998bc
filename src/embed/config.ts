/**
 * `model_config` of an auto-embedding field: validation, and the model it names.
 *
 * `model_name` decides the kind of model:
 *   - `ts/use-lite`        the built-in offline model (Universal Sentence Encoder lite, 512 dims)
 *   - `ts/<name>`          a built-in ONNX model, downloaded once from the model repository
 *   - `openai/<model>`     OpenAI's embeddings API, or any OpenAI-compatible server at `url`
 *   - `google/<model>`     Google's generative language API
 *   - `gcp/<model>`        Vertex AI's prediction API (OAuth access + refresh token)
 *   - `<dir>`              a user model in `<data_dir>/models/<dir>/`
 *
 * Every message names the attribute as `embed.model_config.<key>` so that callers can prefix
 * the field name.
 */
import { EMBED_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';

interface Common {
  /** `model_name` as configured. */
  modelName: string;
  indexingPrefix?: string;
  queryPrefix?: string;
}

export type ModelSpec =
  | (Common & { kind: 'user'; dir: string })
  | (Common & { kind: 'builtin'; name: string })
  | (Common & { kind: 'use-lite' })
  | (Common & { kind: 'openai'; model: string; apiKey: string; url?: string })
  | (Common & { kind: 'google'; model: string; apiKey: string; url?: string; documentTask: string; queryTask: string })
  | (Common & {
      kind: 'gcp';
      model: string;
      projectId: string;
      accessToken: string;
      refreshToken: string;
      clientId: string;
      clientSecret: string;
      region: string;
      url?: string;
      tokenUrl?: string;
      documentTask: string;
      queryTask: string;
    });

export type ModelKind = ModelSpec['kind'];

/** What a remote model of kind K is built from: its spec without the parts every spec has. */
export type RemoteSpec<K extends ModelKind> = Omit<Extract<ModelSpec, { kind: K }>, 'kind' | keyof Common>;

/** Every attribute a model_config may carry, with what it is for. */
export const MODEL_CONFIG_KEYS = {
  model_name: 'which model (see ModelSpec)',
  api_key: 'key for openai/ and google/ models',
  url: 'base URL replacing the vendor API host (openai/, google/, gcp/)',
  access_token: 'gcp/: OAuth access token',
  refresh_token: 'gcp/: OAuth refresh token',
  client_id: 'gcp/: OAuth client id',
  client_secret: 'gcp/: OAuth client secret',
  project_id: 'gcp/: Google Cloud project',
  region: `gcp/: Vertex AI region (default ${EMBED_DEFAULTS.gcpRegion})`,
  token_url: 'gcp/: OAuth token endpoint replacing Google\'s',
  document_task: `google/, gcp/: task type sent with documents (default ${EMBED_DEFAULTS.gcpDocumentTask})`,
  query_task: `google/, gcp/: task type sent with queries (default ${EMBED_DEFAULTS.gcpQueryTask})`,
  indexing_prefix: 'text put before every document text, followed by a space',
  query_prefix: 'text put before every query, followed by a space',
} as const;

const NAME_PART = /^[A-Za-z0-9][A-Za-z0-9._@-]*$/;

function bad(message: string): never {
  throw new FathomError('BAD_SCHEMA', message);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Validates a model_config and says which model it names. Cheap and synchronous: no file
 * or network access (a missing user model directory or a bad API key shows at load time).
 * Throws FathomError('BAD_SCHEMA') naming the offending attribute.
 */
export function parseModelConfig(config: unknown): ModelSpec {
  if (!isPlainObject(config)) bad('`embed.model_config` must be an object');
  for (const key of Object.keys(config)) {
    if (!Object.hasOwn(MODEL_CONFIG_KEYS, key)) {
      bad(`\`embed.model_config\` has an unknown attribute \`${key}\` (known: ${Object.keys(MODEL_CONFIG_KEYS).join(', ')})`);
    }
  }
  const str = (key: keyof typeof MODEL_CONFIG_KEYS): string | undefined => {
    const v = config[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') bad(`\`embed.model_config.${key}\` must be a string`);
    return v;
  };
  const name = str('model_name');
  if (name === undefined || name.length === 0) bad('`embed.model_config.model_name` is required');
  const common: Common = { modelName: name, indexingPrefix: str('indexing_prefix'), queryPrefix: str('query_prefix') };
  for (const key of ['url', 'token_url'] as const) {
    const u = str(key);
    if (u === undefined) continue;
    let parsed: URL;
    try {
      parsed = new URL(u);
    } catch {
      bad(`\`embed.model_config.${key}\` must be an http(s) URL, got "${u}"`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') bad(`\`embed.model_config.${key}\` must be an http(s) URL, got "${u}"`);
  }
  const required = (key: keyof typeof MODEL_CONFIG_KEYS, what: string): string => {
    const v = str(key);
    if (v === undefined || v.length === 0) bad(`\`embed.model_config.${key}\` is required for ${what} models`);
    return v;
  };

  const slash = name.indexOf('/');
  if (slash < 0) {
    if (!NAME_PART.test(name)) {
      bad(`\`embed.model_config.model_name\` "${name}" is not a valid model directory name (letters, digits, '.', '_', '-'; not starting with '.')`);
    }
    return { ...common, kind: 'user', dir: name };
  }
  const ns = name.slice(0, slash);
  const rest = name.slice(slash + 1);
  if (rest.length === 0) bad(`\`embed.model_config.model_name\` "${name}" names no model after \`${ns}/\``);
  switch (ns) {
    case 'ts':
      if (!NAME_PART.test(rest)) bad(`\`embed.model_config.model_name\` "${name}" is not a valid built-in model name`);
      return rest === 'use-lite' ? { ...common, kind: 'use-lite' } : { ...common, kind: 'builtin', name: rest };
    case 'openai':
      return { ...common, kind: 'openai', model: rest, apiKey: required('api_key', 'OpenAI (`openai/<model>`)'), url: str('url') };
    case 'google':
      if (!NAME_PART.test(rest)) bad(`\`embed.model_config.model_name\` "${name}" is not a valid Google model name`);
      return {
        ...common,
        kind: 'google',
        model: rest,
        apiKey: required('api_key', 'Google (`google/<model>`)'),
        url: str('url'),
        documentTask: str('document_task') ?? EMBED_DEFAULTS.gcpDocumentTask,
        queryTask: str('query_task') ?? EMBED_DEFAULTS.gcpQueryTask,
      };
    case 'gcp': {
      if (!NAME_PART.test(rest)) bad(`\`embed.model_config.model_name\` "${name}" is not a valid Vertex AI model name`);
      const what = 'Google Cloud (`gcp/<model>`)';
      const region = str('region') ?? EMBED_DEFAULTS.gcpRegion;
      if (!/^[a-z0-9-]+$/.test(region)) bad(`\`embed.model_config.region\` "${region}" is not a valid region name`);
      return {
        ...common,
        kind: 'gcp',
        model: rest,
        projectId: required('project_id', what),
        accessToken: required('access_token', what),
        refreshToken: required('refresh_token', what),
        clientId: required('client_id', what),
        clientSecret: required('client_secret', what),
        region,
        url: str('url'),
        tokenUrl: str('token_url'),
        documentTask: str('document_task') ?? EMBED_DEFAULTS.gcpDocumentTask,
        queryTask: str('query_task') ?? EMBED_DEFAULTS.gcpQueryTask,
      };
    }
    default:
      return bad(
        `\`embed.model_config.model_name\` "${name}": unknown model namespace \`${ns}/\`; use \`ts/<model>\` (built-in), ` +
          '`openai/<model>`, `google/<model>`, `gcp/<model>`, or the name of a directory under `<data_dir>/models`',
      );
  }
}

/** Prepends a prefix as the reference does: the prefix, one space, the text (nothing when the prefix is empty). */
export function withPrefix(prefix: string | undefined, text: string): string {
  return prefix ? `${prefix} ${text}` : text;
}
