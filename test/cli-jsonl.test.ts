/**
 * `--jsonl` on the list commands of the real `fathom` binary: one record per line (through
 * commands/jsonl.ts), the same records `--json` prints, quiet when the reader goes away.
 */
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { jsonSafe } from '../commands/jsonl.js';
import { BIN, ROOT, cli, dataDirPath, jsonLines, lines, openEngine } from './helpers.js';

const LIST_COMMANDS = [
  ['collections', 'list'],
  ['keys', 'list'],
  ['stopwords', 'list'],
  ['presets', 'list'],
  ['synonyms', 'list'],
  ['curation', 'list'],
  ['analytics', 'rules', 'list'],
  ['conversations', 'list'],
  ['conversations', 'models', 'list'],
];

const schema = (name: string, fields = 1) => ({ name, fields: Array.from({ length: fields }, (_, i) => ({ name: `field_${i}`, type: 'string' })) });

async function run(args: string[], input?: string) {
  const r = await cli(args, input === undefined ? {} : { input });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r.stdout;
}

describe('fathom collections list --jsonl', () => {
  it('prints one JSON object per collection, the records --json prints', async () => {
    const dir = dataDirPath();
    for (const name of ['books', 'films', 'songs']) await run(['collections', 'create', '-', '-d', dir], JSON.stringify(schema(name, 2)));
    const out = await run(['collections', 'list', '--jsonl', '-d', dir]);
    expect(lines(out)).toHaveLength(3);
    expect(out.endsWith('}\n')).toBe(true);
    const records = jsonLines(out);
    expect(records.map((c) => c.name).sort()).toEqual(['books', 'films', 'songs']);
    expect(records.find((c) => c.name === 'books')).toMatchObject({ name: 'books', num_documents: 0, fields: [{ name: 'field_0' }, { name: 'field_1' }] });
    expect(records).toEqual(JSON.parse(await run(['collections', 'list', '--json', '-d', dir])));
  });

  it('prints nothing when there are no collections', async () => {
    expect(await run(['collections', 'list', '--jsonl', '-d', dataDirPath()])).toBe('');
  });

  it('stops quietly, with status 0, when the reader goes away after the first line (| head -1)', async () => {
    // Far more than a pipe holds: eight collections of 600 fields, about 90 KB a line.
    const dir = dataDirPath();
    const e = openEngine(dir);
    for (let i = 0; i < 8; i++) e.createCollection(schema(`c${i}`, 600));
    await e.close();
    const r = await new Promise<{ code: number; first: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'collections', 'list', '--jsonl', '-d', dir], { cwd: ROOT });
      let out = '';
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('\n')) child.stdout.destroy();
      });
      child.on('close', (code) => resolve({ code: code ?? -1, first: out.slice(0, out.indexOf('\n')), stderr: err }));
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.first).name).toMatch(/^c[0-7]$/);
  });
});

describe('fathom keys list --jsonl', () => {
  it('prints one record per key and never a key value', async () => {
    const dir = dataDirPath();
    const values = ['search-only-value-0123456789abcdef', 'admin-value-ZYXWVUTSRQPONMLKJIH'];
    await run(['keys', 'create', '--actions', 'documents:search', '--collections', 'books', '--description', 'search', '--value', values[0]!, '-d', dir]);
    await run(['keys', 'create', '--actions', '*', '--collections', '*', '--description', 'admin', '--value', values[1]!, '-d', dir]);
    const out = await run(['keys', 'list', '--jsonl', '-d', dir]);
    for (const v of values) expect(out).not.toContain(v);
    const keys = jsonLines(out);
    expect(keys.map((k) => k.description)).toEqual(['search', 'admin']);
    expect(keys.map((k) => k.value_prefix)).toEqual(['sear', 'admi']);
    for (const k of keys) expect(k).not.toHaveProperty('value');
    expect({ keys }).toEqual(JSON.parse(await run(['keys', 'list', '--json', '-d', dir])));
  });
});

