/**
 * `ts/whisper/<name>`: whisper.cpp models (ggml files), the format and repository layout the
 * reference uses, run through @fugood/whisper.node's prebuilt linux-x64 binding
 * (`@fugood/node-whisper-linux-x64`, whisper.cpp compiled for CPU, 2.9 MB, no install
 * script, no compiler needed).
 *
 * Repository (base EMBED_DEFAULTS.modelRepositoryUrl, or the engine's):
 *   <base>audio_query/models.json            { "whisper/<name>.bin": "<md5>", ... }
 *   <base>audio_query/whisper/<name>.bin     the ggml model
 * Cache: <data_dir>/models/audio_query/whisper/<name>.bin, downloaded once with the checked,
 * atomic download of the text models (a temporary file, MD5 checked, renamed into place).
 *
 * The model runs in a child process (`node -e`), not in this one: whisper.cpp prints its
 * logs to stderr and the binding has no silent mode that works while a model loads, a
 * model file that makes whisper.cpp abort would take the server down with it, and loading
 * a 150 MB model would stall the event loop. The child answers one request at a time over
 * IPC (structured clone, so the PCM bytes are not re-encoded); its last stderr lines explain
 * a failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { EMBED_DEFAULTS, VOICE_DEFAULTS } from '../defaults.js';
import { DownloadError, causeMessage, downloadFile, removeStaleDownloads, repoBase } from '../embed/repository.js';
import type { Recognizer } from './recognizer.js';

/** Where `ts/whisper/<name>` is cached. */
export function whisperModelFile(dataDir: string, name: string): string {
  return path.join(dataDir, 'models', VOICE_DEFAULTS.repositoryDir, 'whisper', `${name}.bin`);
}

/** Makes sure `ts/whisper/<name>` is cached, downloading it when it is not; returns its file. DownloadError on failure. */
export async function ensureWhisperModel(name: string, opts: { dataDir: string; baseUrl?: string; fetch?: typeof fetch }): Promise<string> {
  const file = whisperModelFile(opts.dataDir, name);
  const st = await fsp.stat(file).catch(() => undefined);
  if (st?.isFile() && st.size > 0) return file;
  const fetchImpl = opts.fetch ?? globalThis.fetch;
  const base = `${repoBase(opts.baseUrl)}${VOICE_DEFAULTS.repositoryDir}/`;
  const dir = path.dirname(file);
  await fsp.mkdir(dir, { recursive: true });
  await removeStaleDownloads(dir, name);
  const listUrl = `${base}models.json`;
  let res: Response;
  try {
    res = await fetchImpl(listUrl, { signal: AbortSignal.timeout(EMBED_DEFAULTS.repositoryConfigTimeoutMs), headers: { accept: 'application/json' } });
  } catch (e) {
    throw new DownloadError(`cannot reach the model repository at ${listUrl}: ${causeMessage(e)}`);
  }
  const text = await res.text().catch(() => '');
  if (res.status !== 200) throw new DownloadError(`the model repository answered HTTP ${res.status} for ${listUrl}`);
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    throw new DownloadError(`${listUrl} is not valid JSON`);
  }
  if (typeof list !== 'object' || list === null || Array.isArray(list)) throw new DownloadError(`${listUrl} is not a JSON object`);
  const md5 = (list as Record<string, unknown>)[`whisper/${name}.bin`];
  if (typeof md5 !== 'string') {
    const known = Object.keys(list).filter((k) => k.startsWith('whisper/') && k.endsWith('.bin')).map((k) => k.slice(8, -4));
    throw new DownloadError(`the model repository has no whisper model \`${name}\`${known.length ? ` (it has: ${known.join(', ')})` : ''}`);
  }
  const tmp = path.join(dir, `.download-${name}-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await downloadFile(fetchImpl, `${base}whisper/${encodeURIComponent(name)}.bin`, tmp, md5);
    await fsp.rename(tmp, file);
  } catch (e) {
    await fsp.rm(tmp, { force: true });
    throw e;
  }
  return file;
}

/** The binding's package for this platform (whisper.cpp prebuilt for CPU). */
export function whisperBindingPackage(): string {
  return `@fugood/node-whisper-${process.platform}-${process.arch}`;
}

const requireHere = createRequire(import.meta.url);

function bindingPath(): string {
  const pkg = whisperBindingPackage();
  try {
    return requireHere.resolve(pkg);
  } catch {
    throw new Error(`whisper.cpp's Node binding for ${process.platform}-${process.arch} is not installed (npm package ${pkg}); it is an optional dependency, prebuilt for linux-x64`);
  }
}

