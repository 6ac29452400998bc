/**
 * `pocketsphinx/en-us`: CMU PocketSphinx (Debian's `pocketsphinx` package) with its US English
 * acoustic model, dictionary and language model (`pocketsphinx-en-us`). Offline: a fresh
 * machine gets it with apt-get, no model download from a hub. Far less accurate than
 * Whisper (see README: expect about one word in four or five wrong on everyday speech, more
 * on names, brands and noise), but it needs nothing but Debian.
 *
 * One `pocketsphinx_batch` process per model stays up (loading the model takes ~0.8 s, a
 * 2-second utterance then decodes in ~0.3-0.6 s). It reads utterance ids from its control
 * file and writes one hypothesis line per utterance ("words (id score)"); each query's audio
 * is a raw PCM file in a private temporary directory, removed once answered. The control
 * file and the hypotheses go through `cat` pipes because the batch tool opens them by path
 * (/dev/stdin, /dev/stdout), which a socket (Node's child stdio) cannot be.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { VOICE_DEFAULTS } from '../defaults.js';
import type { Recognizer } from './recognizer.js';

export interface PocketsphinxPaths {
  hmm: string;
  lm: string;
  dict: string;
}

const BINARY = 'pocketsphinx_batch';

/** Where the binary is, or undefined when it is not installed. */
export function pocketsphinxBinary(): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(path.delimiter)) {
    const p = path.join(dir, BINARY);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

/** Why pocketsphinx cannot run with these files (undefined when it can). */
export function pocketsphinxMissing(paths: PocketsphinxPaths): string | undefined {
  if (!pocketsphinxBinary()) return `${BINARY} is not installed (Debian: apt-get install pocketsphinx pocketsphinx-en-us)`;
  for (const [what, p] of Object.entries(paths)) {
    if (!fs.existsSync(p)) return `the ${what} file ${p} does not exist (Debian: apt-get install pocketsphinx-en-us)`;
  }
  return undefined;
}

export class PocketsphinxRecognizer implements Recognizer {
  private child!: ChildProcess;
  private buffer = '';
  private readonly waiting: Array<{ id: string; resolve: (t: string) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }> = [];
  private dead: Error | undefined;
  private nextId = 1;
  private stderr = '';

  private constructor(
    readonly modelName: string,
    private readonly dir: string,
  ) {}

  static async load(modelName: string, paths: PocketsphinxPaths): Promise<PocketsphinxRecognizer> {
    const missing = pocketsphinxMissing(paths);
    if (missing) throw new Error(missing);
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'fathom-pocketsphinx-'));
    const r = new PocketsphinxRecognizer(modelName, dir);
    const args = ['-hmm', paths.hmm, '-lm', paths.lm, '-dict', paths.dict, '-adcin', 'yes', '-cepdir', dir, '-cepext', '.raw', '-samprate', String(VOICE_DEFAULTS.sampleRate), '-ctl', '/dev/stdin', '-hyp', '/dev/stdout', '-logfn', '/dev/null'];
    r.child = spawn('sh', ['-c', `cat | exec ${BINARY} "$@" | cat`, 'sh', ...args], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    r.child.stdout!.setEncoding('utf8');
    r.child.stdout!.on('data', (d: string) => r.onData(d));
    r.child.stderr!.on('data', (d: Buffer) => (r.stderr = (r.stderr + d.toString()).slice(-2000)));
    r.child.stdin!.on('error', () => undefined); // reported by 'exit'
    const die = (e: Error) => {
      r.dead ??= e;
      for (const w of r.waiting.splice(0)) {
        clearTimeout(w.timer);
        w.reject(r.dead);
      }
    };
    r.child.on('error', (e) => die(new Error(`pocketsphinx could not run: ${e.message}`)));
    r.child.on('exit', (code, signal) => die(new Error(`pocketsphinx stopped (${signal ?? `exit code ${code}`})${r.stderr.trim() ? `: ${r.stderr.trim().split('\n').at(-1)}` : ''}`)));
    r.idle();
    return r;
  }

  get failed(): Error | undefined {
    return this.dead;
  }

  private idle(): void {
    if (this.waiting.length > 0) return;
    this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr]) (s as unknown as { unref?: () => void } | null)?.unref?.();
  }

  private busy(): void {
    this.child.ref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr]) (s as unknown as { ref?: () => void } | null)?.ref?.();
  }

  private onData(d: string): void {
    this.buffer += d;
    for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      const m = /^(.*?)\s*\((\S+)\s+-?\d+\)\s*$/.exec(line);
      if (!m) continue;
      const k = this.waiting.findIndex((w) => w.id === m[2]);
      if (k < 0) continue;
      const [w] = this.waiting.splice(k, 1);
      clearTimeout(w!.timer);
      w!.resolve(m[1]!.trim());
    }
    this.idle();
  }

  async transcribe(samples: Int16Array): Promise<string> {
    if (this.dead) throw this.dead;
    const id = `u${this.nextId++}`;
    const file = path.join(this.dir, `${id}.raw`);
    await fsp.writeFile(file, Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength), { mode: 0o600 });
    try {
      return await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`pocketsphinx gave no answer within ${VOICE_DEFAULTS.recognizerTimeoutMs} ms`));
          this.kill();
        }, VOICE_DEFAULTS.recognizerTimeoutMs);
        this.waiting.push({ id, resolve, reject, timer });
        this.busy();
        this.child.stdin!.write(`${id}\n`);
      });
    } finally {
      await fsp.rm(file, { force: true });
    }
  }

  private kill(): void {
    try {
      if (this.child.pid) process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }

  async close(): Promise<void> {
    this.dead ??= new Error(`${this.modelName} was closed`);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
      this.child.stdin!.end();
      const timer = setTimeout(() => this.kill(), 2000);
      await exited;
      clearTimeout(timer);
    }
    await fsp.rm(this.dir, { recursive: true, force: true });
  }
}

/** The installed pocketsphinx package's version, for the README and benchmarks (undefined when missing). */
export function pocketsphinxVersion(): string | undefined {
  const r = spawnSync('dpkg-query', ['-W', '-f=${Version}', 'pocketsphinx'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}
