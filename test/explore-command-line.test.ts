import { describe, expect, it } from 'vitest';
import { commandText, curlCommand, fathomCommand, layoutCommand, shellQuote } from '../commands/explore/command-line.js';
import { userParams } from '../commands/explore/params.js';
import { initialState } from '../commands/explore/state.js';
import type { CollectionSchema } from '../commands/explore/client.js';
import { BOOKS_SCHEMA, cli } from './helpers.js';
import { booksEngine } from './explore-fixture.js';

const schema = BOOKS_SCHEMA as unknown as CollectionSchema;
const local = { kind: 'local' as const, dataDir: '/data/my books', defaultDataDir: false };

/** Splits a command line the way a POSIX shell would (quotes and backslash-newlines only). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let cur: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === "'") {
      const end = line.indexOf("'", i + 1);
      cur = (cur ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (ch === '\\' && line[i + 1] === "'") {
      cur = (cur ?? '') + "'";
      i++;
    } else if (ch === '\\' && line[i + 1] === '\n') i++;
    else if (/\s/.test(ch)) {
      if (cur !== null) words.push(cur);
      cur = null;
    } else cur = (cur ?? '') + ch;
  }
  if (cur !== null) words.push(cur);
  return words;
}

describe('shell quoting', () => {
  it('leaves safe words bare and single-quotes the rest', () => {
    expect(shellQuote('title,author')).toBe('title,author');
    expect(shellQuote('harry potter')).toBe("'harry potter'");
    expect(shellQuote('*')).toBe("'*'");
    expect(shellQuote("o'brien")).toBe("'o'\\''brien'");
    expect(shellQuote('')).toBe("''");
  });

  it('round-trips through a shell word splitter', () => {
    for (const s of ["o'brien && x", 'tags:=[`a b`]', '$HOME', 'a\\b']) expect(shellWords(shellQuote(s))).toEqual([s]);
  });
});

describe('the equivalent commands', () => {
  const state = { ...initialState(schema, { q: 'harry pottr', sortBy: 'year:desc' }), selections: { author: ['J. K. Rowling'] }, page: 2 };
  const params = userParams(state);

  it('write fathom search with a flag per tuned parameter and the data directory', () => {
    expect(commandText(fathomCommand('books', params, local))).toBe(
      "fathom search books -q 'harry pottr' --query-by title,author,tags --filter-by 'author:=[`J. K. Rowling`]' --sort-by year:desc --facet-by author,tags,year,in_print --page 2 -d '/data/my books'",
    );
  });

  it('leave the data directory out when it is the default', () => {
    expect(commandText(fathomCommand('books', { q: '*' }, { ...local, defaultDataDir: true }))).toBe("fathom search books -q '*'");
  });

  it('pass parameters without a flag through --param', () => {
    expect(commandText(fathomCommand('books', { q: '*', exhaustive_search: 'true' }, local))).toContain('--param exhaustive_search=true');
  });

  it('write curl against the server with the key from the environment', () => {
    const text = commandText(curlCommand('books', { q: 'harry pottr', filter_by: 'year:>1990' }, { kind: 'server', url: 'http://search:8108' }));
    expect(text).toBe(
      "curl -sG http://search:8108/collections/books/documents/search -H \"X-TYPESENSE-API-KEY: ${FATHOM_API_KEY}\" --data-urlencode 'q=harry pottr' --data-urlencode 'filter_by=year:>1990'",
    );
  });

  it('break into lines continued with a backslash, keeping each flag with its value', () => {
    const lines = layoutCommand(fathomCommand('books', params, local), 60);
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines.slice(0, -1)) expect(l.endsWith(' \\')).toBe(true);
    expect(shellWords(lines.join('\n'))).toEqual(shellWords(commandText(fathomCommand('books', params, local))));
  });

  it('split a value too long for any line into quoted pieces the shell joins back', () => {
    const long = { q: 'harry', filter_by: "author:!=[`Somebody Else`, `Another Person Entirely`] && title:!=`it's long`" };
    for (const cmd of [fathomCommand('books', long, local), curlCommand('books', long, { kind: 'server', url: 'http://h:8108' })]) {
      const lines = layoutCommand(cmd, 50);
      for (const l of lines) expect(Array.from(l).length).toBeLessThanOrEqual(50);
      expect(shellWords(lines.join('\n'))).toEqual(shellWords(commandText(cmd)));
    }
  });

  it('run as printed and find what the explorer found', async () => {
    const { engine, dir } = await booksEngine();
    const p = { ...userParams({ ...initialState(schema, { q: 'hary pottr' }), selections: { author: ['J. K. Rowling'] } }) };
    const expected = (await engine.search('books', p)).found;
    await engine.close();
    const words = shellWords(commandText(fathomCommand('books', p, { kind: 'local', dataDir: dir, defaultDataDir: false })));
    expect(words.slice(0, 2)).toEqual(['fathom', 'search']);
    const r = await cli([...words.slice(1), '--json']);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout).found).toBe(expected);
    expect(expected).toBe(3);
  });
});
