/**
 * docs/compatibility.md is generated from the route table (src/server/compatibility.ts) and
 * the search parameter table, and the route table is held to the app: each route it marks
 * served is routed, each it marks absent is not.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/server/app.js';
import type { Engine } from '../src/engine.js';
import { REFERENCE_ROUTES, compatibilityMarkdown } from '../src/server/compatibility.js';
import { REFERENCE_ONLY_PARAMETERS, SEARCH_PARAMETERS } from '../src/query/parameters.js';
import { ROOT, openEngine } from './helpers.js';

const KEY = 'docs-key';
let engine: Engine;
let app: FastifyInstance;

beforeAll(async () => {
  engine = openEngine();
  app = buildApp({ engine, apiKey: KEY, logLevel: 'silent', importThread: false }).app;
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await engine?.close();
});

/** Whether the app routes `method path` to a handler of its own (not 404 "no route", not 405). */
async function routed(method: string, pattern: string): Promise<boolean> {
  const url = pattern.replace(/:[a-z_]+/g, 'probe-value');
  const res = await app.inject({ method: method as 'GET', url, headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' }, payload: method === 'GET' || method === 'DELETE' ? undefined : '{}' });
  if (res.statusCode === 405) return false;
  return !(res.statusCode === 404 && /^no route for /.test((res.json() as { message: string }).message));
}

describe('docs/compatibility.md', () => {
  it('is what npm run docs generates from the tables', () => {
    expect(fs.readFileSync(path.join(ROOT, 'docs', 'compatibility.md'), 'utf8')).toBe(compatibilityMarkdown());
  });

  it('lists every route once, and every search parameter of the table and the reference once', () => {
    const keys = REFERENCE_ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    const names = [...SEARCH_PARAMETERS.map((p) => p.name), ...REFERENCE_ONLY_PARAMETERS.map((p) => p.name)];
    expect(new Set(names).size).toBe(names.length);
  });

  it('marks served exactly the routes the app serves', async () => {
    const wrong: string[] = [];
    for (const r of REFERENCE_ROUTES) {
      const served = await routed(r.method, r.path);
      if (served !== (r.state !== 'absent')) wrong.push(`${r.method} ${r.path}: table says ${r.state}, the app ${served ? 'serves it' : 'does not'}`);
    }
    expect(wrong).toEqual([]);
  });
});