const HOST_SOURCE = String.raw`
'use strict';
const binding = require(process.env.FATHOM_WHISPER_BINDING);
let ctx = null;
let chain = Promise.resolve();
process.on('message', (msg) => {
  chain = chain.then(async () => {
    try {
      if (msg.op === 'load') {
        ctx = new binding.WhisperContext({ filePath: msg.path, useGpu: false });
        process.send({ id: msg.id, ok: true });
      } else if (msg.op === 'transcribe') {
        const b = msg.pcm;
        const opts = { maxThreads: msg.threads };
        if (msg.language) opts.language = msg.language;
        const r = await ctx.transcribeData(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength), opts).promise;
        process.send({ id: msg.id, text: r.result });
      }
    } catch (e) {
      process.send({ id: msg.id, error: (e && e.message) || String(e) });
    }
  });
});
process.on('disconnect', () => process.exit(0));
`;

/** A whisper.cpp model hosted in a child process. */
export class WhisperRecognizer implements Recognizer {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, { resolve: (m: { text?: string }) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private dead: Error | undefined;
  private stderr = '';

  private constructor(
    readonly modelName: string,
    private readonly language: string | undefined,
  ) {
    this.child = spawn(process.execPath, ['-e', HOST_SOURCE], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
      env: { ...process.env, FATHOM_WHISPER_BINDING: bindingPath(), NODE_OPTIONS: '' },
    });
    this.child.stderr!.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString('utf8')).slice(-4000);
    });
    this.child.on('message', (m: { id: number; text?: string; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      this.idle();
      if (m.error !== undefined) p.reject(new Error(this.explain(m.error)));
      else p.resolve(m);
    });
    const die = (e: Error) => {
      this.dead ??= e;
      for (const p of this.pending.values()) p.reject(this.dead);
      this.pending.clear();
    };
    this.child.on('error', (e) => die(new Error(`the whisper process could not run: ${e.message}`)));
    this.child.on('exit', (code, signal) => die(new Error(this.explain(`the whisper process stopped (${signal ?? `exit code ${code}`})`))));
    this.idle();
  }

  /** whisper.cpp's own words about a failure (its last error line on stderr), after ours. */
  private explain(msg: string): string {
    const lines = this.stderr.split('\n').filter((l) => /error|invalid|failed|not all tensors|unknown tensor|wrong (size|shape)/i.test(l));
    const last = lines.at(-1)?.trim();
    return last ? `${msg}: ${last.replace(/^whisper_\w+:\s*/, '')}` : msg;
  }

  private idle(): void {
    if (this.pending.size > 0) return;
    this.child.unref();
    (this.child.channel as { unref?: () => void } | undefined)?.unref?.();
    (this.child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
  }

  private call(msg: Record<string, unknown>): Promise<{ text?: string }> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    this.child.ref();
    (this.child.channel as { ref?: () => void } | undefined)?.ref?.();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ ...msg, id });
    });
  }

  /** Loads a model file in a new process. Rejects with the reason when whisper.cpp cannot load it. */
  static async load(modelName: string, file: string): Promise<WhisperRecognizer> {
    const name = path.basename(file, '.bin');
    // English-only models (`*.en`) know one language; the others detect it, as the reference does
    const r = new WhisperRecognizer(modelName, /\.en(\b|-|$)/.test(name) ? undefined : 'auto');
    try {
      await r.call({ op: 'load', path: file });
    } catch (e) {
      await r.close();
      throw new Error(`whisper.cpp cannot load ${file}: ${(e as Error).message}`);
    }
    return r;
  }

  get failed(): Error | undefined {
    return this.dead;
  }

  async transcribe(samples: Int16Array): Promise<string> {
    // whisper.cpp ignores audio shorter than one second: pad it with silence
    let pcm = samples;
    const min = Math.round(VOICE_DEFAULTS.sampleRate * 1.1);
    if (pcm.length < min) {
      pcm = new Int16Array(min);
      pcm.set(samples);
    }
    const threads = Math.max(1, Math.min(VOICE_DEFAULTS.whisperThreads, os.availableParallelism?.() ?? os.cpus().length));
    const r = await this.call({ op: 'transcribe', pcm: new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength), threads, language: this.language });
    return (r.text ?? '').trim();
  }

  async close(): Promise<void> {
    this.dead ??= new Error(`${this.modelName} was closed`);
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    if (this.child.connected) this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}

/** Whether the binding can be found (for messages and test skips). */
export function whisperAvailable(): boolean {
  try {
    bindingPath();
    return fs.existsSync(bindingPath());
  } catch {
    return false;
  }
}
