import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { open } from 'lmdb';
import { openStore } from '../src/storage/store.js';
import { FORMAT_VERSION } from '../src/defaults.js';
import { cli, dataDirPath, tmpDir } from './helpers.js';

describe('data directory', () => {
  it('creates a new directory readable by its owner only, with a format version', async () => {
    const dir = dataDirPath();
    const store = openStore(dir);
    expect(store.meta.get('format')).toMatchObject({ version: FORMAT_VERSION });
    await store.close();
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, 'data.mdb')).mode & 0o077).toBe(0);
    expect(fs.existsSync(path.join(dir, 'models'))).toBe(true);
  });

  it('uses an existing empty directory whose name has a dot in it', async () => {
    const dir = path.join(tmpDir(), 'data.v2');
    fs.mkdirSync(dir);
    const store = openStore(dir);
    expect(store.meta.get('format')).toMatchObject({ version: FORMAT_VERSION });
    await store.close();
    expect(fs.existsSync(path.join(dir, 'data.mdb'))).toBe(true);
  });

  it('reopens an existing directory', async () => {
    const dir = dataDirPath();
    await openStore(dir).close();
    const again = openStore(dir);
    expect(again.meta.get('format')).toMatchObject({ version: FORMAT_VERSION });
    await again.close();
  });

  it('refuses a directory written by a newer format version', async () => {
    const dir = dataDirPath();
    await openStore(dir).close();
    const env = open({ path: dir });
    await env.openDB({ name: 'meta' }).put('format', { version: FORMAT_VERSION + 1 });
    await env.close();
    expect(() => openStore(dir)).toThrow(/format version 2, newer than this Fathom supports/);
  });

  it('refuses a plain file', () => {
    const f = path.join(tmpDir(), 'file.txt');
    fs.writeFileSync(f, 'hello');
    expect(() => openStore(f)).toThrow(/is a file, not a Fathom data directory/);
  });

  it('refuses a directory holding other files', () => {
    const d = tmpDir();
    fs.writeFileSync(path.join(d, 'notes.txt'), 'x');
    expect(() => openStore(d)).toThrow(/not a Fathom data directory/);
  });

  it('reports a bad data directory from the CLI in one line with exit status 1', async () => {
    const f = path.join(tmpDir(), 'file.txt');
    fs.writeFileSync(f, 'hello');
    const r = await cli(['collections', 'list', '--data-dir', f]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: .*is a file/);
  });

  it('takes the data directory from FATHOM_DATA_DIR', async () => {
    const dir = dataDirPath();
    const r = await cli(['collections', 'list'], { env: { FATHOM_DATA_DIR: dir } });
    expect(r.code).toBe(0);
    expect(fs.existsSync(path.join(dir, 'data.mdb'))).toBe(true);
  });
});
