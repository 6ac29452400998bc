import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, BOOKS_SCHEMA, ROOT, cli, dataDirPath, jsonLines, lines, openEngine, tmpDir } from './helpers.js';
import { snapshot } from '../src/index/manifest.js';

async function booksDir(): Promise<string> {
  const dir = dataDirPath();
  const r = await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify(BOOKS_SCHEMA) });
  expect(r.code).toBe(0);
  return dir;
}

const book = (i: number, extra: Record<string, unknown> = {}) => ({ id: `b${i}`, title: `Book number ${i}`, author: `Author ${i % 7}`, year: 1900 + (i % 120), tags: [`t${i % 5}`], ...extra });

describe('fathom import', () => {
  it('merges a bulk import into one segment, every document kept', async () => {
    const dir = await booksDir();
    const input = Array.from({ length: 300 }, (_, i) => JSON.stringify(book(i))).join('\n') + '\n';
    // (a transaction of 20 documents: 15 segments to merge)
    const r = await cli(['import', 'books', '--quiet', '--batch-size', '20', '-d', dir], { input });
    expect(r.code).toBe(0);
    // (the summary alone: a merge that failed would be logged)
    expect(lines(r.stderr)).toEqual([expect.stringMatching(/^imported 300 of 300 documents/)]);
    const e = openEngine(dir);
    try {
      const snap = snapshot(e.store, (e.store.collections.get('books') as { id: number }).id);
      expect(snap.segments.map((s) => s.reader.n)).toEqual([300]);
      expect((await e.search('books', { q: '*', per_page: 0 })).found).toBe(300);
      expect((await e.search('books', { q: 'number 299', query_by: 'title' })).hits![0]!.document.id).toBe('b299');
    } finally {
      await e.close();
    }
  });

  it('prints one result line per input line, in order, and a summary on stderr', async () => {
    const dir = await booksDir();
    const input = [book(1), book(2), book(3)].map((b) => JSON.stringify(b)).join('\n') + '\n';
    const r = await cli(['import', 'books', '-d', dir], { input });
    expect(r.code).toBe(0);
    expect(jsonLines(r.stdout)).toEqual([{ success: true }, { success: true }, { success: true }]);
    expect(r.stderr).toMatch(/^imported 3 of 3 documents into books/);
  });

  it('reports each bad line without affecting the others, and exits 1', async () => {
    const dir = await booksDir();
    const input = [
      JSON.stringify(book(1)),
      '{"id": "b2", "title": ',
      JSON.stringify([book(3)]),
      JSON.stringify({ id: 'b4', title: 'x', author: 'y', year: 'nineteen' }),
      JSON.stringify({ id: 'b5', title: 'x', year: 1 }),
      JSON.stringify(book(1)),
      JSON.stringify(book(6, { id: 'has space' })),
      JSON.stringify(book(7)),
    ].join('\n');
    const r = await cli(['import', 'books', '-d', dir], { input });
    expect(r.code).toBe(1);
    const res = jsonLines(r.stdout);
    expect(res.map((x) => x.success)).toEqual([true, false, false, false, false, false, false, true]);
    expect(res[1].error).toMatch(/^Bad JSON: \[json\.exception\.parse_error\.101\]/);
    expect(res[1].document).toBe('{"id": "b2", "title": ');
    expect(res[2].error).toBe('Bad JSON: not a properly formed document.');
    expect(res[3].error).toBe('Field `year` must be an int32.');
    expect(res[4].error).toBe('Field `author` has been declared in the schema, but is not found in the document.');
    expect(res[5]).toMatchObject({ success: false, code: 409 });
    expect(res[6].error).toMatch(/whitespace/);
    const e = await cli(['export', 'books', '-d', dir]);
    expect(jsonLines(e.stdout).map((d) => d.id)).toEqual(['b1', 'b7']);
  });

  it('--return-id and --return-doc add the id and the stored document', async () => {
    const dir = await booksDir();
    const r = await cli(['import', 'books', '--return-id', '--return-doc', '-d', dir], { input: JSON.stringify({ title: 'No id', author: 'a', year: 1999 }) + '\n' });
    const [line] = jsonLines(r.stdout);
    expect(line.success).toBe(true);
    expect(typeof line.id).toBe('string');
    expect(line.document).toMatchObject({ title: 'No id', id: line.id });
  });

  it('--dirty-values coerce_or_reject coerces', async () => {
    const dir = await booksDir();
    const r = await cli(['import', 'books', '--dirty-values', 'coerce_or_reject', '--return-doc', '-d', dir], { input: JSON.stringify({ id: 'x', title: 't', author: 'a', year: '1999' }) });
    expect(jsonLines(r.stdout)[0].document.year).toBe(1999);
  });

  it('--quiet prints failed lines only', async () => {
    const dir = await booksDir();
    const r = await cli(['import', 'books', '--quiet', '-d', dir], { input: [JSON.stringify(book(1)), 'nope', JSON.stringify(book(2))].join('\n') });
    expect(r.code).toBe(1);
    expect(jsonLines(r.stdout)).toHaveLength(1);
  });

  it('--action upsert, update and emplace', async () => {
    const dir = await booksDir();
    await cli(['import', 'books', '-d', dir], { input: JSON.stringify(book(1)) });
    const up = await cli(['import', 'books', '--action', 'update', '-d', dir], { input: [JSON.stringify({ id: 'b1', year: 2024 }), JSON.stringify({ id: 'zz', year: 1 })].join('\n') });
    expect(jsonLines(up.stdout).map((x) => x.success)).toEqual([true, false]);
    expect(jsonLines(up.stdout)[1].code).toBe(404);
    const g = await cli(['documents', 'get', 'books', 'b1', '-d', dir]);
    expect(JSON.parse(g.stdout)).toMatchObject({ year: 2024, title: 'Book number 1' });
    const em = await cli(['import', 'books', '--action', 'emplace', '-d', dir], { input: JSON.stringify(book(9)) });
    expect(em.code).toBe(0);
  });

  it('handles a UTF-8 byte-order mark, CRLF line ends and blank lines', async () => {
    const dir = await booksDir();
    const input = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(book(1)) + '\r\n\r\n' + JSON.stringify(book(2)) + '\r\n')]);
    const r = await cli(['import', 'books', '-d', dir], { input });
    expect(r.code).toBe(0);
    expect(jsonLines(r.stdout)).toHaveLength(2);
  });

  it('reports invalid UTF-8 on its own line', async () => {
    const dir = await booksDir();
    const bad = Buffer.concat([Buffer.from('{"id":"x","title":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","author":"a","year":1}')]);
    const input = Buffer.concat([Buffer.from(JSON.stringify(book(1)) + '\n'), bad, Buffer.from('\n' + JSON.stringify(book(2)) + '\n')]);
    const r = await cli(['import', 'books', '-d', dir], { input });
    const res = jsonLines(r.stdout);
    expect(res.map((x) => x.success)).toEqual([true, false, true]);
    expect(res[1].error).toBe('line 2 is not valid UTF-8');
  });

  it('accepts an empty input', async () => {
    const dir = await booksDir();
    const r = await cli(['import', 'books', '-d', dir], { input: '' });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/imported 0 of 0/);
  });

  it('imports a 10 MB document', async () => {
    const dir = await booksDir();
    const big = { id: 'big', title: 'word '.repeat(2_000_000), author: 'a', year: 1 };
    const input = JSON.stringify(big) + '\n' + JSON.stringify(book(1)) + '\n';
    expect(input.length).toBeGreaterThan(10_000_000);
    const r = await cli(['import', 'books', '-d', dir], { input });
    expect(jsonLines(r.stdout).map((x) => x.success)).toEqual([true, true]);
    const s = await cli(['search', 'books', '-q', 'word', '--query-by', 'title', '--json', '--include-fields', 'id', '-d', dir]);
    expect(JSON.parse(s.stdout).hits[0].document.id).toBe('big');
  });

  it('fails with exit status 1 for an unknown collection and 2 for bad usage', async () => {
    const dir = await booksDir();
    const r = await cli(['import', 'nope', '-d', dir], { input: '{}' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: collection `nope` not found\n');
    const u = await cli(['import', 'books', '--batch-size', '0', '-d', dir], { input: '{}' });
    expect(u.code).toBe(2);
    expect(u.stderr).toMatch(/--batch-size must be between 1 and 10000/);
    const a = await cli(['import', 'books', '--action', 'merge', '-d', dir], { input: '{}' });
    expect(a.code).toBe(2);
    const f = await cli(['import', 'books', path.join(tmpDir(), 'missing.jsonl'), '-d', dir]);
    expect(f.code).toBe(2);
    expect(f.stderr).toMatch(/file not found/);
  });

  it('never prints a stack trace', async () => {
    const r = await cli(['import', 'books', '-d', '/proc/definitely/not/here'], { input: '{}' });
    expect(r.code).not.toBe(0);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('fathom export', () => {
  it('round-trips: exported output re-imports into identical documents', async () => {
    const dir = await booksDir();
    const docs = Array.from({ length: 300 }, (_, i) => book(i, { rating: i / 7, in_print: i % 2 === 0, note: { nested: [i, 'x'] }, big: 9007199254740993n + BigInt(i) }));
    const input = docs.map((d) => JSON.stringify(d, (_k, v) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(/"@@(\d+)@@"/g, '$1')).join('\n');
    expect((await cli(['import', 'books', '-d', dir], { input })).code).toBe(0);
    const e1 = await cli(['export', 'books', '-d', dir]);
    expect(lines(e1.stdout)).toEqual(input.split('\n'));
    const dir2 = await booksDir();
    await cli(['import', 'books', '-d', dir2], { input: e1.stdout });
    const e2 = await cli(['export', 'books', '-d', dir2]);
    expect(e2.stdout).toBe(e1.stdout);
    expect(e1.stdout).toContain('"big":9007199254740993');
  });

  it('--include-fields, --exclude-fields and --filter-by', async () => {
    const dir = await booksDir();
    await cli(['import', 'books', '-d', dir], { input: [book(1), book(2), book(3)].map((b) => JSON.stringify(b)).join('\n') });
    const inc = await cli(['export', 'books', '--include-fields', 'id,year', '-d', dir]);
    expect(jsonLines(inc.stdout)[0]).toEqual({ id: 'b1', year: 1901 });
    const exc = await cli(['export', 'books', '--exclude-fields', 'tags,title,author', '-d', dir]);
    expect(jsonLines(exc.stdout)[0]).toEqual({ id: 'b1', year: 1901 });
    const flt = await cli(['export', 'books', '--filter-by', 'year:>=1902', '-d', dir]);
    expect(jsonLines(flt.stdout).map((d) => d.id)).toEqual(['b2', 'b3']);
  });

  it('stops quietly when the reader goes away', async () => {
    const dir = await booksDir();
    await cli(['import', 'books', '-d', dir], { input: Array.from({ length: 2000 }, (_, i) => JSON.stringify(book(i))).join('\n') });
    const r = await new Promise<{ code: number; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'export', 'books', '-d', dir], { cwd: ROOT });
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      child.stdout.once('data', () => child.stdout.destroy());
      child.on('close', (code) => resolve({ code: code ?? -1, stderr: err }));
    });
    expect(r.stderr).not.toMatch(/EPIPE|at /);
  });
});

describe('durability', () => {
  it('a CLI import killed with SIGKILL leaves a directory that opens, holding every acknowledged line', async () => {
    const dir = await booksDir();
    const file = path.join(tmpDir(), 'many.jsonl');
    fs.writeFileSync(file, Array.from({ length: 60000 }, (_, i) => JSON.stringify(book(i))).join('\n'));
    const acked: string[] = await new Promise((resolve) => {
      const child = spawn(process.execPath, [BIN, 'import', 'books', file, '--return-id', '-d', dir], { cwd: ROOT });
      let buf = '';
      const ids: string[] = [];
      child.stdout.on('data', (d) => {
        buf += d;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = JSON.parse(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
          if (line.success) ids.push(line.id);
          if (ids.length === 3000) child.kill('SIGKILL');
        }
      });
      child.on('close', () => resolve(ids));
    });
    expect(acked.length).toBeGreaterThanOrEqual(3000);
    expect(acked.length).toBeLessThan(60000);
    const e = openEngine(dir);
    for (const id of acked) expect(e.getDocument('books', id).id).toBe(id);
    const n = e.getCollection('books').num_documents;
    expect(n).toBeGreaterThanOrEqual(acked.length);
    // the index agrees with the documents
    expect((await e.search('books', { q: 'book', query_by: 'title', per_page: 0 })).found).toBe(n);
    await e.close();
  });

  it('two concurrent CLI importers into one directory lose nothing', async () => {
    const dir = await booksDir();
    const a = Array.from({ length: 3000 }, (_, i) => JSON.stringify(book(i))).join('\n');
    const b = Array.from({ length: 3000 }, (_, i) => JSON.stringify(book(i + 3000))).join('\n');
    const [ra, rb] = await Promise.all([cli(['import', 'books', '-d', dir], { input: a }), cli(['import', 'books', '-d', dir], { input: b })]);
    expect(ra.code).toBe(0);
    expect(rb.code).toBe(0);
    const e = openEngine(dir);
    expect(e.getCollection('books').num_documents).toBe(6000);
    expect((await e.search('books', { q: 'book', query_by: 'title', per_page: 0 })).found).toBe(6000);
    expect((await e.search('books', { q: '*', filter_by: 'year:>=1900', per_page: 0 })).found).toBe(6000);
    await e.close();
  });
});

describe('fathom documents', () => {
  it('gets and deletes by id', async () => {
    const dir = await booksDir();
    await cli(['import', 'books', '-d', dir], { input: JSON.stringify(book(1)) });
    const g = await cli(['documents', 'get', 'books', 'b1', '-d', dir]);
    expect(JSON.parse(g.stdout).title).toBe('Book number 1');
    const d = await cli(['documents', 'delete', 'books', 'b1', '-d', dir]);
    expect(JSON.parse(d.stdout).id).toBe('b1');
    const g2 = await cli(['documents', 'get', 'books', 'b1', '-d', dir]);
    expect(g2.code).toBe(1);
    expect(g2.stderr).toMatch(/document `b1` not found/);
    const d2 = await cli(['documents', 'delete', 'books', 'b1', '--ignore-not-found', '-d', dir]);
    expect(d2.code).toBe(0);
  });
});
