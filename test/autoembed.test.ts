import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, cli, dataDirPath, openEngine } from './helpers.js';
import type { Engine } from '../src/engine.js';

/** A data directory holding the tiny BERT fixture as the user model `tiny`. */
function dirWithTinyModel(): string {
  const dir = dataDirPath();
  fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'fixtures', 'models', 'tiny-bert'), path.join(dir, 'models', 'tiny'), { recursive: true });
  return dir;
}

/** A local server speaking the OpenAI embeddings protocol: vectors from letter counts, failures on "FAIL". */
class FakeOpenAI {
  server!: http.Server;
  requests: string[][] = [];
  url = '';
  async start() {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const { input } = JSON.parse(body) as { input: string | string[] };
        const texts = Array.isArray(input) ? input : [input];
        this.requests.push(texts);
        if (texts.some((t) => t.includes('FAIL'))) {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'this input is not allowed', type: 'invalid_request_error', param: 'input', code: null } }));
          return;
        }
        const vec = (t: string) => Array.from({ length: 8 }, (_, i) => [...t.toLowerCase()].filter((c) => c.charCodeAt(0) % 8 === i).length + 0.01);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: texts.map((t, index) => ({ object: 'embedding', index, embedding: vec(t) })), model: 'fake' }));
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  stop() {
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

describe('auto-embedding with a user ONNX model', () => {
  it('fills the field on import, takes its dimension from the model, and searches semantically', async () => {
    const e = openEngine(dirWithTinyModel());
    const created = await e.createCollection({
      name: 'p',
      fields: [
        { name: 'title', type: 'string' },
        { name: 'body', type: 'string', optional: true },
        { name: 'emb', type: 'float[]', embed: { from: ['title', 'body'], model_config: { model_name: 'tiny' } } },
      ],
    });
    expect(created.fields.find((f) => f.name === 'emb')).toMatchObject({ num_dim: 32 });
    const docs = [
      { id: '1', title: 'red running shoes', body: 'for the road' },
      { id: '2', title: 'blue winter hat' },
      { id: '3', title: 'garden hose' },
    ];
    await e.import('p', [Buffer.from(docs.map((d) => JSON.stringify(d)).join('\n'))], {}, () => {});
    const one = e.getDocument('p', '1');
    expect((one.emb as number[]).length).toBe(32);
    const norm = Math.sqrt((one.emb as number[]).reduce((s, x) => s + x * x, 0));
    expect(norm).toBeCloseTo(1, 5);
    const sem = await e.search('p', { q: 'red running shoes for the road', query_by: 'emb', exclude_fields: 'emb' });
    expect(sem.hits![0]!.document.id).toBe('1');
    expect(sem.hits![0]!.vector_distance).toBeCloseTo(0, 4);
    const hybrid = await e.search('p', { q: 'hat', query_by: 'title,emb', exclude_fields: 'emb' });
    expect(hybrid.hits![0]!.document.id).toBe('2');
    expect(hybrid.hits![0]!.hybrid_search_info).toBeDefined();
    await e.close();
  });

  it('rejects a declared num_dim the model does not produce, and an unknown model', async () => {
    const e = openEngine(dirWithTinyModel());
    await expect(e.createCollection({ name: 'x', fields: [{ name: 't', type: 'string' }, { name: 'emb', type: 'float[]', num_dim: 8, embed: { from: ['t'], model_config: { model_name: 'tiny' } } }] })).rejects.toThrow(
      /field `emb`: `num_dim` is 8 but model `tiny` produces 32-dimensional vectors/,
    );
    await expect(e.createCollection({ name: 'y', fields: [{ name: 't', type: 'string' }, { name: 'emb', type: 'float[]', embed: { from: ['t'], model_config: { model_name: 'nope' } } }] })).rejects.toMatchObject({ status: 400 });
    expect(e.listCollections()).toEqual([]);
    await e.close();
  });
});

describe('auto-embedding with a remote OpenAI-compatible server', () => {
  const fake = new FakeOpenAI();
  beforeAll(() => fake.start());
  afterAll(() => fake.stop());

  async function remote(): Promise<Engine> {
    const e = openEngine();
    await e.createCollection({
      name: 'r',
      fields: [
        { name: 'title', type: 'string' },
        { name: 'tag', type: 'string', optional: true },
        { name: 'emb', type: 'float[]', embed: { from: ['title'], model_config: { model_name: 'openai/fake', api_key: 'k', url: fake.url, indexing_prefix: 'passage:', query_prefix: 'query:' } } },
      ],
    });
    return e;
  }

  it("never shows the model's api_key whole when the collection is described", async () => {
    const e = openEngine();
    const secret = 'sk-test-0123456789abcdef';
    const info = await e.createCollection({ name: 'm', fields: [{ name: 'title', type: 'string' }, { name: 'emb', type: 'float[]', embed: { from: ['title'], model_config: { model_name: 'openai/fake', api_key: secret, url: fake.url } } }] });
    for (const shown of [info, e.getCollection('m'), ...e.listCollections()]) {
      expect(JSON.stringify(shown)).not.toContain(secret);
      expect((shown.fields[1] as any).embed.model_config.api_key).toBe('sk-t' + '*'.repeat(secret.length - 4));
    }
    // the stored key still embeds
    const r: string[] = [];
    await e.import('m', [Buffer.from(JSON.stringify({ id: '1', title: 'x' }))], {}, (l) => void r.push(l));
    expect(JSON.parse(r[0]!).success).toBe(true);
    await e.close();
  });

  it('embeds a batch in requests of remote_embedding_batch_size, with the indexing prefix', async () => {
    const e = await remote();
    fake.requests = [];
    const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: `d${i}`, title: `item number ${i}` })).join('\n');
    const results: string[] = [];
    await e.import('r', [Buffer.from(lines)], { batchSize: 10, remoteEmbedding: { batchSize: 4 } }, (l) => void results.push(l));
    expect(results.every((l) => JSON.parse(l).success)).toBe(true);
    expect(fake.requests.map((r) => r.length)).toEqual([4, 4, 2]);
    expect(fake.requests[0]![0]).toBe('passage: item number 0');
    await e.close();
  });

  it('fails only the line whose embedding fails, with the provider\'s message', async () => {
    const e = await remote();
    const lines = [{ id: 'a', title: 'fine' }, { id: 'b', title: 'FAIL me' }, { id: 'c', title: 'also fine' }].map((d) => JSON.stringify(d)).join('\n');
    const results: any[] = [];
    await e.import('r', [Buffer.from(lines)], { batchSize: 10, remoteEmbedding: { batchSize: 1 } }, (l) => void results.push(JSON.parse(l)));
    expect(results.map((r) => r.success)).toEqual([true, false, true]);
    expect(results[1].error).toMatch(/this input is not allowed/);
    await e.close();
  });

  it('re-embeds an update only when a source field changes', async () => {
    const e = await remote();
    await e.writeDocument('r', { id: 'x', title: 'first title' });
    fake.requests = [];
    await e.updateDocument('r', 'x', { tag: 'sale' });
    expect(fake.requests).toEqual([]);
    await e.updateDocument('r', 'x', { title: 'second title' });
    expect(fake.requests).toEqual([['passage: second title']]);
    await e.close();
  });

  it('embeds the query with the query prefix, once for repeated queries', async () => {
    const e = await remote();
    await e.writeDocument('r', { id: 'x', title: 'alpha beta' });
    fake.requests = [];
    await e.search('r', { q: 'unique query text 1', query_by: 'emb' });
    await e.search('r', { q: 'unique query text 1', query_by: 'emb' });
    expect(fake.requests).toEqual([['query: unique query text 1']]);
    const weighted = await e.search('r', { q: '*', vector_query: 'emb:([], queries: [alpha, beta], query_weights: [0.9, 0.1])' });
    expect(weighted.hits![0]!.document.id).toBe('x');
    await e.close();
  });
});

