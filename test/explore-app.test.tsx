import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { render } from 'ink-testing-library';
import { App } from '../commands/explore/ui/App.js';
import type { CollectionSchema, SearchClient } from '../commands/explore/client.js';
import type { InitialOptions } from '../commands/explore/state.js';
import type { Engine } from '../src/engine.js';
import { booksClient } from './explore-fixture.js';

const KEYS = { tab: '\t', enter: '\r', esc: '\u001b', down: '\u001b[B', up: '\u001b[A', pgdn: '\u001b[6~', backspace: '\u007f', ctrlX: '\u0018', ctrlU: '\u0015' };

let engine: Engine;
let client: SearchClient;
let schema: CollectionSchema;

beforeAll(async () => {
  ({ engine, client, schema } = await booksClient());
});
afterAll(async () => {
  await engine.close();
});

type Rendered = ReturnType<typeof render> & { quit: { called: boolean }; copied: string[] };

function explorer(opts: { initial?: InitialOptions; size?: { columns?: number; rows?: number } } = {}): Rendered {
  const quit = { called: false };
  const copied: string[] = [];
  const r = render(<App client={client} schema={schema} initial={opts.initial} debounceMs={5} size={'size' in opts ? opts.size : { columns: 80, rows: 24 }} copy={(t) => copied.push(t)} onQuit={() => (quit.called = true)} />);
  return Object.assign(r, { quit, copied });
}

