/** Shared test helpers: temporary data directories, engines and a CLI runner. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { Engine, type EngineOptions } from '../src/engine.js';

export const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const BIN = path.join(ROOT, 'bin', 'fathom.js');

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A fresh temporary directory, removed after the test file. */
export function tmpDir(prefix = 'fathom-test-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** A path for a data directory that does not exist yet. */
export function dataDirPath(): string {
  return path.join(tmpDir(), 'data');
}

export function openEngine(dir = dataDirPath(), opts: EngineOptions = {}): Engine {
  return Engine.open(dir, { merges: 'inline', ...opts });
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `fathom` binary. */
export function cli(args: string[], opts: { input?: string | Buffer; env?: Record<string, string> } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, FORCE_COLOR: '0', ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

export function lines(s: string): string[] {
  return s.split('\n').filter((l) => l.length > 0);
}

export function jsonLines(s: string): any[] {
  return lines(s).map((l) => JSON.parse(l));
}

/** Deterministic pseudo-random numbers (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const BOOKS_SCHEMA = {
  name: 'books',
  fields: [
    { name: 'title', type: 'string' },
    { name: 'author', type: 'string', facet: true },
    { name: 'tags', type: 'string[]', facet: true, optional: true },
    { name: 'year', type: 'int32', facet: true },
    { name: 'rating', type: 'float', optional: true },
    { name: 'in_print', type: 'bool', optional: true, facet: true },
  ],
  default_sorting_field: 'year',
};
