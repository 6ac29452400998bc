/**
 * model_config validation: which model a config names, and precise messages for bad ones.
 * checkModelConfig is synchronous and touches neither disk nor network.
 */
import { describe, expect, it } from 'vitest';
import { EMBED_DEFAULTS } from '../src/defaults.js';
import { checkModelConfig, parseModelConfig, withPrefix } from '../src/embed/index.js';
import { FathomError } from '../src/errors.js';

function rejects(config: unknown, re: RegExp): void {
  let err: unknown;
  try {
    checkModelConfig(config as Record<string, unknown>);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(FathomError);
  expect((err as FathomError).code).toBe('BAD_SCHEMA');
  expect((err as Error).message).toMatch(re);
}

const gcp = { model_name: 'gcp/text-embedding-004', project_id: 'p', access_token: 'a', refresh_token: 'r', client_id: 'c', client_secret: 's' };

describe('a model_config', () => {
  it('names a user model by a directory name under <data_dir>/models', () => {
    expect(parseModelConfig({ model_name: 'my-model_v2.1' })).toMatchObject({ kind: 'user', dir: 'my-model_v2.1' });
  });

  it('names a built-in model with ts/, ts/use-lite being the offline one', () => {
    expect(parseModelConfig({ model_name: 'ts/all-MiniLM-L12-v2' })).toMatchObject({ kind: 'builtin', name: 'all-MiniLM-L12-v2' });
    expect(parseModelConfig({ model_name: 'ts/use-lite' })).toMatchObject({ kind: 'use-lite' });
  });

  it('names remote models with their vendor prefix, keeping the rest of the name as the model', () => {
    expect(parseModelConfig({ model_name: 'openai/BAAI/bge-small', api_key: 'k', url: 'http://localhost:8000' })).toMatchObject({
      kind: 'openai',
      model: 'BAAI/bge-small',
      url: 'http://localhost:8000',
    });
    expect(parseModelConfig({ model_name: 'google/embedding-gecko-001', api_key: 'k' })).toMatchObject({ kind: 'google', model: 'embedding-gecko-001' });
    expect(parseModelConfig(gcp)).toMatchObject({ kind: 'gcp', model: 'text-embedding-004', region: 'us-central1', documentTask: 'RETRIEVAL_DOCUMENT', queryTask: 'RETRIEVAL_QUERY' });
    expect(parseModelConfig({ ...gcp, model_name: 'gcp/textembedding-gecko@003', region: 'europe-west4' })).toMatchObject({ model: 'textembedding-gecko@003', region: 'europe-west4' });
  });

  it('keeps indexing_prefix and query_prefix, which are followed by a space when applied', () => {
    expect(parseModelConfig({ model_name: 'm', indexing_prefix: 'passage:', query_prefix: 'query:' })).toMatchObject({ indexingPrefix: 'passage:', queryPrefix: 'query:' });
    expect(withPrefix('query:', 'red shoes')).toBe('query: red shoes');
    expect(withPrefix('', 'red shoes')).toBe('red shoes');
    expect(withPrefix(undefined, 'red shoes')).toBe('red shoes');
  });

  it('must be an object with a model_name', () => {
    rejects('ts/x', /`embed.model_config` must be an object/);
    rejects({}, /`embed.model_config.model_name` is required/);
    rejects({ model_name: '' }, /`embed.model_config.model_name` is required/);
    rejects({ model_name: 42 }, /`embed.model_config.model_name` must be a string/);
  });

  it('rejects an unknown namespace, saying which ones exist', () => {
    rejects({ model_name: 'azure/ada', api_key: 'k' }, /unknown model namespace `azure\/`; use `ts\/<model>` \(built-in\), `openai\/<model>`, `google\/<model>`, `gcp\/<model>`, or the name of a directory/);
  });

  it('rejects a model name with nothing after the namespace', () => {
    rejects({ model_name: 'ts/' }, /"ts\/" names no model after `ts\/`/);
    rejects({ model_name: 'openai/', api_key: 'k' }, /names no model after `openai\/`/);
  });

  it('rejects directory names that could leave the models directory or hide in it', () => {
    rejects({ model_name: '..' }, /"\.\." is not a valid model directory name/);
    rejects({ model_name: '.download-x' }, /not a valid model directory name/);
    rejects({ model_name: 'ts/../../etc' }, /"ts\/\.\.\/\.\.\/etc" is not a valid built-in model name/);
    rejects({ model_name: 'a\\b' }, /not a valid model directory name/);
  });

  it('needs api_key for OpenAI and Google models', () => {
    rejects({ model_name: 'openai/text-embedding-3-small' }, /`embed.model_config.api_key` is required for OpenAI \(`openai\/<model>`\) models/);
    rejects({ model_name: 'google/text-embedding-004', api_key: '' }, /`embed.model_config.api_key` is required for Google \(`google\/<model>`\) models/);
  });

  it('needs every OAuth credential and the project for Vertex AI models, naming the missing one', () => {
    for (const key of ['project_id', 'access_token', 'refresh_token', 'client_id', 'client_secret']) {
      const c: Record<string, unknown> = { ...gcp };
      delete c[key];
      rejects(c, new RegExp(`\`embed.model_config.${key}\` is required for Google Cloud \\(\`gcp/<model>\`\\) models`));
    }
  });

  it('rejects a url that is not http(s)', () => {
    rejects({ model_name: 'openai/m', api_key: 'k', url: 'localhost:8000' }, /`embed.model_config.url` must be an http\(s\) URL, got "localhost:8000"/);
    rejects({ ...gcp, token_url: 'ftp://x' }, /`embed.model_config.token_url` must be an http\(s\) URL/);
  });

  it('rejects attributes of the wrong type or unknown ones', () => {
    rejects({ model_name: 'm', query_prefix: 3 }, /`embed.model_config.query_prefix` must be a string/);
    rejects({ model_name: 'm', apikey: 'k' }, /`embed.model_config` has an unknown attribute `apikey` \(known: model_name, api_key, url/);
  });

  it("uses the reference's model repository for ts/ models unless told otherwise", () => {
    expect(EMBED_DEFAULTS.modelRepositoryUrl).toBe('https://models.typesense.org/public/');
  });
});
