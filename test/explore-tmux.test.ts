/**
 * End to end: the real `fathom explore` binary in a real terminal (tmux), driven with
 * send-keys and read with capture-pane. Needs `node bin/build.mjs` first, and tmux.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from './helpers.js';
import { booksEngine } from './explore-fixture.js';

const HAS_TMUX = spawnSync('tmux', ['-V']).status === 0;
if (!HAS_TMUX) console.warn('skipping the tmux end-to-end tests of fathom explore: tmux is not installed');

/** A private tmux server (its own socket), so the tests never touch the user's sessions. */
const SOCKET = `fathom-explore-test-${process.pid}`;

function tmux(...args: string[]): string {
  const r = spawnSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tmux ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

function sh(s: string): string {
  return "'" + s.replace(/'/g, `'\\''`) + "'";
}

class Pane {
  constructor(readonly name: string) {}

  /** Starts `command` in a detached session of a fixed size; the shell stays after it exits. */
  static start(name: string, command: string, columns = 100, rows = 30): Pane {
    const script = `cd ${sh(ROOT)} && echo BEFORE-EXPLORE && ${command}; echo "EXIT=$?"; exec sleep 600`;
    tmux('new-session', '-d', '-s', name, '-x', String(columns), '-y', String(rows), `sh -c ${sh(script)}`);
    return new Pane(name);
  }

  screen(): string {
    return tmux('capture-pane', '-p', '-t', this.name);
  }

  /** Keys by tmux name (Tab, Space, Down, Escape, C-x) or, with literal, text as typed. */
  keys(...keys: string[]) {
    tmux('send-keys', '-t', this.name, ...keys);
  }

  type(text: string) {
    tmux('send-keys', '-t', this.name, '-l', text);
  }

  async waitFor(test: string | RegExp, timeoutMs = 15_000): Promise<string> {
    const start = Date.now();
    for (;;) {
      const s = this.screen();
      if (typeof test === 'string' ? s.includes(test) : test.test(s)) return s;
      if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${String(test)}; the screen was:\n${s}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  kill() {
    try {
      tmux('kill-session', '-t', this.name);
    } catch {
      // already gone
    }
  }
}

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGTERM');
  if (HAS_TMUX) spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
});

function firstHit(screen: string): string {
  return screen.split('\n').find((l) => /^▸\s+\d+\. /.test(l)) ?? '';
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

describe.skipIf(!HAS_TMUX)('fathom explore in a terminal (tmux)', () => {
  it('finds a typo query, narrows it with a facet, and quits leaving the terminal as it was', async () => {
    expect(fs.existsSync(path.join(ROOT, 'dist', 'main.cjs')), 'run `node bin/build.mjs` first').toBe(true);
    const { engine, dir } = await booksEngine();
    await engine.close();
    const pane = Pane.start('local', `node ${sh(BIN)} explore books -d ${sh(dir)}`);
    try {
      await pane.waitFor(/found 8 of 8 · \d+ ms/);

      pane.type('hary pottr');
      let screen = await pane.waitFor('found 3 of 8');
      // Equal text matches rank by the default sorting field, year, newest first.
      expect(firstHit(screen)).toMatch(/1\. Harry Potter and the Prisoner of Azkaban/);
      expect(screen).toMatch(/"title": "Harry Potter and the Prisoner of/);

      // Facet rows: author (1 value), tags (magic, school), then year: the fourth row is a year.
      pane.keys('Tab', 'Tab');
      await pane.waitFor(/▸\[ \] J\. K\. Rowling 3/);
      pane.keys('Down', 'Down', 'Down');
      await pane.waitFor(/▸\[ \] 199\d 1/);
      pane.keys('Space');
      screen = await pane.waitFor('found 1 of 8');
      expect(screen).toMatch(/\[x\] 199\d 1/);
      expect(screen).toMatch(/facets: year:=\[199\d\]/);

      pane.keys('q');
      screen = await pane.waitFor('EXIT=0');
      expect(screen).toContain('BEFORE-EXPLORE');
      expect(screen).not.toContain('fathom explore');
      expect(screen).not.toContain('Facets');
    } finally {
      pane.kill();
    }
  });

  it('follows a resize of the terminal down to 80x24', async () => {
    const { engine, dir } = await booksEngine();
    await engine.close();
    const pane = Pane.start('resize', `node ${sh(BIN)} explore books -d ${sh(dir)} -q dune`, 120, 40);
    try {
      await pane.waitFor('found 1 of 8');
      tmux('resize-window', '-t', 'resize', '-x', '80', '-y', '24');
      const screen = await pane.waitFor(/Hits.*│.*Document/);
      const lines = screen.replace(/\n+$/, '').split('\n');
      expect(lines.length).toBeLessThanOrEqual(24);
      expect(lines[0]).toMatch(/^fathom explore books .*found 1 of 8/);
      expect(screen).toMatch(/ Facets /);
      pane.keys('C-c');
      await pane.waitFor('EXIT=0');
    } finally {
      pane.kill();
    }
  });

  it('explores through a running fathom serve with --server and --api-key', async () => {
    const { engine, dir } = await booksEngine();
    await engine.close();
    const port = await freePort();
    const server = spawn(process.execPath, [BIN, 'serve', '-d', dir, '--api-key', 'explore-test-key', '--api-port', String(port), '--api-address', '127.0.0.1', '--processes', '1', '--log-level', 'silent'], {
      cwd: ROOT,
      stdio: 'ignore',
    });
    children.push(server);
    const base = `http://127.0.0.1:${port}`;
    const start = Date.now();
    for (;;) {
      const ok = await fetch(`${base}/health`).then((r) => r.ok, () => false);
      if (ok) break;
      if (Date.now() - start > 20_000) throw new Error('fathom serve did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const pane = Pane.start('server', `node ${sh(BIN)} explore books --server ${base} --api-key explore-test-key`);
    try {
      await pane.waitFor(/found 8 of 8 · \d+ ms/);
      expect(pane.screen()).toContain(base);
      pane.type('tolkein');
      const screen = await pane.waitFor('found 2 of 8');
      expect(firstHit(screen)).toMatch(/The Lord of the Rings|The Hobbit/);
      pane.keys('Escape', 'f');
      pane.type('year:>');
      await pane.waitFor(/✗ filter_by: expected a value after `year:>`/);
      pane.keys('C-c');
      await pane.waitFor('EXIT=0');
    } finally {
      pane.kill();
      server.kill('SIGTERM');
    }
  });
});
