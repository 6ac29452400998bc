/**
 * Local embedding models: user ONNX models (the tiny fixtures, run for real by onnxruntime)
 * and the offline built-in `ts/use-lite`; plus the query cache.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedEmbedQuery, clearQueryCache, closeEmbedders, loadEmbedder, queryCacheSize, type Embedder } from '../src/embed/index.js';
import { FathomError } from '../src/errors.js';
import { UseLiteModel } from '../src/embed/use-lite.js';
import { ROOT, tmpDir } from './helpers.js';

const FIXTURES = path.join(ROOT, 'fixtures', 'models');
let dataDir: string;

/** A data directory whose models/ holds a copy of the fixture models (and anything added later). */
function installModel(name: string, as = name): string {
  const dir = path.join(dataDir, 'models', as);
  fs.cpSync(path.join(FIXTURES, name), dir, { recursive: true });
  return dir;
}

beforeAll(() => {
  dataDir = tmpDir('fathom-embed-');
  installModel('tiny-bert');
  installModel('tiny-xlmr');
});
afterAll(() => closeEmbedders());

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, v, i) => s + v * b[i]!, 0);
const norm = (a: Float32Array) => Math.sqrt(dot(a, a));

async function loadError(config: Record<string, unknown>): Promise<FathomError> {
  const err = await loadEmbedder(config, { dataDir }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(FathomError);
  expect((err as FathomError).code).toBe('BAD_SCHEMA');
  return err as FathomError;
}

describe('a user ONNX model (model_type bert)', () => {
  let e: Embedder;
  beforeAll(async () => {
    e = await loadEmbedder({ model_name: 'tiny-bert' }, { dataDir });
  });

  it('knows its name and its dimension once loaded', () => {
    expect(e.modelName).toBe('tiny-bert');
    expect(e.dims).toBe(32);
  });

  it('gives one unit vector per text, in order', async () => {
    const vs = await e.embed(['hello world', 'the lazy dog', ''], { purpose: 'index' });
    expect(vs).toHaveLength(3);
    for (const v of vs) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(32);
      expect(norm(v)).toBeCloseTo(1, 5);
    }
    expect(dot(vs[0]!, vs[1]!)).toBeLessThan(0.999);
  });

  it('gives the same text the same vector every time', async () => {
    const [a] = await e.embed(['red shoe'], { purpose: 'index' });
    const [b] = await e.embed(['red shoe'], { purpose: 'index' });
    expect(Array.from(b!)).toEqual(Array.from(a!));
  });

  it('embeds a text longer than the model accepts by truncating it, not failing', async () => {
    // The fixture has 16 position embeddings: an untruncated 90-token input would fail inside the model.
    const long = 'the quick brown fox jumps over the lazy dog '.repeat(10);
    const [v] = await e.embed([long], { purpose: 'index' });
    expect(v!.length).toBe(32);
    const [prefix] = await e.embed(['the quick brown fox jumps over the lazy dog the quick brown fox'], { purpose: 'index' });
    expect(dot(v!, prefix!)).toBeCloseTo(1, 5); // the same first 14 tokens
  });

  it('gives the same vectors in a padded batch as one by one', async () => {
    const texts = ['hello', 'the quick brown fox jumps', 'unaffable dog', 'a', 'over the lazy dog, again!', '中文'];
    const batched = await e.embed(texts, { purpose: 'index' });
    for (let i = 0; i < texts.length; i++) {
      const [single] = await e.embed([texts[i]!], { purpose: 'index', batchSize: 1 });
      for (let k = 0; k < 32; k++) expect(batched[i]![k]).toBeCloseTo(single![k]!, 5);
    }
  });

  it('keeps the order of a call larger than one batch', async () => {
    const texts = Array.from({ length: 70 }, (_, i) => 'the dog '.repeat(i % 7) + 'hello');
    const all = await e.embed(texts, { purpose: 'index' });
    const [v40] = await e.embed([texts[40]!], { purpose: 'index' });
    expect(dot(all[40]!, v40!)).toBeCloseTo(1, 5);
  });

  it('puts indexing_prefix before documents and query_prefix before queries, followed by a space', async () => {
    const p = await loadEmbedder({ model_name: 'tiny-bert', indexing_prefix: 'hello', query_prefix: 'the' }, { dataDir });
    const [doc] = await p.embed(['world'], { purpose: 'index' });
    const [query] = await p.embed(['dog'], { purpose: 'query' });
    const [plainDoc, plainQuery] = await e.embed(['hello world', 'the dog'], { purpose: 'index' });
    expect(dot(doc!, plainDoc!)).toBeCloseTo(1, 5);
    expect(dot(query!, plainQuery!)).toBeCloseTo(1, 5);
  });

  it('answers embedEach with a vector for every text', async () => {
    const r = await e.embedEach!(['hello', 'world'], { purpose: 'index' });
    expect(r.every((v) => v instanceof Float32Array)).toBe(true);
  });

  it('is loaded once: concurrent and later callers share one embedder', async () => {
    const [a, b] = await Promise.all([loadEmbedder({ model_name: 'tiny-bert' }, { dataDir }), loadEmbedder({ model_name: 'tiny-bert' }, { dataDir })]);
    expect(a).toBe(b);
    expect(a).toBe(e);
  });
});