describe('the other list commands with --jsonl', () => {
  it('stopwords, synonyms and curation rules print one record per set or item', async () => {
    const dir = dataDirPath();
    await run(['collections', 'create', '-', '-d', dir], JSON.stringify(schema('books')));
    await run(['stopwords', 'put', 'common', '--words', 'the,a,of', '-d', dir]);
    await run(['stopwords', 'put', 'french', '--words', 'le,la', '--locale', 'fr', '-d', dir]);
    expect(jsonLines(await run(['stopwords', 'list', '--jsonl', '-d', dir]))).toEqual(JSON.parse(await run(['stopwords', 'list', '--json', '-d', dir])).stopwords);

    await run(['synonyms', 'put', 'sofa', '--synonyms', 'sofa,couch', '--collection', 'books', '-d', dir]);
    await run(['synonyms', 'put', '--set', 'home', '-d', dir], JSON.stringify({ items: [{ id: 'tv', root: 'tv', synonyms: ['television'] }] }));
    const items = jsonLines(await run(['synonyms', 'list', '--collection', 'books', '--jsonl', '-d', dir]));
    expect(items).toEqual([{ id: 'sofa', root: '', synonyms: ['sofa', 'couch'] }]);
    const sets = jsonLines(await run(['synonyms', 'list', '--jsonl', '-d', dir]));
    expect(sets.map((s) => s.name)).toEqual(['home']);
    expect(sets).toEqual(JSON.parse(await run(['synonyms', 'list', '--json', '-d', dir])));

    await run(['curation', 'put', 'pin', '-', '--collection', 'books', '-d', dir], JSON.stringify({ rule: { query: 'dune', match: 'exact' }, metadata: { banner: 'Dune week' } }));
    expect(jsonLines(await run(['curation', 'list', '--collection', 'books', '--jsonl', '-d', dir]))).toEqual(JSON.parse(await run(['curation', 'list', '--collection', 'books', '--json', '-d', dir])));
  });

  it('a preset holding an integer beyond 2^53 is listed with that integer as a string of its digits, not refused', async () => {
    const dir = dataDirPath();
    await run(['presets', 'put', 'big', '-', '-d', dir], '{"value": {"q": "x", "x_id": 12345678901234567890}}');
    await run(['presets', 'put', 'small', '--param', 'q=y', '--param', 'per_page=5', '-d', dir]);
    const out = await run(['presets', 'list', '--jsonl', '-d', dir]);
    expect(jsonLines(out)).toEqual([
      { name: 'big', value: { q: 'x', x_id: '12345678901234567890' } },
      { name: 'small', value: { q: 'y', per_page: '5' } },
    ]);
    // --json keeps the integer exact
    expect(await run(['presets', 'list', '--json', '-d', dir])).toContain('"x_id": 12345678901234567890');
  });

  it('refuses --json with --jsonl on every list command: one line, status 2, nothing opened', async () => {
    const dir = dataDirPath();
    for (const args of LIST_COMMANDS) {
      const r = await cli([...args, '--json', '--jsonl', '-d', dir]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toBe('error: choose one of --json and --jsonl\n');
      expect(r.stdout).toBe('');
    }
    expect(fs.existsSync(dir)).toBe(false);
  });
});

describe('jsonSafe', () => {
  it('writes a bigint as a number when it is a safe integer and as its digits otherwise, at any depth', () => {
    const big = 2n ** 60n;
    expect(jsonSafe({ a: 5n, b: big, c: [-big, { d: BigInt(Number.MAX_SAFE_INTEGER) }], e: 'x', f: null })).toEqual({
      a: 5,
      b: '1152921504606846976',
      c: ['-1152921504606846976', { d: Number.MAX_SAFE_INTEGER }],
      e: 'x',
      f: null,
    });
    expect(jsonSafe(BigInt(Number.MAX_SAFE_INTEGER) + 1n)).toBe('9007199254740992');
  });
});
