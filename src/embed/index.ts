/**
 * src/embed: here is some text, give me its vector.
 *
 * `loadEmbedder(model_config, env)` validates a field's model_config and returns an Embedder:
 * `embed(texts, {purpose})` gives one unit vector per text. Models are loaded (downloaded,
 * probed) once per process; concurrent callers share one load and later calls are a map
 * lookup, so callers may call loadEmbedder per operation instead of keeping the Embedder.
 * Local models run in a worker thread each, so neither loading nor inference blocks the
 * event loop for long.
 *
 *   model_name            kind                              module
 *   ts/use-lite           built-in offline USE lite         use-lite.ts
 *   ts/<name>             built-in ONNX, downloaded once    repository.ts + onnx.ts (clip.ts for image-text models)
 *   <dir>                 user ONNX in <data_dir>/models    onnx.ts (+ tokenizers/), clip.ts
 *   openai/<model>        OpenAI or compatible server       remote/openai.ts
 *   google/<model>        Google generative language API    remote/google.ts
 *   gcp/<model>           Vertex AI prediction API          remote/gcp.ts
 */
import path from 'node:path';
import fsp from 'node:fs/promises';
import { FathomError } from '../errors.js';
import { MODEL_CONFIG_SECRETS, openFields } from '../storage/secrets.js';
import { parseModelConfig, withPrefix, type ModelSpec } from './config.js';
import { ClipModel } from './clip.js';
import { closeImagePreparer } from './image/images.js';
import { ModelFilesError, OnnxModel, readModelConfig } from './onnx.js';
import { DownloadError, ensureBuiltinModel } from './repository.js';
import { GcpModel } from './remote/gcp.js';
import { GoogleModel } from './remote/google.js';
import { OpenAIModel } from './remote/openai.js';
import type { RemoteModel } from './remote/remote.js';
import { EmbeddingError, type EmbedEnv, type EmbedOptions, type Embedder, type LoadOptions, type TextModel } from './types.js';
import { UseLiteModel } from './use-lite.js';

export type { Embedder, EmbedEnv, EmbedOptions, EmbedPurpose, LoadOptions, TextModel } from './types.js';
export { EmbeddingError, l2normalize } from './types.js';
export { parseModelConfig, withPrefix, MODEL_CONFIG_KEYS, type ModelSpec, type ModelKind } from './config.js';
export { cachedEmbedQuery, clearQueryCache, queryCacheSize } from './cache.js';
export { builtinModelDir } from './repository.js';

/** A loaded model and the prefixes its own files suggest (a built-in model's repository config). */
interface Loaded {
  model: TextModel & { failed?: Error };
  indexingPrefix?: string;
  queryPrefix?: string;
}

const models = new Map<string, Promise<Loaded>>();
const embedders = new Map<string, Promise<Embedder>>();

/** An Embedder: a model plus the field's prefixes. */
class ModelEmbedder implements Embedder {
  constructor(
    readonly modelName: string,
    private readonly model: TextModel,
    private readonly indexingPrefix: string | undefined,
    private readonly queryPrefix: string | undefined,
  ) {}

  get dims(): number {
    return this.model.dims;
  }

  embedEach(texts: string[], opts: EmbedOptions): Promise<Array<Float32Array | Error>> {
    const prefix = opts.purpose === 'query' ? this.queryPrefix : this.indexingPrefix;
    return this.model.run(prefix ? texts.map((t) => withPrefix(prefix, t)) : texts, opts);
  }

  get embedImages(): ((images: string[]) => Promise<Array<Float32Array | Error>>) | undefined {
    const m = this.model;
    return m.runImages ? (images) => m.runImages!(images) : undefined;
  }

  async embed(texts: string[], opts: EmbedOptions): Promise<Float32Array[]> {
    const out = await this.embedEach(texts, opts);
    for (const v of out) if (v instanceof Error) throw v;
    return out as Float32Array[];
  }
}

/** Identifies a model instance: same key, same loaded model. Credentials are part of it. */
function modelKey(spec: ModelSpec, env: EmbedEnv, opts: LoadOptions): string {
  const dataDir = path.resolve(env.dataDir);
  switch (spec.kind) {
    case 'user':
      return JSON.stringify(['user', dataDir, spec.dir]);
    case 'builtin':
      return JSON.stringify(['ts', dataDir, spec.name]);
    case 'use-lite':
      return 'use-lite';
    case 'openai':
      return JSON.stringify(['openai', spec.model, spec.url ?? '', spec.apiKey, opts.numDim ?? 0]);
    case 'google':
      return JSON.stringify(['google', spec.model, spec.url ?? '', spec.apiKey, spec.documentTask, spec.queryTask, opts.numDim ?? 0]);
    case 'gcp':
      return JSON.stringify([
        'gcp', spec.model, spec.projectId, spec.region, spec.url ?? '', spec.tokenUrl ?? '',
        spec.clientId, spec.clientSecret, spec.refreshToken, spec.documentTask, spec.queryTask, opts.numDim ?? 0,
      ]);
  }
}