describe('a user ONNX model (model_type xlm_roberta)', () => {
  it('runs a model that declares no token_type_ids input', async () => {
    const x = await loadEmbedder({ model_name: 'tiny-xlmr' }, { dataDir });
    expect(x.dims).toBe(32);
    const vs = await x.embed(['hello world', 'running shoes', 'hello world '.repeat(30)], { purpose: 'query' });
    for (const v of vs) expect(norm(v)).toBeCloseTo(1, 5);
  });
});

describe('a user model that cannot be loaded', () => {
  it('is reported when its directory does not exist', async () => {
    const err = await loadError({ model_name: 'no-such-model' });
    expect(err.message).toMatch(/cannot load model `no-such-model`: the model directory .*no-such-model does not exist/);
  });

  it('is reported when config.json lacks model_type or names an unsupported one', async () => {
    const dir = installModel('tiny-bert', 'no-type');
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ vocab_file_name: 'vocab.txt' }));
    expect((await loadError({ model_name: 'no-type' })).message).toMatch(/config\.json needs a string `model_type`/);
    const gpt = installModel('tiny-bert', 'gpt-model');
    fs.writeFileSync(path.join(gpt, 'config.json'), JSON.stringify({ model_type: 'gpt2', vocab_file_name: 'vocab.txt' }));
    expect((await loadError({ model_name: 'gpt-model' })).message).toMatch(/model_type `gpt2` is not supported \(supported: bert, distilbert, xlm_roberta, clip\)/);
  });

  it('is reported when the vocabulary file is missing', async () => {
    const dir = installModel('tiny-bert', 'no-vocab');
    fs.rmSync(path.join(dir, 'vocab.txt'));
    expect((await loadError({ model_name: 'no-vocab' })).message).toMatch(/the vocabulary file .*no-vocab\/vocab\.txt does not exist/);
  });

  it('is reported when model.onnx is not a model', async () => {
    const dir = installModel('tiny-bert', 'garbage');
    fs.writeFileSync(path.join(dir, 'model.onnx'), 'not a model');
    expect((await loadError({ model_name: 'garbage' })).message).toMatch(/model\.onnx could not be loaded/);
  });

  it('loads after the problem is fixed: a failed load is not remembered', async () => {
    await loadError({ model_name: 'late-model' });
    installModel('tiny-bert', 'late-model');
    const e = await loadEmbedder({ model_name: 'late-model' }, { dataDir });
    expect(e.dims).toBe(32);
  });
});

