import fs from 'node:fs';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildId, loadProgram } from '../bin/program.cjs';
import { ROOT } from './helpers.js';

const DIST = path.join(ROOT, 'dist');

// A copy of the built program in a folder of its own (under node_modules/, so that its
// require() of lmdb and the other dependencies resolves as it does from dist/).
const copies: string[] = [];
function copyOfProgram(): string {
  const base = path.join(ROOT, 'node_modules', '.cache');
  fs.mkdirSync(base, { recursive: true });
  const dir = fs.mkdtempSync(path.join(base, 'fathom-loader-test-'));
  fs.copyFileSync(path.join(DIST, 'main.cjs'), path.join(dir, 'main.cjs'));
  copies.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of copies) fs.rmSync(d, { recursive: true, force: true });
});

describe('bin/program.cjs (the program loader)', () => {
  it('runs the program without a code cache, writes one, and the next start uses it', async () => {
    const dir = copyOfProgram();
    const first = loadProgram(dir);
    expect(first.usedCache).toBe(false);
    expect(await first.main(['node', 'fathom', '--version'])).toBe(0);
    expect(first.saveCache()).toBe(true);
    const cache = fs.readFileSync(path.join(dir, 'main.cjs.cache'));
    const id = buildId(fs.readFileSync(path.join(dir, 'main.cjs'), 'utf8'));
    expect(id).toBeTruthy();
    expect(cache.subarray(0, cache.indexOf(10)).toString('latin1')).toBe(id);

    const second = loadProgram(dir);
    expect(second.usedCache).toBe(true);
    expect(second.saveCache()).toBe(false); // nothing new to write
    expect(await second.main(['node', 'fathom', '--version'])).toBe(0);
  });

  it('ignores a code cache written for another build and replaces it', async () => {
    const dir = copyOfProgram();
    const first = loadProgram(dir);
    first.saveCache();
    const file = path.join(dir, 'main.cjs.cache');
    const cache = fs.readFileSync(file);
    const data = cache.subarray(cache.indexOf(10) + 1);
    fs.writeFileSync(file, Buffer.concat([Buffer.from('0123456789abcdef01234567\n'), data]));

    const next = loadProgram(dir);
    expect(next.usedCache).toBe(false);
    expect(await next.main(['node', 'fathom', '--version'])).toBe(0);
    expect(next.saveCache()).toBe(true);
    expect(loadProgram(dir).usedCache).toBe(true);
  });

  it('runs normally when V8 rejects the cached code (another Node version)', async () => {
    const dir = copyOfProgram();
    const id = buildId(fs.readFileSync(path.join(dir, 'main.cjs'), 'utf8'))!;
    fs.writeFileSync(path.join(dir, 'main.cjs.cache'), Buffer.concat([Buffer.from(id + '\n'), Buffer.alloc(4096, 7)]));
    const p = loadProgram(dir);
    expect(p.usedCache).toBe(false);
    expect(await p.main(['node', 'fathom', '--version'])).toBe(0);
  });

  it('finds a code cache for the installed build beside dist/main.cjs (made by the build)', () => {
    const id = buildId(fs.readFileSync(path.join(DIST, 'main.cjs'), 'utf8'));
    const cache = fs.readFileSync(path.join(DIST, 'main.cjs.cache'));
    expect(cache.subarray(0, cache.indexOf(10)).toString('latin1')).toBe(id);
    expect(cache.length).toBeGreaterThan(100_000); // the warm-up compiled the common commands
  });

  it('says how to build when dist/ is missing, in one line, exit status 1', () => {
    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-unbuilt-'));
    copies.push(project);
    fs.mkdirSync(path.join(project, 'bin'));
    for (const f of ['fathom.js', 'program.cjs', 'package.json']) fs.copyFileSync(path.join(ROOT, 'bin', f), path.join(project, 'bin', f));
    const r = spawnSync(process.execPath, [path.join(project, 'bin', 'fathom.js'), '--version'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('error: fathom is not built yet; run `npm install` (or `npm run build`) in the project directory\n');
  });
});