async function loadLocal(dir: string, label: string): Promise<Loaded> {
  const st = await fsp.stat(dir).catch(() => undefined);
  if (!st?.isDirectory()) throw new ModelFilesError(`the model directory ${dir} does not exist`);
  const cfg = await readModelConfig(dir);
  const model = cfg.model_type === 'clip' ? await ClipModel.load(dir, cfg, label) : await OnnxModel.load(dir, label);
  const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
  return { model, indexingPrefix: str(cfg.indexing_prefix), queryPrefix: str(cfg.query_prefix) };
}

async function loadModel(spec: ModelSpec, env: EmbedEnv, opts: LoadOptions): Promise<Loaded> {
  const fetchImpl = env.fetch ?? globalThis.fetch;
  let remote: RemoteModel;
  switch (spec.kind) {
    case 'user':
      return loadLocal(path.join(env.dataDir, 'models', spec.dir), spec.modelName);
    case 'builtin': {
      const dir = await ensureBuiltinModel(spec.name, { dataDir: env.dataDir, baseUrl: env.modelRepositoryUrl, fetch: env.fetch });
      return loadLocal(dir, spec.modelName);
    }
    case 'use-lite':
      return { model: await UseLiteModel.load(spec.modelName) };
    case 'openai':
      remote = new OpenAIModel({ model: spec.model, apiKey: spec.apiKey, url: spec.url, numDim: opts.numDim, fetch: fetchImpl });
      break;
    case 'google':
      remote = new GoogleModel({ ...spec, numDim: opts.numDim, fetch: fetchImpl });
      break;
    case 'gcp':
      remote = new GcpModel({ ...spec, numDim: opts.numDim, fetch: fetchImpl });
      break;
  }
  await remote.probe();
  return { model: remote };
}

function loadError(spec: ModelSpec, e: unknown): FathomError {
  if (e instanceof EmbeddingError) return new FathomError('BAD_SCHEMA', e.message);
  if (e instanceof FathomError) return e;
  const msg = (e as Error)?.message ?? String(e);
  if (e instanceof DownloadError) return new FathomError('BAD_SCHEMA', `cannot download model \`${spec.modelName}\`: ${msg}`);
  return new FathomError('BAD_SCHEMA', `cannot load model \`${spec.modelName}\`: ${msg}`);
}

function getModel(spec: ModelSpec, env: EmbedEnv, opts: LoadOptions): Promise<Loaded> {
  const key = modelKey(spec, env, opts);
  let p = models.get(key);
  if (p) return p;
  p = loadModel(spec, env, opts).catch((e) => {
    models.delete(key);
    throw loadError(spec, e);
  });
  models.set(key, p);
  return p;
}

/**
 * Validates a model_config (FathomError 'BAD_SCHEMA' naming the attribute) and returns its
 * Embedder, loading the model on first use: reading a user model, downloading a built-in one,
 * or probing a remote API once (which checks the credentials and learns the dimension).
 * Load failures are FathomError('BAD_SCHEMA') with the reason (the provider's message for
 * remote models); a failed load is retried by the next call.
 */
export async function loadEmbedder(modelConfig: Record<string, unknown>, env: EmbedEnv, opts: LoadOptions = {}): Promise<Embedder> {
  // credentials stored encrypted are opened here, where they are used
  const spec = parseModelConfig(openFields(modelConfig, MODEL_CONFIG_SECRETS, `the \`model_config\` of \`${String(modelConfig.model_name)}\``));
  const mkey = modelKey(spec, env, opts);
  const ekey = `${mkey}\u0000${JSON.stringify([spec.modelName, spec.indexingPrefix ?? null, spec.queryPrefix ?? null])}`;
  const cached = models.get(mkey);
  if (cached) {
    // A model whose inference thread died is dropped and loaded again.
    const loaded = await cached.catch(() => undefined);
    if (loaded?.model.failed && models.get(mkey) === cached) {
      models.delete(mkey);
      for (const k of [...embedders.keys()]) if (k.startsWith(mkey + '\u0000')) embedders.delete(k);
      await loaded.model.close().catch(() => undefined);
    }
  }
  let e = embedders.get(ekey);
  if (!e) {
    e = getModel(spec, env, opts).then(
      (l) => new ModelEmbedder(spec.modelName, l.model, spec.indexingPrefix ?? l.indexingPrefix, spec.queryPrefix ?? l.queryPrefix),
    );
    const mine = e;
    mine.catch(() => {
      if (embedders.get(ekey) === mine) embedders.delete(ekey);
    });
    embedders.set(ekey, mine);
  }
  return e;
}

/** Cheap synchronous checks of a model_config at schema-validation time (name form, required credentials). */
export function checkModelConfig(modelConfig: Record<string, unknown>): void {
  parseModelConfig(modelConfig);
}

/** Stops every loaded model's threads and forgets all models (engine shutdown, tests). */
export async function closeEmbedders(): Promise<void> {
  const all = [...models.values()];
  models.clear();
  embedders.clear();
  await Promise.all(all.map((p) => p.then((l) => l.model.close(), () => undefined)));
  await closeImagePreparer();
}
