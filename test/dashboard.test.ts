/**
 * The web dashboard driven in headless Chromium, as a person would use it: a key typed in,
 * a collection picked, misspelt queries, facets toggled, a file imported, keys made and
 * deleted; and what a search-only key does not get. Every step leaves a screenshot in
 * test/artifacts/dashboard/ (gitignored).
 *
 * Around every test: the page must raise no error and no Content-Security-Policy
 * violation, fetch nothing from anywhere but this server, and put no key in any URL.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chromium as playwright, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { ROOT, dataDirPath } from './helpers.js';
import { artifactDir, findChromium } from './browser.js';

const ADMIN = 'dashboard-admin-key-0123456789';
const CHROMIUM = findChromium();
if (!CHROMIUM) {
  console.log('SKIPPED test/dashboard.test.ts: no Chromium found (install Debian\'s `chromium` package, as .ci/run does, or set CHROMIUM_PATH)');
}

const BOOKS = fs
  .readFileSync(path.join(ROOT, 'fixtures', 'example', 'books.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as { id: string; title: string; authors: string[]; year: number; rating: number; tags: string[] });

let server: RunningServer;
let browser: Browser;
let shots = '';
let searchKey = '';
const logs: string[] = [];
/** Every key value the tests have seen: none may appear in a URL or a log line. */
const WRONG = 'dashboard-wrong-key-5e1f0c';
const secrets = new Set<string>([ADMIN, WRONG]);
let step = 0;

async function api(method: string, p: string, body?: unknown, key = ADMIN): Promise<{ status: number; json: any; text: string }> {
  const headers: Record<string, string> = { 'x-typesense-api-key': key };
  if (body !== undefined && typeof body !== 'string') headers['content-type'] = 'application/json';
  const res = await fetch(`${server.url}${p}`, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/** A data directory holding the tiny BERT fixture as the user model `tiny` (auto-embedding). */
function dirWithTinyModel(): string {
  const dir = dataDirPath();
  fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'fixtures', 'models', 'tiny-bert'), path.join(dir, 'models', 'tiny'), { recursive: true });
  return dir;
}

interface Session {
  page: Page;
  context: BrowserContext;
  requests: string[];
  /** The page's own calls to the API (fetch and XHR), with the key header each carried. */
  calls: Array<{ url: string; key: string | undefined }>;
  errors: string[];
}
let open: Session | undefined;

