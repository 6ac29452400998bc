import { describe, expect, it } from 'vitest';
import { cli } from './helpers.js';
import { booksEngine } from './explore-fixture.js';

describe('fathom explore on the command line', () => {
  it('points to fathom search when not run in a terminal', async () => {
    const { engine, dir } = await booksEngine();
    await engine.close();
    const r = await cli(['explore', 'books', '-d', dir]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('error: fathom explore is interactive and needs a terminal (stdin and stdout must be a TTY); in scripts and pipes use `fathom search books -q <query>`\n');
  });

  it('needs an API key with --server', async () => {
    const r = await cli(['explore', 'books', '--server', 'http://localhost:8108'], { env: { FATHOM_API_KEY: '' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--server needs --api-key/);
  });

  it('refuses --data-dir together with --server', async () => {
    const r = await cli(['explore', 'books', '--server', 'http://localhost:8108', '--api-key', 'k', '-d', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('error: choose one of --data-dir and --server\n');
  });

  it('refuses a --server that is not an http URL', async () => {
    const r = await cli(['explore', 'books', '--server', 'localhost:8108', '--api-key', 'k']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--server must be an http:\/\/ or https:\/\/ URL/);
  });

  it('sends other search parameters with --param but not the ones it controls', async () => {
    const r = await cli(['explore', 'books', '--param', 'per_page=5']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('error: --param per_page is set by --per-page, not --param\n');
  });

  it('passes a --param named like an Object.prototype member on, as any other', async () => {
    for (const name of ['constructor', 'toString', '__proto__']) {
      const r = await cli(['explore', 'books', '--param', `${name}=x`]);
      expect(r.stderr).toMatch(/^error: fathom explore is interactive and needs a terminal/);
    }
  });

  it('is listed in fathom --help', async () => {
    const r = await cli(['--help']);
    expect(r.stdout).toMatch(/explore \[options\] <collection>/);
  });
});
