/**
 * Provider credentials at rest (src/storage/secrets.ts): without a secrets key they are in
 * data.mdb and in snapshots as given (README, Security, says so); with one
 * (FATHOM_SECRETS_KEY / --secrets-key) neither holds them, calls still send them, a
 * directory opens without the key and only a use of the credential fails, clearly. Checked
 * by reading the bytes of data.mdb and of a snapshot for the value.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engine.js';
import { FathomError } from '../src/errors.js';
import { clientFor } from '../src/llm/registry.js';
import { closeEmbedders } from '../src/embed/index.js';
import { sealSchemaSecrets } from '../src/schema/schema.js';
import { isSealed, SECRETS_ENV } from '../src/storage/secrets.js';
import { FakeLlm } from './llm-fake.js';
import { cli, dataDirPath, openEngine, tmpDir } from './helpers.js';

const SECRETS = 'a long passphrase for the secrets';
const llm = new FakeLlm();
const LLM_KEY = llm.key!;
const EMBED_KEY = 'sk-embed-secret-0123456789abcdef';

/** An OpenAI-compatible embeddings server that answers only to EMBED_KEY. */
let embedUrl = '';
let embedServer: http.Server;
const embedAuth: string[] = [];

beforeAll(async () => {
  await llm.start();
  embedServer = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      embedAuth.push(req.headers.authorization ?? '');
      if (req.headers.authorization !== `Bearer ${EMBED_KEY}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'bad key' } }));
        return;
      }
      const input: string[] = [JSON.parse(body).input].flat();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: input.map((t, index) => ({ index, embedding: [t.length, 1, 0] })) }));
    });
  });
  await new Promise<void>((r) => embedServer.listen(0, '127.0.0.1', r));
  embedUrl = `http://127.0.0.1:${(embedServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await llm.stop();
  embedServer.closeAllConnections();
  await new Promise((r) => embedServer.close(r));
  await closeEmbedders();
});

const saved = process.env[SECRETS_ENV];
function useKey(k: string | undefined): void {
  if (k === undefined) delete process.env[SECRETS_ENV];
  else process.env[SECRETS_ENV] = k;
}
afterEach(() => useKey(saved));

const holds = (file: string, s: string) => fs.readFileSync(file).includes(Buffer.from(s));
const model = (id: string) => ({ id, model_name: 'openai/gpt-test', api_key: LLM_KEY, openai_url: llm.url, max_bytes: 16384 });
const embedded = (name: string) => ({
  name,
  fields: [
    { name: 'title', type: 'string' },
    { name: 'emb', type: 'float[]', embed: { from: ['title'], model_config: { model_name: 'openai/fake', api_key: EMBED_KEY, url: embedUrl } } },
  ],
});

async function snapshotFile(e: Engine): Promise<string> {
  const target = path.join(tmpDir(), 'snap');
  await e.snapshot(target);
  return path.join(target, 'data.mdb');
}

async function failure(fn: () => unknown): Promise<FathomError> {
  try {
    await fn();
  } catch (e) {
    expect(e).toBeInstanceOf(FathomError);
    return e as FathomError;
  }
  throw new Error('it did not fail');
}

describe('provider credentials at rest', () => {
  it('are in data.mdb and in a snapshot as given when no secrets key is set', async () => {
    useKey(undefined);
    const dir = dataDirPath();
    const e = openEngine(dir);
    await e.conversationModels().create(model('plain'));
    await e.createCollection(embedded('plain'));
    for (const file of [path.join(dir, 'data.mdb'), await snapshotFile(e)]) {
      expect(holds(file, LLM_KEY)).toBe(true);
      expect(holds(file, EMBED_KEY)).toBe(true);
    }
    await e.close();
  });

  it('are in neither with a secrets key, and calls still send them', async () => {
    useKey(SECRETS);
    const dir = dataDirPath();
    const e = openEngine(dir);
    const shown = await e.conversationModels().create(model('sealed'));
    expect(shown.api_key).toBe('sk-t' + '*'.repeat(LLM_KEY.length - 4));
    await e.createCollection(embedded('sealed'));
    for (const file of [path.join(dir, 'data.mdb'), await snapshotFile(e)]) {
      expect(holds(file, LLM_KEY)).toBe(false);
      expect(holds(file, EMBED_KEY)).toBe(false);
      expect(holds(file, 'fathom-secret:v1:')).toBe(true);
    }
    expect(isSealed(e.conversationModels().load('sealed').api_key)).toBe(true);
    llm.calls = [];
    await clientFor(e.conversationModels().load('sealed')).check();
    expect(llm.calls.at(-1)?.headers.authorization).toBe(`Bearer ${LLM_KEY}`);
    // a search embeds its query with the key; listings show it masked
    await e.writeDocument('sealed', { id: '1', title: 'hello' });
    const found = await e.search('sealed', { q: 'hello', query_by: 'emb' });
    expect(found.found).toBe(1);
    expect(embedAuth.at(-1)).toBe(`Bearer ${EMBED_KEY}`);
    expect(JSON.stringify([e.getCollection('sealed'), e.conversationModels().list()])).not.toContain(EMBED_KEY.slice(4));
    await e.close();
  });

  it('open without the key, list masked, and fail only when used, saying which key is missing', async () => {
    useKey(SECRETS);
    const dir = dataDirPath();
    let e = openEngine(dir);
    await e.conversationModels().create(model('m'));
    await e.createCollection(embedded('c'));
    await e.writeDocument('c', { id: '1', title: 'hello' });
    await e.close();
    await closeEmbedders();

    useKey(undefined);
    e = openEngine(dir);
    expect(e.conversationModels().get('m').api_key).toBe('********');
    expect((e.getCollection('c').fields[1] as any).embed.model_config.api_key).toBe('********');
    const noKey = await failure(() => clientFor(e.conversationModels().load('m')).check());
    expect(noKey.status).toBe(503);
    expect(noKey.message).toMatch(/`api_key` of model `m` is stored encrypted: start Fathom with the secrets key .*--secrets-key or FATHOM_SECRETS_KEY/);
    const search = await failure(() => e.search('c', { q: 'hello', query_by: 'emb' }));
    expect(search.code).toBe('SECRETS_KEY');
    // a search that needs no embedding is not affected
    expect((await e.search('c', { q: 'hello', query_by: 'title' })).found).toBe(1);

    useKey('another passphrase, not the one');
    const wrong = await failure(() => clientFor(e.conversationModels().load('m')).check());
    expect(wrong.message).toMatch(/encrypted with another secrets key/);
    await e.close();
  });

  it('stored in plain text before the key was set keep working, and are sealed when the model is rewritten', async () => {
    useKey(undefined);
    const dir = dataDirPath();
    const e = openEngine(dir);
    await e.conversationModels().create(model('old'));
    useKey(SECRETS);
    await clientFor(e.conversationModels().load('old')).check();
    expect(holds(await snapshotFile(e), LLM_KEY)).toBe(true);
    // sent back masked, as a listing shows it: the stored key stays, now sealed
    await e.conversationModels().update('old', { api_key: e.conversationModels().get('old').api_key, system_prompt: 'Be brief.' });
    expect(isSealed(e.conversationModels().load('old').api_key)).toBe(true);
    expect(holds(await snapshotFile(e), LLM_KEY)).toBe(false);
    await clientFor(e.conversationModels().load('old')).check();
    await e.close();
  });

  it('of a collection are sealed wherever the definition holds them, and nothing else is touched', () => {
    useKey(SECRETS);
    const raw = { ...embedded('x'), voice_query_model: { model_name: 'openai/whisper-1', api_key: 'sk-voice-0123456789' }, fields: [...embedded('x').fields, { name: 'n', type: 'int32' }, 'not a field'] };
    const out = sealSchemaSecrets(raw) as any;
    expect(isSealed(out.fields[1].embed.model_config.api_key)).toBe(true);
    expect(out.fields[1].embed.model_config.url).toBe(embedUrl);
    expect(isSealed(out.voice_query_model.api_key)).toBe(true);
    expect(out.fields[2]).toBe(raw.fields[2]);
    expect(out.fields[3]).toBe('not a field');
    expect(sealSchemaSecrets('nonsense')).toBe('nonsense');
    useKey(undefined);
    expect(sealSchemaSecrets(raw)).toBe(raw);
  });
});

describe('the CLI with --secrets-key', () => {
  it('seals what it stores, reads it back with the option or the variable, and says so in one line without', async () => {
    useKey(undefined);
    const dir = dataDirPath();
    const schema = JSON.stringify(embedded('books'));
    const created = await cli(['collections', 'create', '-', '-d', dir, '--secrets-key', SECRETS], { input: schema });
    expect(created.code, created.stderr).toBe(0);
    expect(holds(path.join(dir, 'data.mdb'), EMBED_KEY)).toBe(false);
    const put = await cli(['import', 'books', '-d', dir, '--secrets-key', SECRETS], { input: '{"id":"1","title":"hello"}\n' });
    expect(put.code, put.stderr).toBe(0);
    const withOption = await cli(['search', 'books', '-q', 'hello', '--query-by', 'emb', '-d', dir, '--secrets-key', SECRETS]);
    expect(withOption.code, withOption.stderr).toBe(0);
    const withEnv = await cli(['search', 'books', '-q', 'hello', '--query-by', 'emb', '-d', dir], { env: { [SECRETS_ENV]: SECRETS } });
    expect(withEnv.code, withEnv.stderr).toBe(0);
    const without = await cli(['search', 'books', '-q', 'hello', '--query-by', 'emb', '-d', dir]);
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(/^error: .*stored encrypted: start Fathom with the secrets key .*\n$/);
    const short = await cli(['search', 'books', '-q', 'hello', '-d', dir, '--secrets-key', 'short']);
    expect(short.code).toBe(2);
    expect(short.stderr).toBe('error: --secrets-key: a secrets key must be at least 16 characters long\n');
  });
});
