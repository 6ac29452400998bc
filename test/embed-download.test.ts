/**
 * Built-in `ts/<name>` models, downloaded from a model repository: here a local HTTP server
 * started by the test that serves the tiny BERT fixture in the repository's layout
 * (`<base><name>/config.json`, `model.onnx`, vocabulary), and breaks on request.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { builtinModelDir, closeEmbedders, loadEmbedder } from '../src/embed/index.js';
import { FathomError } from '../src/errors.js';
import { ROOT, tmpDir } from './helpers.js';

const FIXTURE = path.join(ROOT, 'fixtures', 'models', 'tiny-bert');
const modelBytes = fs.readFileSync(path.join(FIXTURE, 'model.onnx'));
const vocabBytes = fs.readFileSync(path.join(FIXTURE, 'vocab.txt'));
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

type Breakage = 'none' | 'config-404' | 'model-404' | 'truncated' | 'bad-checksum' | 'server-error';

/** A model repository on 127.0.0.1 serving every model name with the tiny BERT fixture. */
class Repository {
  server!: http.Server;
  requests: string[] = [];
  breakage: Breakage = 'none';
  extraConfig: Record<string, unknown> = {};

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => {
      this.requests.push(req.url!);
      const m = /^\/public\/([^/]+)\/([^/]+)$/.exec(req.url!);
      if (!m) return void res.writeHead(404).end();
      const [, , file] = m;
      if (this.breakage === 'server-error') return void res.writeHead(503).end('maintenance');
      if (file === 'config.json') {
        if (this.breakage === 'config-404') return void res.writeHead(404).end('Not Found');
        const cfg = {
          model_type: 'bert',
          vocab_file_name: 'vocab.txt',
          model_md5: this.breakage === 'bad-checksum' ? '0'.repeat(32) : md5(modelBytes),
          vocab_md5: md5(vocabBytes),
          max_seq_length: 16,
          ...this.extraConfig,
        };
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(cfg));
      }
      if (file === 'model.onnx') {
        if (this.breakage === 'model-404') return void res.writeHead(404).end();
        if (this.breakage === 'truncated') {
          res.writeHead(200, { 'content-length': String(modelBytes.length) });
          res.write(modelBytes.subarray(0, 1000));
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        }
        return void res.writeHead(200, { 'content-length': String(modelBytes.length) }).end(modelBytes);
      }
      if (file === 'vocab.txt') return void res.writeHead(200).end(vocabBytes);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/public/`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

const repo = new Repository();
let base: string;
let dataDir: string;

beforeAll(async () => {
  base = await repo.start();
  dataDir = tmpDir('fathom-download-');
});
afterEach(() => {
  repo.breakage = 'none';
  repo.extraConfig = {};
});
afterAll(async () => {
  await closeEmbedders();
  await repo.stop();
});

const load = (name: string, url = base) => loadEmbedder({ model_name: `ts/${name}` }, { dataDir, modelRepositoryUrl: url });

/** Nothing of `name` is left in the models directory: no model, no partial download. */
function expectNothingLeft(name: string): void {
  expect(fs.existsSync(builtinModelDir(dataDir, name))).toBe(false);
  expect(fs.readdirSync(path.join(dataDir, 'models')).filter((f) => f.startsWith('.download-'))).toEqual([]);
}

async function failure(name: string): Promise<string> {
  const err = await load(name).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(FathomError);
  expect((err as FathomError).code).toBe('BAD_SCHEMA');
  return (err as Error).message;
}

describe('a built-in model', () => {
  it('is downloaded on first use, checked, and cached under <data_dir>/models/ts/<name>/', async () => {
    repo.requests = [];
    const e = await load('tiny');
    expect(e.modelName).toBe('ts/tiny');
    expect(e.dims).toBe(32);
    expect(repo.requests).toEqual(['/public/tiny/config.json', '/public/tiny/model.onnx', '/public/tiny/vocab.txt']);
    const dir = builtinModelDir(dataDir, 'tiny');
    expect(fs.readdirSync(dir).sort()).toEqual(['config.json', 'model.onnx', 'vocab.txt']);
    expect(fs.readFileSync(path.join(dir, 'model.onnx')).equals(modelBytes)).toBe(true);
    const [v] = await e.embed(['hello world'], { purpose: 'index' });
    expect(v!.length).toBe(32);
  });

  it('is used from the cache afterwards, without the network', async () => {
    await closeEmbedders(); // forget the loaded model: the next load reads the disk
    repo.requests = [];
    const e = await load('tiny', 'http://127.0.0.1:9/unreachable/');
    expect(e.dims).toBe(32);
    expect(repo.requests).toEqual([]);
  });

  it('is downloaded once when many callers ask for it at the same time', async () => {
    repo.requests = [];
    const all = await Promise.all([load('tiny-twice'), load('tiny-twice'), load('tiny-twice')]);
    expect(new Set(all).size).toBe(1);
    expect(repo.requests.filter((r) => r.endsWith('model.onnx'))).toHaveLength(1);
  });

  it("uses the repository's indexing and query prefixes unless model_config sets its own", async () => {
    repo.extraConfig = { query_prefix: 'the' };
    const withRepoPrefix = await load('tiny-prefixed');
    const plain = await load('tiny');
    const [q] = await withRepoPrefix.embed(['dog'], { purpose: 'query' });
    const [expected] = await plain.embed(['the dog'], { purpose: 'query' });
    expect(Array.from(q!)).toEqual(Array.from(expected!));
    const own = await loadEmbedder({ model_name: 'ts/tiny-prefixed', query_prefix: 'hello' }, { dataDir, modelRepositoryUrl: base });
    const [q2] = await own.embed(['dog'], { purpose: 'query' });
    const [expected2] = await plain.embed(['hello dog'], { purpose: 'query' });
    expect(Array.from(q2!)).toEqual(Array.from(expected2!));
  });
});

describe('a broken download', () => {
  it('of a model the repository does not have says so and leaves nothing behind', async () => {
    repo.breakage = 'config-404';
    expect(await failure('missing')).toMatch(/cannot download model `ts\/missing`: the model repository has no such model/);
    expectNothingLeft('missing');
  });

  it('with a missing model file names the file and leaves nothing behind', async () => {
    repo.breakage = 'model-404';
    expect(await failure('no-onnx')).toMatch(/\/public\/no-onnx\/model\.onnx answered HTTP 404/);
    expectNothingLeft('no-onnx');
  });

  it('cut short in the middle leaves nothing behind', async () => {
    repo.breakage = 'truncated';
    const cutMsg = await failure('cut');
    expect(cutMsg).toMatch(/model\.onnx (was cut short|broke off after 1000 bytes)/);
    expectNothingLeft('cut');
  });

  it('with a wrong checksum leaves nothing behind', async () => {
    repo.breakage = 'bad-checksum';
    expect(await failure('tampered')).toMatch(/model\.onnx failed its checksum: MD5 [0-9a-f]{32}, the repository says 0{32}/);
    expectNothingLeft('tampered');
  });

  it('from a repository that is down reports its status, and succeeds once it is back', async () => {
    repo.breakage = 'server-error';
    expect(await failure('later')).toMatch(/the model repository answered HTTP 503/);
    expectNothingLeft('later');
    repo.breakage = 'none';
    expect((await load('later')).dims).toBe(32);
  });

  it('left by a process that died is cleaned up by the next download', async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const stale = path.join(dataDir, 'models', `.download-stale-${dead}-abcd1234`);
    fs.mkdirSync(stale, { recursive: true });
    fs.writeFileSync(path.join(stale, 'model.onnx'), 'half');
    await load('stale');
    expect(fs.existsSync(stale)).toBe(false);
  });

  it('cannot happen without a repository: an unreachable one is named in the error', async () => {
    expect(
      await load('offline', 'http://127.0.0.1:9/public/').then(
        () => '',
        (e: Error) => e.message,
      ),
    ).toMatch(/cannot reach the model repository at http:\/\/127\.0\.0\.1:9\/public\/offline\/config\.json/);
    expectNothingLeft('offline');
  });
});