/** Waits until the last frame satisfies `test` (text it contains, or a predicate). */
async function frame(r: Rendered, test: string | RegExp | ((f: string) => boolean), timeoutMs = 3000): Promise<string> {
  const ok = (f: string) => (typeof test === 'string' ? f.includes(test) : test instanceof RegExp ? test.test(f) : test(f));
  const start = Date.now();
  for (;;) {
    const f = r.lastFrame() ?? '';
    if (ok(f)) return f;
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${String(test)}; last frame:\n${f}`);
    await new Promise((res) => setTimeout(res, 10));
  }
}

/** Sends keys one write at a time, letting ink handle each. */
async function press(r: Rendered, ...keys: string[]) {
  for (const k of keys) {
    r.stdin.write(k);
    await new Promise((res) => setTimeout(res, k === KEYS.esc ? 30 : 5));
  }
}

function hitLines(f: string): string[] {
  return f.split('\n').filter((l) => /^[▸ ]\s+\d+\. /.test(l));
}

describe('fathom explore (components)', () => {
  it('shows found, out_of and search_time_ms as soon as it opens', async () => {
    const r = explorer();
    const f = await frame(r, /found 8 of 8 · \d+ ms · page 1\/1/);
    expect(f).toContain('fathom explore books');
    r.unmount();
  });

  it('shows the first hit for a query with a typo', async () => {
    const r = explorer();
    await frame(r, 'found 8 of 8');
    await press(r, 'hary pottr');
    const f = await frame(r, 'found 3 of 8');
    expect(hitLines(f)[0]).toMatch(/^▸\s+1\. Harry Potter/);
    expect(f).toMatch(/text_match \d+/);
    r.unmount();
  });

  it('shows the selected hit’s full document in the detail pane as the selection moves', async () => {
    const r = explorer({ initial: { q: 'harry' } });
    await frame(r, 'found 3 of 8');
    const first = (await frame(r, '"id"')).match(/"id": "(\d)"/)![1];
    await press(r, KEYS.down);
    const f = await frame(r, (x) => x.match(/"id": "(\d)"/)?.[1] !== first);
    expect(f).toMatch(/"author": "J. K. Rowling"/);
    expect(f).toMatch(/"tags": \[/);
    expect(hitLines(f)[1]).toMatch(/^▸/);
    r.unmount();
  });

  it('types q into the query, and quits on q from the hit list', async () => {
    const r = explorer();
    await frame(r, 'found 8 of 8');
    await press(r, 'q');
    await frame(r, 'Search › q');
    expect(r.quit.called).toBe(false);
    await press(r, KEYS.esc, 'q');
    expect(r.quit.called).toBe(true);
    r.unmount();
  });

  it('quits on Ctrl-C from the query box', async () => {
    const r = explorer();
    await frame(r, 'found 8 of 8');
    await press(r, '\u0003');
    expect(r.quit.called).toBe(true);
    r.unmount();
  });

  it('adds a toggled facet value to filter_by and the count changes', async () => {
    const r = explorer({ initial: { q: 'magik' } });
    await frame(r, 'found 5 of 8');
    await press(r, KEYS.tab, KEYS.tab);
    await frame(r, /▸\[ \] J\. K\. Rowling 3/);
    await press(r, ' ');
    const f = await frame(r, 'found 3 of 8');
    expect(f).toContain('[x] J. K. Rowling');
    expect(f).toContain('facets: author:=[`J. K. Rowling`]');
    // Disjunctive counts: the other authors stay in the panel to be added.
    expect(f).toMatch(/\[ \] Ursula K\. Le Guin 1/);
    await press(r, 'x');
    await frame(r, 'found 5 of 8');
    r.unmount();
  });

  it('shows a bad filter inline and keeps exploring', async () => {
    const r = explorer();
    await frame(r, 'found 8 of 8');
    await press(r, KEYS.esc, 'f', 'year:>');
    let f = await frame(r, '✗ filter_by: expected a value after `year:>` at position 6');
    expect(f).toContain('found 8 of 8');
    await press(r, '1990');
    f = await frame(r, 'found 4 of 8');
    expect(f).not.toContain('✗');
    r.unmount();
  });

  it('sorts by what is typed into sort_by', async () => {
    const r = explorer();
    await frame(r, 'found 8 of 8');
    await press(r, KEYS.esc, 's', 'year:asc', KEYS.enter);
    const f = await frame(r, (x) => /^▸\s+1\. The Hobbit/.test(hitLines(x)[0] ?? ''));
    expect(hitLines(f)[1]).toMatch(/The Lord of the Rings/);
    r.unmount();
  });

  it('searches only the query_by fields, weighted as given', async () => {
    const r = explorer({ initial: { q: 'rowling' } });
    await frame(r, 'found 3 of 8');
    await press(r, KEYS.esc, 'b', KEYS.ctrlU, 'title');
    await frame(r, 'found 0 of 8');
    await press(r, ',author', KEYS.esc, 'w', '1,2');
    const f = await frame(r, 'found 3 of 8');
    expect(f).toMatch(/weights 1,2/);
    r.unmount();
  });

  it('pages through the hits', async () => {
    const r = explorer({ initial: { perPage: 3 } });
    await frame(r, 'page 1/3');
    await press(r, KEYS.pgdn);
    const f = await frame(r, 'page 2/3');
    expect(hitLines(f)[0]).toMatch(/^▸\s+4\. /);
    r.unmount();
  });

  it('shows the keyboard help on ? and returns on Esc', async () => {
    const r = explorer();
    await frame(r, 'found 8 of 8');
    await press(r, KEYS.esc, '?');
    const f = await frame(r, 'Keys');
    expect(f).toContain('Ctrl-X');
    expect(f).toContain('toggle the facet value');
    await press(r, KEYS.esc);
    await frame(r, 'found 8 of 8');
    r.unmount();
  });

  it('shows the current query as fathom search and curl commands, one key away', async () => {
    const r = explorer();
    await frame(r, 'found 8 of 8');
    await press(r, 'harry', KEYS.ctrlX);
    const f = await frame(r, 'fathom search books');
    expect(f).toContain('-q harry');
    expect(f).toContain('curl -sG http://localhost:8108/collections/books/documents/search');
    await press(r, 'f');
    expect(r.copied[0]).toMatch(/^fathom search books -q harry --query-by title,author,tags --facet-by author,tags,year,in_print -d /);
    await frame(r, 'copied the fathom search command');
    await press(r, 'c');
    expect(r.copied[1]).toMatch(/^curl -sG /);
    await press(r, KEYS.esc);
    await frame(r, 'found 3 of 8');
    r.unmount();
  });

  it('fits an 80x24 terminal', async () => {
    const r = explorer({ initial: { q: 'harry' } });
    const f = await frame(r, 'found 3 of 8');
    const lines = f.split('\n');
    expect(lines.length).toBeLessThanOrEqual(23);
    for (const l of lines) expect(Array.from(l).length).toBeLessThanOrEqual(80);
    r.unmount();
  });

  it('follows resizes of the terminal', async () => {
    const r = explorer({ size: undefined });
    await frame(r, 'found 8 of 8');
    Object.defineProperty(r.stdout, 'columns', { value: 60, configurable: true });
    Object.defineProperty(r.stdout, 'rows', { value: 20, configurable: true });
    r.stdout.emit('resize');
    const f = await frame(r, (x) => x.split('\n').every((l) => Array.from(l).length <= 60) && x.split('\n').length <= 19);
    expect(f).toContain('found 8 of 8');
    r.unmount();
  });
});
