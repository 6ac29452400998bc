/**
 * Search analytics through `fathom serve`, driven by the official `typesense` client:
 * rules (`client.analytics.rules()`), events (`client.analytics.events()`), searches
 * aggregated into popular and no-hit queries after a real 4-second pause, counters, the
 * permissions, and the flush at a graceful stop.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { Engine } from '../src/engine.js';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { dataDirPath } from './helpers.js';

const ADMIN = 'analytics-admin-key';
let server: RunningServer;
let plain: RunningServer; // analytics not enabled
let client: Client;
let dataDir: string;

function clientFor(s: RunningServer, apiKey: string, headers: Record<string, string> = {}): Client {
  return new Client({
    nodes: [{ host: '127.0.0.1', port: s.port, protocol: 'http' }],
    apiKey,
    connectionTimeoutSeconds: 5,
    logLevel: 'silent',
    additionalHeaders: headers,
  });
}

async function call(method: string, path: string, key: string | undefined, body?: unknown, s = server) {
  const headers: Record<string, string> = {};
  if (key !== undefined) headers['x-typesense-api-key'] = key;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${s.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const PRODUCTS = {
  name: 'products',
  fields: [
    { name: 'title', type: 'string' },
    { name: 'popularity', type: 'int32', optional: true },
    { name: 'label', type: 'string', optional: true },
  ],
};
const QUERIES = (name: string) => ({ name, fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'int32' }] });

const popular = (destination: string, extra: Record<string, unknown> = {}) => ({
  type: 'popular_queries',
  params: { source: { collections: ['products'] }, destination: { collection: destination }, limit: 1000, ...extra },
});

const counter = (events: unknown[], field = 'popularity', collection = 'products') => ({
  type: 'counter',
  params: { source: { collections: [collection], events }, destination: { collection, counter_field: field } },
});

beforeAll(async () => {
  dataDir = dataDirPath();
  server = await startServer(
    { dataDir, apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent', analytics: { enabled: true } },
    { engine: { merges: 'inline' } },
  );
  plain = await startServer({ dataDir: dataDirPath(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  client = clientFor(server, ADMIN);
  await client.collections().create(PRODUCTS as never);
  for (const n of ['product_queries', 'nohits_queries', 'expanded_queries', 'top_queries', 'spare_queries']) await client.collections().create(QUERIES(n) as never);
  await client.collections().create({ name: 'books', fields: [{ name: 'title', type: 'string' }] } as never);
  await client.collections().create({ name: 'bad_queries', fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'string' }] } as never);
  await client
    .collections('products')
    .documents()
    .import([
      { id: '1', title: 'The Secret Garden', label: 'x' },
      { id: '2', title: 'Garden tools' },
      { id: '3', title: 'Kitchen knife' },
      { id: '4', title: 'Garden hose reel' },
    ]);
  await client.collections('books').documents().import([{ id: '1', title: 'Dune' }]);
});

afterAll(async () => {
  await server?.stop();
  await plain?.stop();
});

describe('analytics rules', () => {
  it('upserts a popular_queries rule with the typesense client and reads it back', async () => {
    const rule = popular('product_queries');
    const saved = await client.analytics.rules().upsert('product_queries_rule', rule as never);
    expect(saved).toEqual({ name: 'product_queries_rule', ...rule });
    // the list is Typesense 30's: a bare array, each rule in its shape
    expect(await client.analytics.rules().retrieve()).toEqual([
      {
        name: 'product_queries_rule',
        type: 'popular_queries',
        collection: 'products',
        event_type: 'query',
        params: { destination_collection: 'product_queries', limit: 1000, expand_query: false, capture_search_requests: true },
      },
    ]);
    expect(await client.analytics.rules('product_queries_rule').retrieve()).toEqual({ name: 'product_queries_rule', ...rule });
  });

  it('upserts the same rule through the deprecated analyticsV1 client too', async () => {
    const rule = { type: 'nohits_queries' as const, params: { source: { collections: ['products'] }, destination: { collection: 'nohits_queries' }, limit: 1000 } };
    const warn = console.warn;
    console.warn = () => {};
    try {
      expect(await client.analyticsV1.rules().upsert('nohits_rule', rule)).toEqual({ name: 'nohits_rule', ...rule });
    } finally {
      console.warn = warn;
    }
  });

  it('creates a rule with POST (201) and answers 409 for a second one of that name', async () => {
    const body = { name: 'spare_rule', ...popular('spare_queries') };
    const first = await call('POST', '/analytics/rules', ADMIN, body);
    expect(first.status).toBe(201);
    expect(first.json).toEqual(body);
    const again = await call('POST', '/analytics/rules', ADMIN, body);
    expect(again.status).toBe(409);
    expect(again.json.message).toMatch(/already exists/);
  });

  it('deletes a rule, answering its name; the rule is then 404', async () => {
    expect(await client.analytics.rules('spare_rule').delete()).toEqual({ name: 'spare_rule' });
    await expect(client.analytics.rules('spare_rule').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
    await expect(client.analytics.rules('spare_rule').delete()).rejects.toMatchObject({ httpStatus: 404 });
  });

  it.each([
    ['an unknown type', { type: 'top_queries', params: popular('spare_queries').params }, /`type` must be one of popular_queries, nohits_queries, counter/],
    ['no destination', { type: 'popular_queries', params: { source: { collections: ['products'] } } }, /`params.destination` is required/],
    ['a destination that does not exist', popular('nowhere'), /destination collection `nowhere` does not exist/],
    ['a destination without q and count', popular('books'), /needs a field `q` of type string/],
    ['a destination whose count is a string', popular('bad_queries'), /needs a field `count` of type int32/],
    ['no source collections', { type: 'popular_queries', params: { source: { collections: [] }, destination: { collection: 'spare_queries' } } }, /non-empty array of collection names/],
    ['a limit of 0', popular('spare_queries', { limit: 0 }), /`params.limit` must be a whole number between 1 and/],
    ['a counter field that does not exist', counter([{ type: 'click', weight: 1, name: 'c1' }], 'nope'), /counter field `nope` is not a field of collection `products`/],
    ['a counter field that is a string', counter([{ type: 'click', weight: 1, name: 'c1' }], 'label'), /counter field `label` must be numeric/],
    ['an event type that does not exist', counter([{ type: 'purchase', weight: 1, name: 'c1' }]), /an event's `type` must be one of click, conversion, visit/],
    ['a fractional weight', counter([{ type: 'click', weight: 1.5, name: 'c1' }]), /`weight` must be a non-zero whole number/],
    ['a weight that is a string', counter([{ type: 'click', weight: '2', name: 'c1' }]), /`weight` must be a non-zero whole number/],
    ['no events', counter([]), /a counter rule needs `params.source.events`/],
  ])('refuses a rule with %s (400, naming the problem)', async (_what, body, message) => {
    const r = await call('PUT', '/analytics/rules/bad_rule', ADMIN, body);
    expect(r.status).toBe(400);
    expect(r.json.message).toMatch(message);
  });

  it('refuses an event name another rule already uses', async () => {
    await client.analytics.rules().upsert('clicks_rule', counter([{ type: 'click', weight: 1, name: 'product_click' }, { type: 'conversion', weight: 5, name: 'product_buy' }]) as never);
    const r = await call('PUT', '/analytics/rules/other_clicks', ADMIN, counter([{ type: 'visit', weight: 1, name: 'product_click' }]));
    expect(r.status).toBe(400);
    expect(r.json.message).toBe('event name `product_click` is already used by rule `clicks_rule`; each event name belongs to one rule');
    // Replacing the rule that owns the name is fine.
    expect((await call('PUT', '/analytics/rules/clicks_rule', ADMIN, counter([{ type: 'click', weight: 1, name: 'product_click' }, { type: 'conversion', weight: 5, name: 'product_buy' }]))).status).toBe(200);
  });
});

describe('analytics permissions', () => {
  const keys: Record<string, string> = {};
  beforeAll(async () => {
    const make = async (actions: string[], collections = ['*']) => (await client.keys().create({ description: 't', actions, collections })).value!;
    keys.searchOnly = await make(['documents:search'], ['products']);
    keys.rules = await make(['analytics/rules:*']);
    keys.events = await make(['analytics/events:create']);
    keys.all = await make(['analytics:*']);
    keys.booksRules = await make(['analytics/rules:*'], ['books']);
    keys.booksEvents = await make(['analytics/events:create'], ['books']);
  });
  const event = { type: 'click', name: 'product_click', data: { doc_id: '3', user_id: 'perm' } };

  it('lets a search-only key neither create nor list rules, nor send events', async () => {
    expect((await call('PUT', '/analytics/rules/x', keys.searchOnly, popular('spare_queries'))).status).toBe(401);
    expect((await call('GET', '/analytics/rules', keys.searchOnly)).status).toBe(401);
    expect((await call('POST', '/analytics/events', keys.searchOnly, event)).status).toBe(401);
  });

  it('lets an analytics/rules:* key manage rules but not send events', async () => {
    expect((await call('PUT', '/analytics/rules/perm_rule', keys.rules, popular('spare_queries'))).status).toBe(200);
    expect((await call('GET', '/analytics/rules/perm_rule', keys.rules)).status).toBe(200);
    expect((await call('DELETE', '/analytics/rules/perm_rule', keys.rules)).status).toBe(200);
    const r = await call('POST', '/analytics/events', keys.rules, event);
    expect(r.status).toBe(401);
    expect(r.json.message).toMatch(/does not allow `analytics\/events:create`/);
  });

  it('lets each analytics/rules action do only what it names', async () => {
    const only = async (action: string) => (await client.keys().create({ description: 't', actions: [action], collections: ['*'] })).value!;
    const [create, get, list, del] = await Promise.all(['create', 'get', 'list', 'delete'].map((v) => only(`analytics/rules:${v}`)));
    const statuses = async (key: string | undefined) => [
      (await call('PUT', '/analytics/rules/one_action', key, popular('spare_queries'))).status,
      (await call('GET', '/analytics/rules/one_action', key)).status,
      (await call('GET', '/analytics/rules', key)).status,
      (await call('DELETE', '/analytics/rules/one_action', key)).status,
    ];
    // Each row is PUT, GET one, list, DELETE: the `create` key makes the rule, the `delete` key removes it.
    expect(await statuses(create)).toEqual([200, 401, 401, 401]);
    expect(await statuses(get)).toEqual([401, 200, 401, 401]);
    expect(await statuses(list)).toEqual([401, 401, 200, 401]);
    expect(await statuses(del)).toEqual([401, 401, 401, 200]);
    expect((await call('GET', '/analytics/rules/one_action', ADMIN)).status).toBe(404);
  });

  it('lets an analytics/events:create key send events and nothing else', async () => {
    expect(await clientFor(server, keys.events!).analytics.events().create(event)).toEqual({ ok: true });
    expect((await call('GET', '/analytics/rules', keys.events)).status).toBe(401);
    expect((await call('POST', '/analytics/flush', keys.events)).status).toBe(401);
  });

  it('lets an analytics:* key do everything analytics', async () => {
    expect((await call('PUT', '/analytics/rules/perm_rule', keys.all, popular('spare_queries'))).status).toBe(200);
    expect((await call('GET', '/analytics/rules', keys.all)).status).toBe(200);
    expect((await call('POST', '/analytics/events', keys.all, event)).status).toBe(201);
    expect((await call('DELETE', '/analytics/rules/perm_rule', keys.all)).status).toBe(200);
  });

  it('limits rules and events to the collections of the key', async () => {
    const r = await call('PUT', '/analytics/rules/books_rule', keys.booksRules, popular('spare_queries'));
    expect(r.status).toBe(401);
    expect(r.json.message).toMatch(/`products`/);
    const listed = await call('GET', '/analytics/rules', keys.booksRules);
    expect(listed.json).toEqual([]);
    // An event counts into its rule's destination, which the key must cover too.
    const e = await call('POST', '/analytics/events', keys.booksEvents, event);
    expect(e.status).toBe(401);
    expect(e.json.message).toMatch(/`products`/);
  });
});

describe('analytics events', () => {
  it('refuses events with a 400 naming the flag when analytics is not enabled, and finds nothing to flush', async () => {
    const r = await call('POST', '/analytics/events', ADMIN, { type: 'click', name: 'product_click', data: { doc_id: '1', user_id: 'u' } }, plain);
    expect(r.status).toBe(400);
    expect(r.json.message).toMatch(/--enable-search-analytics/);
    expect(await call('POST', '/analytics/flush', ADMIN, undefined, plain)).toEqual({ status: 200, json: { ok: true } });
  });

  it.each([
    ['an event name no rule has', { type: 'click', name: 'nope', data: { doc_id: '1', user_id: 'u' } }, /no analytics rule has an event named `nope`/],
    ['a type other than the rule event', { type: 'visit', name: 'product_click', data: { doc_id: '1', user_id: 'u' } }, /`product_click` is a click event \(rule `clicks_rule`\), not a visit event/],
    ['an unknown type', { type: 'purchase', name: 'product_click', data: { doc_id: '1', user_id: 'u' } }, /must be one of click, conversion, visit/],
    ['no doc_id', { type: 'click', name: 'product_click', data: { user_id: 'u' } }, /`data.doc_id`/],
    ['no user_id', { type: 'click', name: 'product_click', data: { doc_id: '1' } }, /`data.user_id`/],
    ['no data', { type: 'click', name: 'product_click' }, /needs `data`/],
  ])('refuses an event with %s (400)', async (_what, body, message) => {
    const r = await call('POST', '/analytics/events', ADMIN, body);
    expect(r.status).toBe(400);
    expect(r.json.message).toMatch(message);
  });
});

describe('aggregating searches (one real 4-second pause)', () => {
  let flushed: Record<string, unknown>;
  const counts = async (collection: string) => {
    const out: Record<string, number> = {};
    const r = await client.collections(collection).documents().search({ q: '*', per_page: 250 } as never);
    for (const h of r.hits ?? []) out[(h.document as { q: string }).q] = (h.document as { count: number }).count;
    return out;
  };

  beforeAll(async () => {
    await client.analytics.rules().upsert('expanded_rule', popular('expanded_queries', { expand_query: true }) as never);
    await client.analytics.rules().upsert('top_rule', popular('top_queries', { limit: 2 }) as never);
    const search = (q: string, user?: string, extra: Record<string, unknown> = {}) =>
      client
        .collections('products')
        .documents()
        .search({ q, query_by: 'title', ...(user ? { 'x-typesense-user-id': user } : {}), ...extra } as never);
    // alice types a query; only the last one counts.
    for (const q of ['g', 'ga', 'gar', 'garden']) await search(q, 'alice');
    // More users search `garden` (one through the user-id header), `knife` twice.
    await search('garden', 'g2');
    await clientFor(server, ADMIN, { 'x-typesense-user-id': 'g3' }).collections('products').documents().search({ q: 'Garden', query_by: 'title' });
    await search('  GARDEN ', 'g4');
    await search('knife', 'k1');
    // Two users named the other way (the X-SERVICE-USER-ID header, the x-service-user-id
    // parameter) type `kn` then `knife` turn about: each is a user of their own, so `knife`
    // counts twice; taken for one address they would count once, or not at all.
    const byServiceHeader = clientFor(server, ADMIN, { 'X-SERVICE-USER-ID': 's1' }).collections('products').documents();
    await byServiceHeader.search({ q: 'kn', query_by: 'title' });
    await search('kn', undefined, { 'x-service-user-id': 's2' });
    await byServiceHeader.search({ q: 'knife', query_by: 'title' });
    await search('knife', undefined, { 'x-service-user-id': 's2' });
    // bob's query is normalised; carol's prefix is expanded by the expand_query rule only.
    await search('Garden   TOOLS ', 'bob');
    await search('kitch', 'carol');
    // A search that finds nothing.
    await search('zzzz', 'erin');
    // Never recorded: match-all, and enable_analytics=false.
    await search('*', 'frank');
    await search('hose', 'frank', { enable_analytics: false });
    // Without a user id the address is the user: `hose` is cancelled by `hose reel`.
    await search('hose', undefined);
    await search('hose reel', undefined);
    // A multi_search: the `products` search counts, the `books` one feeds no rule.
    await client.multiSearch.perform({ searches: [{ collection: 'products', q: 'knife', query_by: 'title' }, { collection: 'books', q: 'dune', query_by: 'title' }] }, { 'x-typesense-user-id': 'k2' } as never);
    await sleep(4300);
    flushed = (await call('POST', '/analytics/flush', ADMIN)).json;
  });

  it('flushes on POST /analytics/flush and reports what it wrote', () => {
    expect(flushed).toMatchObject({ ok: true, batches: 1, failed: 0 });
  });

  it('records each user\'s last query after the pause, normalised, and counts users', async () => {
    expect(await counts('product_queries')).toEqual({ garden: 4, knife: 4, 'garden tools': 1, kitch: 1, zzzz: 1, 'hose reel': 1 });
  });

  it('records searches that found nothing in a nohits_queries rule', async () => {
    expect(await counts('nohits_queries')).toEqual({ zzzz: 1 });
  });

  it('records the word a prefix completed to with expand_query', async () => {
    expect(await counts('expanded_queries')).toEqual({ garden: 4, knife: 4, 'garden tools': 1, kitchen: 1, zzzz: 1, 'hose reel': 1 });
  });

  it('keeps the `limit` most counted queries in the destination', async () => {
    expect(await counts('top_queries')).toEqual({ garden: 4, knife: 4 });
  });

  it('serves query suggestions from the destination collection', async () => {
    const r = await client.collections('product_queries').documents().search({ q: 'gar', query_by: 'q', sort_by: 'count:desc' });
    expect(r.hits!.map((h) => (h.document as { q: string }).q)).toEqual(['garden', 'garden tools']);
  });

  it('adds nothing on a second flush', async () => {
    expect((await call('POST', '/analytics/flush', ADMIN)).json).toMatchObject({ batches: 0 });
    expect((await counts('product_queries')).garden).toBe(4);
  });
});

describe('counters', () => {
  it('adds each event\'s weight to the counter field at the flush, skipping documents that do not exist', async () => {
    const events = clientFor(server, ADMIN).analytics.events();
    await Promise.all([
      events.create({ type: 'click', name: 'product_click', data: { doc_id: '1', user_id: 'u1', q: 'garden' } }),
      events.create({ type: 'click', name: 'product_click', data: { doc_id: '1', user_id: 'u2' } }),
      events.create({ type: 'conversion', name: 'product_buy', data: { doc_id: '1', user_id: 'u2' } }),
      events.create({ type: 'click', name: 'product_click', data: { doc_id: 'missing', user_id: 'u3' } }),
    ]);
    expect(await client.collections('products').documents('1').retrieve()).not.toHaveProperty('popularity');
    const report = (await call('POST', '/analytics/flush', ADMIN)).json;
    expect(report).toMatchObject({ counters: 1, skipped_documents: 1 });
    expect(((await client.collections('products').documents('1').retrieve()) as { popularity?: number }).popularity).toBe(7);
    // (the permission tests' two clicks on document 3 went out with the searches' flush)
    expect(((await client.collections('products').documents('3').retrieve()) as { popularity?: number }).popularity).toBe(2);
  });

  it('sorts by the counter like any numeric field', async () => {
    const r = await client.collections('products').documents().search({ q: 'garden', query_by: 'title', sort_by: 'popularity:desc' });
    expect(r.hits![0]!.document).toMatchObject({ id: '1' });
  });

  it('flushes pending counters when the server stops gracefully', async () => {
    await client.analytics.events().create({ type: 'click', name: 'product_click', data: { doc_id: '2', user_id: 'u4' } });
    await server.stop();
    const engine = Engine.open(dataDir, { merges: 'off' });
    try {
      expect(engine.getDocument('products', '2').popularity).toBe(1);
    } finally {
      await engine.close();
    }
  });
});
