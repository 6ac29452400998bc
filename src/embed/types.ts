/**
 * The contracts of the embedding module, shared by every model kind.
 *
 * Two layers: a `TextModel` turns finished texts into unit vectors (one per model and
 * credentials, cached per process); an `Embedder` is what callers use — a model plus the
 * field's `indexing_prefix` / `query_prefix`.
 */
import { FathomError, type ErrorCode } from '../errors.js';

export type EmbedPurpose = 'index' | 'query';

export interface EmbedOptions {
  /** 'index' for document texts (indexing_prefix, long timeout), 'query' for search text (query_prefix, short timeout). */
  purpose: EmbedPurpose;
  /**
   * Texts per request to a remote model (`remote_embedding_batch_size`, default 200; vendors'
   * own limits still apply). Local models use the smaller of this and their own batch size.
   */
  batchSize?: number;
  /** Per-attempt timeout of a remote request, ms (`remote_embedding_timeout_ms`; default 60000 index / 30000 query). */
  timeoutMs?: number;
  /** Attempts per remote request, the first included (`remote_embedding_num_tries`, default 2). */
  numTries?: number;
}

export interface Embedder {
  /** `model_name` as configured, e.g. 'ts/all-MiniLM-L12-v2', 'openai/text-embedding-3-small', 'my-model'. */
  readonly modelName: string;
  /** Vector length, known once loaded. */
  readonly dims: number;
  /**
   * One L2-normalised vector per text, in order. The configured prefix for `purpose` is
   * applied here. Any failure rejects the whole call with an EmbeddingError.
   */
  embed(texts: string[], opts: EmbedOptions): Promise<Float32Array[]>;
  /** As `embed`, but a failure fails only the texts it concerns (imports). Local models never fail one text alone. */
  embedEach?(texts: string[], opts: EmbedOptions): Promise<Array<Float32Array | Error>>;
  /**
   * Image-text models only: one unit vector per Base64 image (BMP, JPEG, PNG), in the
   * texts' space; an image that cannot be decoded gets an Error in its slot.
   */
  embedImages?(images: string[]): Promise<Array<Float32Array | Error>>;
}

export interface EmbedEnv {
  /** Data directory; user models live in `<dataDir>/models/<dir>/`, downloaded ones in `<dataDir>/models/ts/<name>/`. */
  dataDir: string;
  /** Base URL of the `ts/` model repository (default EMBED_DEFAULTS.modelRepositoryUrl). */
  modelRepositoryUrl?: string;
  /** fetch used for downloads and remote APIs (default: the global fetch). */
  fetch?: typeof fetch;
}

/** Options the caller knows from the field, beyond model_config. */
export interface LoadOptions {
  /**
   * The field's declared `num_dim`. Remote models that can shorten their vectors are asked
   * for this many dimensions (OpenAI `dimensions`, Google/Vertex `outputDimensionality`);
   * local models ignore it (the caller compares it with `dims`).
   */
  numDim?: number;
}

/** A loaded model: finished texts (prefixes applied) in, unit vectors out. */
export interface TextModel {
  readonly dims: number;
  /**
   * One result per text, in order. `texts` are final (prefixes applied). Throws for failures
   * that concern the whole call; returns an Error in a slot for a failure of that text's
   * request only.
   */
  run(texts: string[], opts: EmbedOptions): Promise<Array<Float32Array | Error>>;
  /** Image-text models: Base64 images to vectors in the texts' space (an Error in the slot of an image that cannot be decoded). */
  runImages?(images: string[]): Promise<Array<Float32Array | Error>>;
  /** Releases threads and native resources. The model is unusable afterwards. */
  close(): Promise<void>;
}

/**
 * A failed embedding. `providerStatus` is the HTTP status a remote API answered, when it did.
 * Codes: BAD_REQUEST when the provider refused the request (4xx), SERVICE_UNAVAILABLE when it
 * failed, timed out or was unreachable, INTERNAL for local inference failures.
 */
export class EmbeddingError extends FathomError {
  readonly providerStatus?: number;
  constructor(code: ErrorCode, message: string, providerStatus?: number) {
    super(code, message);
    this.name = 'EmbeddingError';
    this.providerStatus = providerStatus;
  }
}

/** Scales `v` to unit length in place (a zero vector stays zero) and returns it. Hot path. */
export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let i = 0; i < v.length; i++) v[i]! *= inv;
  }
  return v;
}

/** A unit Float32Array from a JSON number array; undefined when it is not a non-empty array of finite numbers. */
export function toUnitVector(values: unknown): Float32Array | undefined {
  if (!Array.isArray(values) || values.length === 0) return undefined;
  const v = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) return undefined;
    v[i] = x;
  }
  return l2normalize(v);
}
