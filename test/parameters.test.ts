/**
 * The search parameter table (src/query/parameters.ts) is what the parser, `fathom search
 * --help` and the README say: one declaration, three readers that cannot drift apart.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, cli } from './helpers.js';
import { SEARCH_PARAMETERS, parameterMarkdown } from '../src/query/parameters.js';
import { parseCacheParams, parseSearchParams } from '../src/query/params.js';

describe('the search parameter table', () => {
  it('gives the parser its defaults', () => {
    const parsed = { ...parseSearchParams({ q: '*' }), ...parseCacheParams({}) } as unknown as Record<string, unknown>;
    const cache: Record<string, unknown> = { use_cache: parsed.use, cache_ttl: (parsed.ttlMs as number) / 1000 };
    for (const p of SEARCH_PARAMETERS) {
      if (p.default === undefined) continue;
      const got = p.name in cache ? cache[p.name] : parsed[p.name];
      expect(Array.isArray(got) ? (got as unknown[])[0] : got, p.name).toBe(p.default);
    }
  });

  it('gives the parser its ranges: the ends are accepted, one past them refused', () => {
    for (const p of SEARCH_PARAMETERS) {
      if (p.kind !== 'int' || p.min === undefined || p.max === undefined) continue;
      const parse = (v: number) => (p.name === 'cache_ttl' ? parseCacheParams({ cache_ttl: String(v) }) : parseSearchParams({ q: '*', [p.name]: String(v) }));
      expect(() => parse(p.min!), p.name).not.toThrow();
      expect(() => parse(p.max!), p.name).not.toThrow();
      expect(() => parse(p.min! - 1), p.name).toThrow(/must be between/);
      expect(() => parse(p.max! + 1), p.name).toThrow(/must be between/);
    }
  });

  it('is the parameter list in README.md (npm run docs rewrites it)', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const block = readme.slice(readme.indexOf('<!-- search-parameters:start'), readme.indexOf('<!-- search-parameters:end -->'));
    expect(block.slice(block.indexOf('\n') + 1).trim()).toBe(parameterMarkdown());
  });

  it('is what fathom search --help lists, one flag per parameter the table marks', async () => {
    const help = await cli(['search', '--help']);
    expect(help.code).toBe(0);
    for (const p of SEARCH_PARAMETERS.filter((x) => x.flag)) expect(help.stdout, p.name).toContain(`--${p.name.replace(/_/g, '-')} <value>`);
  });
});