describe('the offline built-in model ts/use-lite', () => {
  let use: Embedder;
  beforeAll(async () => {
    use = await loadEmbedder({ model_name: 'ts/use-lite' }, { dataDir });
  });

  it('has 512 dimensions and gives unit vectors', async () => {
    expect(use.dims).toBe(512);
    const [v] = await use.embed(['hello world'], { purpose: 'index' });
    expect(norm(v!)).toBeCloseTo(1, 5);
  });

  it('places "crimson sneakers for jogging" nearer to "red running shoes" than to unrelated texts', async () => {
    const [q, shoes, tax, soup] = await use.embed(
      ['crimson sneakers for jogging', 'red running shoes', 'the history of tax law in the eighteenth century', 'a recipe for onion soup'],
      { purpose: 'index' },
    );
    expect(dot(q!, shoes!)).toBeGreaterThan(dot(q!, tax!) + 0.2);
    expect(dot(q!, shoes!)).toBeGreaterThan(dot(q!, soup!) + 0.2);
  });

  it('does not block the event loop while it embeds', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const started = performance.now();
    await use.embed(Array.from({ length: 64 }, (_, i) => `short text number ${i} about red shoes`), { purpose: 'index' });
    const elapsed = performance.now() - started;
    clearInterval(timer);
    // In-thread inference would starve the timer for the whole call.
    expect(ticks).toBeGreaterThan(elapsed / 5 / 10);
  });

  it('gives the same vectors, in input order, whether one thread or two embed a call', async () => {
    const texts = ['red running shoes', 'onion soup', 'tax law', 'a text editor for the terminal', 'python http library'];
    const one = await UseLiteModel.load('ts/use-lite', 1);
    const two = await UseLiteModel.load('ts/use-lite', 2);
    try {
      const a = await one.run(texts, { purpose: 'index' });
      const b = await two.run(texts, { purpose: 'index', batchSize: 1 });
      expect(b).toHaveLength(texts.length);
      for (let i = 0; i < texts.length; i++) {
        const cos = dot(a[i]!, b[i]!) / (norm(a[i]!) * norm(b[i]!));
        expect(cos).toBeGreaterThan(0.9999);
      }
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});

describe('the query cache', () => {
  function countingEmbedder(): Embedder & { calls: number } {
    const e = {
      modelName: 'fake',
      dims: 2,
      calls: 0,
      async embed(texts: string[]) {
        e.calls++;
        await new Promise((r) => setTimeout(r, 5));
        return texts.map((t) => Float32Array.from([t.length, 1]));
      },
    };
    return e;
  }

  it('embeds a repeated query once, and concurrent identical queries share one call', async () => {
    clearQueryCache();
    const e = countingEmbedder();
    const [a, b] = await Promise.all([cachedEmbedQuery(e, 'red shoes'), cachedEmbedQuery(e, 'red shoes')]);
    await cachedEmbedQuery(e, 'red shoes');
    expect(e.calls).toBe(1);
    expect(Array.from(a)).toEqual(Array.from(b));
    a[0] = 99; // callers get copies
    expect((await cachedEmbedQuery(e, 'red shoes'))[0]).toBe(9);
  });

  it('keeps different embedders and different texts apart, and forgets the least recent past its size', async () => {
    clearQueryCache(2);
    const e1 = countingEmbedder();
    const e2 = countingEmbedder();
    await cachedEmbedQuery(e1, 'a');
    await cachedEmbedQuery(e2, 'a');
    await cachedEmbedQuery(e1, 'b'); // evicts (e1, 'a')
    expect(queryCacheSize()).toBe(2);
    await cachedEmbedQuery(e1, 'a');
    expect(e1.calls).toBe(3);
    expect(e2.calls).toBe(1);
    clearQueryCache(1000);
  });

  it('does not cache a failure', async () => {
    clearQueryCache();
    let fail = true;
    const e: Embedder = {
      modelName: 'flaky',
      dims: 1,
      async embed() {
        if (fail) throw new Error('boom');
        return [Float32Array.from([1])];
      },
    };
    await expect(cachedEmbedQuery(e, 'q')).rejects.toThrow('boom');
    fail = false;
    expect(Array.from(await cachedEmbedQuery(e, 'q'))).toEqual([1]);
  });
});
