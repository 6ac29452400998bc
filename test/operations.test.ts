/**
 * /operations/*: a snapshot opens as a data directory with everything in it; compaction
 * gives space back while searches keep answering, in one process and across several; a
 * single node's vote answers false; the search cache can be cleared.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { BIN, cli, dataDirPath, jsonLines, tmpDir } from './helpers.js';

const KEY = 'ops-admin-key';
let server: RunningServer;
let dataDir: string;

async function call(base: string, method: string, p: string, key = KEY, body?: unknown) {
  const res = await fetch(`${base}${p}`, { method, headers: { 'x-typesense-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

const SCHEMA = {
  name: 'pkgs',
  fields: [
    { name: 'name', type: 'string' },
    { name: 'summary', type: 'string' },
    { name: 'section', type: 'string', facet: true },
    { name: 'size', type: 'int32' },
  ],
};

function doc(i: number) {
  return { id: `p${i}`, name: `package${i}`, summary: `a tool number ${i} for ${['audio', 'video', 'text', 'mail'][i % 4]} work ${'padding '.repeat(20)}`, section: ['utils', 'net', 'devel'][i % 3], size: i };
}

async function importDocs(base: string, from: number, to: number) {
  const body = Array.from({ length: to - from }, (_, k) => JSON.stringify(doc(from + k))).join('\n');
  const r = await fetch(`${base}/collections/pkgs/documents/import?batch_size=500`, { method: 'POST', headers: { 'x-typesense-api-key': KEY }, body });
  const text = await r.text();
  expect(text.split('\n').every((l) => JSON.parse(l).success)).toBe(true);
}

beforeAll(async () => {
  dataDir = dataDirPath();
  server = await startServer({ dataDir, apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  expect((await call(server.url, 'POST', '/collections', KEY, SCHEMA)).status).toBe(201);
  await importDocs(server.url, 0, 4000);
});

afterAll(async () => {
  await server?.stop();
});

describe('POST /operations/snapshot', () => {
  it('writes a copy that serves every document, key, alias and stopword set', async () => {
    const admin = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 5, logLevel: 'silent' });
    const search = await admin.keys().create({ description: 's', actions: ['documents:search'], collections: ['pkgs'] });
    await admin.aliases().upsert('packages', { collection_name: 'pkgs' });
    await admin.stopwords().upsert('common', { stopwords: ['the', 'a'] });
    const target = path.join(tmpDir(), 'snap');
    const r = await call(server.url, 'POST', `/operations/snapshot?snapshot_path=${encodeURIComponent(target)}`);
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ success: true });

    const copy = await startServer({ dataDir: target, apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
    try {
      const a = await call(server.url, 'GET', '/collections/pkgs/documents/export');
      const b = await call(copy.url, 'GET', '/collections/pkgs/documents/export');
      expect(b.text).toBe(a.text);
      const s = await call(copy.url, 'GET', '/collections/packages/documents/search?q=the+tool&query_by=summary&stopwords=common', search.value!);
      expect(s.status).toBe(200);
      expect(s.json().found).toBe(4000);
      expect((await call(copy.url, 'GET', '/stopwords/common')).json().stopwords.stopwords).toEqual(['the', 'a']);
    } finally {
      await copy.stop();
    }
  });

  it('refuses a relative, inner or unwritable path with 400 naming the reason, and a search key with 401', async () => {
    const cases: Array<[string, RegExp]> = [
      ['relative/dir', /absolute/],
      [path.join(dataDir, 'inner'), /inside the data directory/],
      ['/proc/fathom-snapshot', /cannot create|not writable/],
      [path.join(tmpDir(), 'missing', 'deeper'), /parent directory does not exist/],
      ['', /required/],
    ];
    for (const [p, why] of cases) {
      const r = await call(server.url, 'POST', `/operations/snapshot?snapshot_path=${encodeURIComponent(p)}`);
      expect(r.status, p).toBe(400);
      expect(r.json().message).toMatch(why);
    }
    const key = (await call(server.url, 'POST', '/keys', KEY, { description: 's', actions: ['documents:search'], collections: ['*'] })).json().value;
    expect((await call(server.url, 'POST', `/operations/snapshot?snapshot_path=${encodeURIComponent(path.join(tmpDir(), 's'))}`, key)).status).toBe(401);
  });

  it('is also `fathom snapshot <dir>` on a data directory', async () => {
    const dir = dataDirPath();
    const schema = path.join(tmpDir(), 's.json');
    fs.writeFileSync(schema, JSON.stringify(SCHEMA));
    expect((await cli(['collections', 'create', schema, '-d', dir])).code).toBe(0);
    expect((await cli(['import', 'pkgs', '-d', dir, '--no-progress'], { input: [1, 2, 3].map((i) => JSON.stringify(doc(i))).join('\n') })).code).toBe(0);
    const target = path.join(tmpDir(), 'cli-snap');
    const r = await cli(['snapshot', target, '-d', dir, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ success: true, snapshot_path: target });
    const ex = await cli(['export', 'pkgs', '-d', target]);
    expect(jsonLines(ex.stdout).map((d) => d.id)).toEqual(['p1', 'p2', 'p3']);
    // into a directory that holds something: a snapshot directory of its own inside it
    const again = await cli(['snapshot', target, '-d', dir, '--json']);
    expect(again.code).toBe(0);
    const inner = JSON.parse(again.stdout).snapshot_path as string;
    expect(path.dirname(inner)).toBe(target);
    expect(path.basename(inner)).toMatch(/^snapshot-\d{8}T\d{6}Z(-\d+)?$/);
    expect(jsonLines((await cli(['export', 'pkgs', '-d', inner])).stdout).map((d) => d.id)).toEqual(['p1', 'p2', 'p3']);
  });
});

describe('POST /operations/db/compact', () => {
  it('gives the space of deleted documents back while searches keep answering, and loses nothing', async () => {
    await importDocs(server.url, 4000, 12000);
    const del = await call(server.url, 'DELETE', '/collections/pkgs/documents?filter_by=size:>=6000');
    expect(del.json().num_deleted).toBe(6000);
    const before = fs.statSync(path.join(dataDir, 'data.mdb')).size;
    const exportBefore = (await call(server.url, 'GET', '/collections/pkgs/documents/export')).text;

    let searching = true;
    const statuses: number[] = [];
    const loop = (async () => {
      while (searching) statuses.push((await call(server.url, 'GET', '/collections/pkgs/documents/search?q=tool&query_by=summary')).status);
    })();
    const r = await call(server.url, 'POST', '/operations/db/compact');
    searching = false;
    await loop;
    expect(r.status).toBe(200);
    const report = r.json();
    expect(report).toMatchObject({ success: true, bytes_before: before });
    const after = fs.statSync(path.join(dataDir, 'data.mdb')).size;
    expect(after).toBe(report.bytes_after);
    expect(after).toBeLessThan(before * 0.6);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect((await call(server.url, 'GET', '/collections/pkgs/documents/export')).text).toBe(exportBefore);
    // writes go on after the swap
    expect((await call(server.url, 'POST', '/collections/pkgs/documents', KEY, doc(99_999))).status).toBe(201);
    expect((await call(server.url, 'GET', '/collections/pkgs/documents/search?q=package99999&query_by=name')).json().found).toBe(1);
  });

  it('works across the processes of `fathom serve --processes 2`', async () => {
    const dir = dataDirPath();
    const child = spawn(process.execPath, [BIN, 'serve', '-d', dir, '--api-key', KEY, '--api-address', '127.0.0.1', '--api-port', '0', '--processes', '2', '--log-level', 'info'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const base = await new Promise<string>((resolve, reject) => {
        let buf = '';
        child.stdout.on('data', (d) => {
          buf += d;
          const m = /"port":(\d+)/.exec(buf);
          if (m && buf.includes('"serving"')) resolve(`http://127.0.0.1:${m[1]}`);
        });
        child.on('exit', (c) => reject(new Error(`serve exited ${c}`)));
      });
      expect((await call(base, 'POST', '/collections', KEY, SCHEMA)).status).toBe(201);
      await importDocs(base, 0, 6000);
      expect((await call(base, 'DELETE', '/collections/pkgs/documents?filter_by=size:>=2000')).json().num_deleted).toBe(4000);
      const before = fs.statSync(path.join(dir, 'data.mdb')).size;
      let searching = true;
      const statuses: number[] = [];
      const loop = (async () => {
        while (searching) statuses.push((await call(base, 'GET', '/collections/pkgs/documents/search?q=tool&query_by=summary')).status);
      })();
      const r = await call(base, 'POST', '/operations/db/compact');
      searching = false;
      await loop;
      expect(r.status, r.text).toBe(200);
      expect(fs.statSync(path.join(dir, 'data.mdb')).size).toBeLessThan(before * 0.6);
      expect(statuses.every((s) => s === 200)).toBe(true);
      // every process reads and writes the new file
      for (let i = 0; i < 6; i++) expect((await call(base, 'POST', '/collections/pkgs/documents', KEY, doc(50_000 + i))).status).toBe(201);
      for (let i = 0; i < 6; i++) expect((await call(base, 'GET', '/collections/pkgs/documents/search?q=*&per_page=0')).json().found).toBe(2006);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});

describe('a kill -9 during compaction', () => {
  it('loses nothing and leaves a directory that opens, whenever it lands', async () => {
    const dir = dataDirPath();
    const serve = () => {
      const child = spawn(process.execPath, [BIN, 'serve', '-d', dir, '--api-key', KEY, '--api-address', '127.0.0.1', '--api-port', '0', '--processes', '1', '--log-level', 'info'], { stdio: ['ignore', 'pipe', 'pipe'] });
      const base = new Promise<string>((resolve, reject) => {
        let buf = '';
        child.stdout.on('data', (d) => {
          buf += d;
          const m = /"port":(\d+)/.exec(buf);
          if (m) resolve(`http://127.0.0.1:${m[1]}`);
        });
        child.on('exit', (c) => reject(new Error(`serve exited ${c}`)));
      });
      return { child, base };
    };
    let { child, base } = serve();
    let url = await base;
    expect((await call(url, 'POST', '/collections', KEY, SCHEMA)).status).toBe(201);
    await importDocs(url, 0, 6000);
    expect((await call(url, 'DELETE', '/collections/pkgs/documents?filter_by=size:>=3000')).json().num_deleted).toBe(3000);
    const expected = (await call(url, 'GET', '/collections/pkgs/documents/export')).text;
    try {
      for (const delay of [5, 60, 150, 400]) {
        void call(url, 'POST', '/operations/db/compact').catch(() => undefined);
        await new Promise((r) => setTimeout(r, delay));
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
        ({ child, base } = serve());
        url = await base;
        expect((await call(url, 'GET', '/collections/pkgs/documents/export')).text, `killed after ${delay} ms`).toBe(expected);
      }
      // and a compaction after all that completes
      expect((await call(url, 'POST', '/operations/db/compact')).status).toBe(200);
      expect(fs.readdirSync(dir).filter((e) => e.startsWith('.compact-'))).toEqual([]);
      expect((await call(url, 'GET', '/collections/pkgs/documents/export')).text).toBe(expected);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});

describe('other operations', () => {
  it('answers a vote on a single node with success false, and clears the search cache', async () => {
    expect((await call(server.url, 'POST', '/operations/vote')).json()).toEqual({ success: false });
    expect((await call(server.url, 'GET', '/collections/pkgs/documents/search?q=tool&query_by=summary&use_cache=true')).status).toBe(200);
    expect((await call(server.url, 'POST', '/operations/cache/clear')).json()).toEqual({ success: true });
    expect((await call(server.url, 'GET', '/collections/pkgs/documents/search?q=tool&query_by=summary&use_cache=true')).status).toBe(200);
  });
});