describe('the offline built-in model ts/use-lite', () => {
  it('finds red running shoes for "crimson sneakers for jogging"', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'shop', fields: [{ name: 'name', type: 'string' }, { name: 'emb', type: 'float[]', embed: { from: ['name'], model_config: { model_name: 'ts/use-lite' } } }] });
    for (const [id, name] of [['1', 'red running shoes'], ['2', 'stainless steel kitchen knife'], ['3', 'wooden garden bench'], ['4', 'office desk lamp']]) await e.writeDocument('shop', { id, name });
    const r = await e.search('shop', { q: 'crimson sneakers for jogging', query_by: 'emb', exclude_fields: 'emb' });
    expect(r.hits![0]!.document.name).toBe('red running shoes');
    expect(e.getCollection('shop').fields.find((f) => f.name === 'emb')).toMatchObject({ num_dim: 512 });
    await e.close();
  }, 120_000);

  it('works through the CLI: create, import, semantic search', async () => {
    const dir = dataDirPath();
    await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify({ name: 'shop', fields: [{ name: 'name', type: 'string' }, { name: 'emb', type: 'float[]', embed: { from: ['name'], model_config: { model_name: 'ts/use-lite' } } }] }) });
    const imp = await cli(['import', 'shop', '-d', dir], { input: ['red running shoes', 'kitchen knife', 'garden bench'].map((n, i) => JSON.stringify({ id: String(i), name: n })).join('\n') });
    expect(imp.code).toBe(0);
    const s = await cli(['search', 'shop', '-q', 'crimson sneakers for jogging', '--query-by', 'emb', '--exclude-fields', 'emb', '--jsonl', '-d', dir]);
    expect(JSON.parse(s.stdout.split('\n')[0]!).name).toBe('red running shoes');
  }, 120_000);
});