/** A fresh browser context (its own session storage) with a page watched for errors and requests. */
async function session(viewport = { width: 1280, height: 800 }): Promise<Session> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const page = await context.newPage();
  const s: Session = { page, context, requests: [], calls: [], errors: [] };
  await page.addInitScript(() => {
    const w = globalThis as unknown as { __csp: string[]; document: { addEventListener(t: string, f: (e: { violatedDirective: string; blockedURI: string }) => void): void } };
    w.__csp = [];
    w.document.addEventListener('securitypolicyviolation', (e) => w.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on('request', (r) => {
    s.requests.push(r.url());
    if (r.resourceType() === 'fetch' || r.resourceType() === 'xhr') s.calls.push({ url: r.url(), key: r.headers()['x-typesense-api-key'] });
  });
  page.on('pageerror', (e) => s.errors.push(e.message));
  open = s;
  return s;
}

async function shot(page: Page, name: string): Promise<void> {
  step++;
  await page.screenshot({ path: path.join(shots, `${String(step).padStart(2, '0')}-${name}.png`), fullPage: true });
}

async function login(page: Page, key: string): Promise<void> {
  await page.goto(`${server.url}/`);
  await page.fill('input[name=api-key]', key);
  await page.press('input[name=api-key]', 'Enter');
  await page.waitForSelector('header.top nav');
}

/**
 * Waits until a JavaScript expression is true in the page. (Playwright's waitForFunction
 * evaluates its text with eval, which the page's CSP refuses, as it should.)
 */
async function until(page: Page, expression: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await page.evaluate(expression)) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${expression}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const statsCount = async (page: Page) => Number(/([\d,]+) results?/.exec((await page.textContent('.stats')) ?? '')?.[1]?.replace(/,/g, '') ?? 'NaN');

/** Visible form controls and buttons without an accessible name (a label, aria-label, aria-labelledby, title or text). */
const UNLABELLED = `(() => {
  const bad = [];
  for (const el of document.querySelectorAll('input, select, textarea, button, a[href], summary')) {
    if (el.type === 'hidden' || !el.getClientRects().length) continue;
    const by = el.getAttribute('aria-labelledby');
    const name = [...(el.labels || [])].map((l) => l.textContent).join(' ') || el.getAttribute('aria-label') || (by && document.getElementById(by)?.textContent) || el.getAttribute('title') || (/^(BUTTON|A|SUMMARY)$/.test(el.tagName) ? el.textContent : '');
    if (!name || !name.trim()) bad.push(el.outerHTML.slice(0, 160));
  }
  return bad;
})()`;

describe.skipIf(!CHROMIUM)('the dashboard in headless Chromium', () => {
  beforeAll(async () => {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'dashboard', 'index.html'))) throw new Error('dist/dashboard is not built: run `npm run build` first (npm test does)');
    shots = artifactDir('dashboard');
    const logStream = new PassThrough();
    logStream.on('data', (d) => logs.push(String(d)));
    server = await startServer({ dataDir: dirWithTinyModel(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'info', logStream }, { engine: { merges: 'inline' } });
    const schema = JSON.parse(fs.readFileSync(path.join(ROOT, 'fixtures', 'example', 'books.schema.json'), 'utf8'));
    expect((await api('POST', '/collections', schema)).status).toBe(201);
    expect((await api('POST', '/collections', { ...schema, name: 'imports' })).status).toBe(201);
    const lines = fs.readFileSync(path.join(ROOT, 'fixtures', 'example', 'books.jsonl'), 'utf8');
    expect((await api('POST', '/collections/books/documents/import', lines)).text).not.toContain('"success":false');
    const notes = {
      name: 'notes',
      fields: [
        { name: 'title', type: 'string' },
        { name: 'vec', type: 'float[]', num_dim: 3 },
        { name: 'emb', type: 'float[]', embed: { from: ['title'], model_config: { model_name: 'tiny' } } },
      ],
    };
    expect((await api('POST', '/collections', notes)).status).toBe(201);
    const noteDocs = [
      { id: '1', title: 'apples and pears', vec: [1, 0, 0] },
      { id: '2', title: 'rivers and lakes', vec: [0, 1, 0] },
      { id: '3', title: 'mountains in winter', vec: [0, 0, 1] },
    ];
    expect((await api('POST', '/collections/notes/documents/import', noteDocs.map((d) => JSON.stringify(d)).join('\n'))).text).not.toContain('"success":false');
    searchKey = (await api('POST', '/keys', { description: 'search books', actions: ['documents:search'], collections: ['books'] })).json.value;
    secrets.add(searchKey);
    browser = await playwright.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });

  afterEach(async () => {
    const s = open;
    open = undefined;
    if (!s) return;
    const csp = (await s.page.evaluate('globalThis.__csp')) as string[];
    await s.context.close();
    expect(s.errors, 'errors raised in the page').toEqual([]);
    expect(csp, 'Content-Security-Policy violations').toEqual([]);
    for (const url of s.requests) {
      expect(url.startsWith(`${server.url}/`) || url.startsWith('data:') || url.startsWith('blob:'), `a request outside the server: ${url}`).toBe(true);
      for (const k of secrets) expect(url.includes(k), `a key in a URL: ${url}`).toBe(false);
    }
    // every call the page makes to the API carries a key in the header (none goes without)
    for (const c of s.calls) {
      if (c.url.startsWith('blob:') || c.url.startsWith('data:')) continue;
      expect(c.key !== undefined && secrets.has(c.key), `a call without the key header: ${c.url}`).toBe(true);
    }
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('takes a key, keeps it in session storage only, and finds a book by a misspelt word', async () => {
    const { page } = await session();
    await page.goto(`${server.url}/`);
    await shot(page, 'key-asked');
    // a wrong key is refused with the server's message, and nothing is kept
    await page.fill('input[name=api-key]', WRONG);
    await page.press('input[name=api-key]', 'Enter');
    await page.waitForSelector('form.login .status-error');
    expect(await page.textContent('form.login .status-error')).toBe('The server refused the key: the API key is not valid.');
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await shot(page, 'key-refused');
    await page.fill('input[name=api-key]', ADMIN);
    await shot(page, 'key-entered');
    await page.press('input[name=api-key]', 'Enter');
    await page.waitForSelector('.ais-Hits-item');
    expect(await page.evaluate('sessionStorage.getItem("fathom.dashboard.key")')).toBe(ADMIN);
    // (the Typesense client's logger keeps its level in localStorage; never a key)
    expect(await page.evaluate('JSON.stringify(localStorage)')).not.toContain(ADMIN);
    expect(await page.evaluate('document.cookie')).toBe('');
    expect(page.url()).toBe(`${server.url}/dashboard/search`);
    expect(await page.content()).not.toContain(ADMIN);
    expect(await page.textContent('.who')).toBe('admin key');
    // at 1280x800 nothing is wider than the window
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(1280);
    // collections are offered by name
    expect(await page.$$eval('select[name=collection] option', (os) => os.map((o) => (o as unknown as { value: string }).value))).toEqual(['books', 'imports', 'notes']);
    await page.selectOption('select[name=collection]', 'notes');
    await until(page, `document.querySelector('.stats').textContent.startsWith('3 results')`);
    await page.selectOption('select[name=collection]', 'books');
    await until(page, `document.querySelector('.stats').textContent.startsWith('${BOOKS.length} results')`);
    await shot(page, 'collection-picked');

    await page.fill('.search-input', 'lighthuose kepeer');
    await until(page, `document.querySelector('.hits').dataset.query === 'lighthuose kepeer'`);
    expect(await page.textContent('.hit-title')).toBe("The Lighthouse Keeper's Garden");
    expect(await statsCount(page)).toBe(1);
    const marks = await page.$$eval('.hit-title .ais-Highlight-highlighted', (els) => els.map((e) => e.textContent));
    expect(marks).toEqual(['Lighthouse', "Keeper's"]);
    await page.click('.raw-hit summary');
    expect(await page.textContent('.raw-hit pre')).toContain('"title": "The Lighthouse Keeper\'s Garden"');
    await page.click('.raw-response summary');
    const raw = JSON.parse((await page.textContent('.raw-response pre'))!);
    expect(raw.found).toBe(1);
    expect(raw.hits[0].document.id).toBe('1');
    await shot(page, 'misspelt-query');
  });

  it('toggles facet values, sorts, pages and narrows a numeric range, with counts that match the data', async () => {
    const { page } = await session();
    await login(page, ADMIN);
    await page.waitForSelector('.ais-RefinementList-item');
    expect(await statsCount(page)).toBe(BOOKS.length);
    const fiction = page.locator('.ais-RefinementList-item', { hasText: 'fiction' });
    const shown = Number(await fiction.locator('.ais-RefinementList-count').textContent());
    const expected = BOOKS.filter((b) => b.tags.includes('fiction')).length;
    expect(shown).toBe(expected);
    await fiction.locator('input').check();
    await until(page, `/^${expected} results/.test(document.querySelector('.stats').textContent)`);
    await shot(page, 'facet-on');
    await fiction.locator('input').uncheck();
    await until(page, `/^${BOOKS.length} results/.test(document.querySelector('.stats').textContent)`);

    // sort by year, oldest first; then 20 a page, then back to 10 and page 2
    await page.selectOption('select[name=sort_by]', { label: 'year, ascending' });
    const oldest = BOOKS.slice().sort((a, b) => a.year - b.year)[0]!;
    await until(page, `document.querySelector('.hit-title')?.textContent === ${JSON.stringify(oldest.title)}`);
    expect(await page.locator('.ais-Hits-item').count()).toBe(10);
    await page.selectOption('select[name=per_page]', '20');
    await until(page, `document.querySelectorAll('.ais-Hits-item').length === ${BOOKS.length}`);
    await page.selectOption('select[name=per_page]', '10');
    await page.click('.ais-Pagination-item--page >> text="2"');
    await until(page, `document.querySelectorAll('.ais-Hits-item').length === ${BOOKS.length - 10}`);

    // years from 2015 on
    await page.fill('input[name=year-min]', '2015');
    await page.click('form.range button');
    const recent = BOOKS.filter((b) => b.year >= 2015).length;
    await until(page, `/^${recent} results/.test(document.querySelector('.stats').textContent)`);
    // filter_by typed by hand, combined with the range
    await page.fill('input[name=filter_by]', 'tags:=computing');
    await page.press('input[name=filter_by]', 'Enter');
    const both = BOOKS.filter((b) => b.year >= 2015 && b.tags.includes('computing')).length;
    await until(page, `/^${both} results/.test(document.querySelector('.stats').textContent)`);
    await shot(page, 'sort-range-filter');
    // a bad filter shows the server's message
    await page.fill('input[name=filter_by]', 'nosuchfield:=1');
    await page.press('input[name=filter_by]', 'Enter');
    await page.waitForSelector('.status-error');
    expect(await page.textContent('.status-error')).toContain('nosuchfield');
  });

  it('imports a JSONL file with a progress bar and lists the lines that failed', async () => {
    const { page } = await session();
    await login(page, ADMIN);
    await page.click('nav a[href="/dashboard/documents"]');
    await page.selectOption('select[name=collection]', 'imports');
    const file = [
      JSON.stringify({ id: '100', title: 'Imported One', authors: ['A'], year: 2001, rating: 3.1 }),
      JSON.stringify({ id: '101', title: 'No year', authors: ['A'], rating: 3 }),
      '',
      'this is not json',
      JSON.stringify({ id: '102', title: 'Imported Two', authors: ['B'], year: 2002, rating: 3.2 }),
    ].join('\n');
    await page.setInputFiles('input[name=jsonl]', { name: 'small.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(file) });
    await page.click('form.import button[type=submit]');
    await page.waitForSelector('.failures-table');
    expect(await page.textContent('form.import .status')).toBe('Imported 2 of 4 lines into imports; 2 failed (below).');
    expect(await page.getAttribute('progress', 'value')).toBe('100');
    const rows = await page.$$eval('.failures-table tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    expect(rows.map((r) => r[0])).toEqual(['2', '4']);
    expect(rows[0]![1]).toMatch(/year/);
    expect(rows[1]![2]).toBe('this is not json');
    await shot(page, 'import-failures');
    expect((await api('GET', '/collections/imports')).json.num_documents).toBe(2);
  });

  it('moves the progress bar batch by batch on a file longer than one batch', async () => {
    const { page } = await session();
    await login(page, ADMIN);
    await page.click('nav a[href="/dashboard/documents"]');
    await page.selectOption('select[name=collection]', 'imports');
    // 2,500 lines: three requests of at most 1,000 lines (dashboard/src/importer.ts); line 1,500 fails
    const lines = Array.from({ length: 2500 }, (_, i) =>
      i === 1499 ? '{"id":"bulk-1499"}' : JSON.stringify({ id: `bulk-${i}`, title: `Bulk book ${i} ${'x'.repeat(200)}`, authors: ['Bulk'], year: 1900 + (i % 100), rating: 1 }),
    );
    // every value the bar and its counts take, as the page shows them
    await page.evaluate(`(() => {
      const bar = document.querySelector('form.import progress');
      const counts = document.querySelector('form.import .counts');
      const seen = (globalThis.__progress = { values: [], counts: [] });
      new MutationObserver(() => seen.values.push(bar.value)).observe(bar, { attributes: true, attributeFilter: ['value'] });
      new MutationObserver(() => seen.counts.push(counts.textContent)).observe(counts, { childList: true, characterData: true, subtree: true });
    })()`);
    await page.setInputFiles('input[name=jsonl]', { name: 'bulk.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(lines.join('\n')) });
    await page.click('form.import button[type=submit]');
    await page.waitForSelector('.failures-table');
    expect(await page.textContent('form.import .status')).toBe('Imported 2,499 of 2,500 lines into imports; 1 failed (below).');
    const seen = (await page.evaluate('globalThis.__progress')) as { values: number[]; counts: string[] };
    expect([...new Set(seen.counts)]).toEqual(['1,000 lines: 1,000 imported, 0 failed', '2,000 lines: 1,999 imported, 1 failed', '2,500 lines: 2,499 imported, 1 failed']);
    // the bar only rises, stops part-way before the end, and ends full
    expect(seen.values.some((v) => v > 0 && v < 100), `bar values ${seen.values.join(',')}`).toBe(true);
    expect(seen.values).toEqual(seen.values.slice().sort((a, b) => a - b));
    expect(seen.values.at(-1)).toBe(100);
    expect(await page.$$eval('.failures-table tbody tr td:first-child', (tds) => tds.map((td) => td.textContent))).toEqual(['1500']);
    await shot(page, 'import-progress');
    expect((await api('GET', '/collections/imports')).json.num_documents).toBe(2 + 2499);
  });

  it('gets, edits (upsert) and deletes one document, and exports the collection', async () => {
    const { page } = await session();
    await login(page, ADMIN);
    await page.click('nav a[href="/dashboard/documents"]');
    await page.selectOption('select[name=collection]', 'books');
    await page.fill('input[name=id]', '4');
    await page.press('input[name=id]', 'Enter');
    await until(page, `document.querySelector('textarea[name=document]').value.includes('Gardens of Stone')`);
    const doc = JSON.parse(await page.inputValue('textarea[name=document]'));
    await page.fill('textarea[name=document]', JSON.stringify({ ...doc, title: 'Gardens of Stone, revised' }, null, 2));
    await page.click('text=Save (upsert)');
    // (the status line already says "Loaded 4." from the get: wait for the save's own line)
    await page.waitForSelector('.one .status-ok >> text=Saved 4.');
    expect((await api('GET', '/collections/books/documents/4')).json.title).toBe('Gardens of Stone, revised');
    await shot(page, 'document-saved');

    const download = page.waitForEvent('download');
    await page.click('text=Export as JSON Lines');
    const file = await (await download).path();
    const exported = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    expect(exported).toHaveLength(BOOKS.length);
    expect(exported.map((l) => JSON.parse(l).id).sort()).toEqual(BOOKS.map((b) => b.id).sort());

    await page.click('.one button.danger');
    await page.waitForSelector('dialog[open]');
    await shot(page, 'document-delete-confirm');
    await page.click('dialog[open] button.danger');
    await page.waitForSelector('.one .status-ok >> text=Deleted 4.');
    expect((await api('GET', '/collections/books/documents/4')).status).toBe(404);
    // put it back for the other tests
    expect((await api('POST', '/collections/books/documents?action=upsert', BOOKS.find((b) => b.id === '4'))).status).toBe(201);
  });

  it("creates a collection from JSON, shows the server's error for a bad one, and deletes one after confirming", async () => {
    const { page } = await session();
    await login(page, ADMIN);
    await page.click('nav a[href="/dashboard/collections"]');
    await page.waitForSelector('table.list tbody th');
    const bad = { name: 'bad', fields: [{ name: 'x', type: 'nope' }] };
    const refusal = await api('POST', '/collections', bad);
    expect(refusal.status).toBe(400);
    await page.fill('textarea[name=schema]', JSON.stringify(bad));
    await page.click('text=Create collection');
    await page.waitForSelector('form.create .status-error');
    expect(await page.textContent('form.create .status-error')).toBe(`The server refused it (400): ${refusal.json.message}`);
    await shot(page, 'collection-refused');

    await page.fill('textarea[name=schema]', JSON.stringify({ name: 'scratch', fields: [{ name: 'title', type: 'string' }] }));
    await page.click('text=Create collection');
    await page.waitForSelector('table.list tbody th >> text=scratch');
    const row = page.locator('tr', { has: page.locator('th', { hasText: 'scratch' }) });
    expect(await row.locator('td').first().textContent()).toBe('0');
    await row.locator('text=Schema').click();
    expect(await page.locator('pre[aria-label="Schema of scratch"]').textContent()).toContain('"name": "scratch"');
    await shot(page, 'collection-created');

    await page.click('button[aria-label="Delete collection scratch"]');
    await page.waitForSelector('dialog[open]');
    await page.click('dialog[open] >> text=Cancel');
    expect((await api('GET', '/collections/scratch')).status).toBe(200);
    await page.click('button[aria-label="Delete collection scratch"]');
    await shot(page, 'collection-delete-confirm');
    await page.click('dialog[open] button.danger');
    await page.waitForSelector('.status-ok >> text=Deleted scratch.');
    expect(await page.locator('table.list tbody th', { hasText: 'scratch' }).count()).toBe(0);
    expect((await api('GET', '/collections/scratch')).status).toBe(404);
  });

  it('creates a key, shows its value once, and deletes it', async () => {
    const { page } = await session();
    await login(page, ADMIN);
    await page.click('nav a[href="/dashboard/keys"]');
    await page.waitForSelector('table.list tbody tr');
    await page.fill('input[name=description]', 'made in the dashboard');
    await page.selectOption('select[name=preset]', 'search');
    await page.fill('input[name=collections]', 'books');
    await page.click('text=Create key');
    await page.waitForSelector('.key-value');
    const value = await page.inputValue('.key-value');
    expect(value.length).toBeGreaterThan(20);
    secrets.add(value);
    expect(await page.evaluate('document.activeElement.className')).toContain('key-value');
    await shot(page, 'key-created');
    expect((await api('GET', '/collections/books/documents/search?q=dune&query_by=title', undefined, value)).status).toBe(200);
    expect((await api('GET', '/collections/imports/documents/search?q=dune&query_by=title', undefined, value)).status).toBe(401);
    await page.click('.new-key >> text=Done');
    expect(await page.locator('.key-value').count()).toBe(0);
    expect(await page.content()).not.toContain(value);

    const id = (await api('GET', '/keys')).json.keys.find((k: { description: string }) => k.description === 'made in the dashboard').id;
    await page.waitForSelector(`button[aria-label="Delete key ${id} (made in the dashboard)"]`);
    await page.click(`button[aria-label="Delete key ${id} (made in the dashboard)"]`);
    await page.waitForSelector('dialog[open]');
    await page.click('dialog[open] button.danger');
    await page.waitForSelector(`.status-ok >> text=Deleted key ${id}.`);
    expect(await page.locator(`button[aria-label^="Delete key ${id} "]`).count()).toBe(0);
    expect((await api('GET', '/collections/books/documents/search?q=dune&query_by=title', undefined, value)).status).toBe(401);
    await shot(page, 'key-deleted');
  });

  it('gives a search-only key the search and none of the admin parts', async () => {
    const { page } = await session();
    await login(page, searchKey);
    await page.waitForSelector('.ais-Hits-item');
    expect(await page.$$eval('header nav a', (as) => as.map((a) => a.textContent))).toEqual(['Search']);
    expect(await page.textContent('.who')).toBe('search-only key');
    expect(await page.$$eval('select[name=collection] option', (os) => os.map((o) => (o as unknown as { value: string }).value))).toEqual(['books']);
    await page.fill('.search-input', 'gardn');
    await until(page, `document.querySelector('.stats').textContent.startsWith('4 results')`);
    await shot(page, 'search-only-key');
    // the admin views cannot be reached by their paths either
    for (const p of ['/dashboard/keys', '/dashboard/collections', '/dashboard/documents']) {
      await page.goto(`${server.url}${p}`);
      await page.waitForSelector('.view-search');
      expect(page.url()).toBe(`${server.url}/dashboard/search`);
      expect(await page.locator('text=Create key').count()).toBe(0);
      expect(await page.locator('text=Import a JSON Lines file').count()).toBe(0);
      expect(await page.locator('text=Create a collection').count()).toBe(0);
    }
  });

  it('searches with vector_query and with an embedding field in query_by', async () => {
    const { page } = await session();
    const bodies: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/multi_search')) bodies.push(r.postData() ?? '');
    });
    await login(page, ADMIN);
    await page.selectOption('select[name=collection]', 'notes');
    await until(page, `document.querySelectorAll('.ais-Hits-item').length === 3`);
    expect(await page.locator('label.check', { hasText: 'emb' }).locator('.tag').textContent()).toBe('semantic');
    // the vectors are left out of hits
    expect(JSON.parse(bodies.at(-1)!).searches[0].exclude_fields).toBe('vec,emb');
    await page.check('input[name=query_by][value=emb]');
    await page.fill('.search-input', 'pears');
    await until(page, `document.querySelector('.hits').dataset.query === 'pears' && document.querySelector('.hit-title')?.textContent === 'apples and pears'`);
    expect(JSON.parse(bodies.at(-1)!).searches[0].query_by).toBe('title,emb');
    await page.fill('.search-input', '');
    await until(page, `document.querySelector('.hits').dataset.query === '*'`);
    // nearest first: 2 (distance 0.5), 3, then 1; an order no plain listing gives
    await page.fill('input[name=vector_query]', 'vec:([0, 1, 0.5], k: 3)');
    await page.press('input[name=vector_query]', 'Enter');
    const titles = `[...document.querySelectorAll('.hit-title')].map((e) => e.textContent).join('|')`;
    await until(page, `${titles} === 'rivers and lakes|mountains in winter|apples and pears'`);
    expect(JSON.parse(bodies.at(-1)!).searches[0].vector_query).toBe('vec:([0, 1, 0.5], k: 3)');
    expect(await page.locator('.status-error').count()).toBe(0);
    await shot(page, 'vector-query');
  });

  it('works from the keyboard alone, with every control labelled, on a phone-sized screen', async () => {
    const { page } = await session({ width: 390, height: 844 });
    await page.goto(`${server.url}/`);
    expect(await page.evaluate('document.activeElement.name')).toBe('api-key');
    expect(await page.evaluate(UNLABELLED)).toEqual([]);
    await page.keyboard.type(ADMIN);
    await page.keyboard.press('Enter');
    await page.waitForSelector('.ais-Hits-item');
    expect(await page.evaluate('document.activeElement.className')).toContain('search-input');
    await page.keyboard.type('gardn');
    await until(page, `document.querySelector('.stats').textContent.startsWith('4 results')`);
    // one column: nothing wider than the screen, the refinements folded away
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(await page.evaluate('document.querySelector("details.facets").open')).toBe(false);
    expect(await page.evaluate(UNLABELLED)).toEqual([]);
    await shot(page, 'phone-search');
    // Tab walks through visible controls, each showing where the focus is
    for (let i = 0; i < 8; i++) {
      await page.keyboard.press('Tab');
      const f = (await page.evaluate(`(() => { const e = document.activeElement; const s = getComputedStyle(e); return { tag: e.tagName, visible: e.getClientRects().length > 0, outline: s.outlineStyle }; })()`)) as { tag: string; visible: boolean; outline: string };
      expect(f.tag).not.toBe('BODY');
      expect(f.visible).toBe(true);
      expect(f.outline).not.toBe('none');
    }
    for (const tab of ['collections', 'documents', 'keys']) {
      await page.click(`nav a[href="/dashboard/${tab}"]`);
      await page.waitForSelector('.view h2');
      expect(await page.evaluate('document.activeElement.tagName'), `focus goes to the ${tab} heading`).toBe('H2');
      expect(await page.evaluate(UNLABELLED), tab).toEqual([]);
      expect(await page.evaluate('document.documentElement.scrollWidth'), tab).toBeLessThanOrEqual(390);
      await shot(page, `phone-${tab}`);
    }
    // signing out forgets the key
    await page.click('text=Sign out');
    await page.waitForSelector('input[name=api-key]');
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
  });

  it('leaves no key in any server log line', () => {
    const text = logs.join('');
    expect(text).toContain('"url":"/dashboard/api/access"');
    for (const k of secrets) expect(text.includes(k)).toBe(false);
  });
});
