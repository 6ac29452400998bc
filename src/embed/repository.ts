/**
 * Built-in `ts/<name>` models: downloaded once from the model repository, then used from disk.
 *
 * Repository layout (the one the reference's users fetch from; base URL
 * EMBED_DEFAULTS.modelRepositoryUrl unless EmbedEnv.modelRepositoryUrl says otherwise):
 *
 *   <base><name>/config.json        { model_type, vocab_file_name, model_md5?, vocab_md5?,
 *                                     indexing_prefix?, query_prefix?, … }
 *   <base><name>/model.onnx
 *   <base><name>/<vocab_file_name>
 *
 * Cache: `<dataDir>/models/ts/<name>/` holding the same three files. A download goes to a
 * fresh `<dataDir>/models/.download-<name>-<pid>-<random>/` directory; each file is checked
 * (HTTP 200, not empty, Content-Length honoured, MD5 equal to the repository's when it gives
 * one) and the directory is renamed into place only when all are good, so a failed or cut
 * download never leaves a half-written model behind. Once cached, a model loads without the
 * network. Several processes may download at once: the first rename wins, the others discard
 * their copy.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { EMBED_DEFAULTS } from '../defaults.js';
import { noSpaceIn } from '../storage/diskfull.js';
import { ModelFilesError, readModelConfig, type LocalModelConfig } from './onnx.js';

export interface RepositoryOptions {
  dataDir: string;
  /** Base URL; a trailing slash is added when missing. */
  baseUrl?: string;
  fetch?: typeof fetch;
}

/** The cache directory of built-in model `name`. */
export function builtinModelDir(dataDir: string, name: string): string {
  return path.join(dataDir, 'models', 'ts', name);
}

/** A download failure; the message says which file, from where, and why. */
export class DownloadError extends Error {}

export function repoBase(url: string | undefined): string {
  const base = url ?? EMBED_DEFAULTS.modelRepositoryUrl;
  return base.endsWith('/') ? base : `${base}/`;
}

async function isComplete(dir: string): Promise<boolean> {
  try {
    const cfg = await readModelConfig(dir);
    for (const f of ['model.onnx', cfg.vocab_file_name]) {
      const st = await fsp.stat(path.join(dir, f));
      if (!st.isFile() || st.size === 0) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** Removes download directories of `name` left by processes that no longer run. */
export async function removeStaleDownloads(modelsDir: string, name: string): Promise<void> {
  let entries: string[];
  try {
    entries = await fsp.readdir(modelsDir);
  } catch {
    return;
  }
  for (const e of entries) {
    if (!e.startsWith('.download-')) continue;
    const parts = e.slice('.download-'.length).split('-'); // <name>-<pid>-<random>; names may hold '-'
    parts.pop();
    const pid = Number(parts.pop());
    if (parts.join('-') !== name) continue;
    let alive = pid === process.pid;
    if (!alive && Number.isInteger(pid) && pid > 0) {
      try {
        process.kill(pid, 0);
        alive = true;
      } catch (err) {
        alive = (err as NodeJS.ErrnoException).code === 'EPERM';
      }
    }
    if (!alive) await fsp.rm(path.join(modelsDir, e), { recursive: true, force: true });
  }
}

/** Streams `url` into `file`, checking status, length and MD5. Returns the bytes written. */
export async function downloadFile(fetchImpl: typeof fetch, url: string, file: string, md5: string | undefined): Promise<number> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => ac.abort(new Error(`no data for ${EMBED_DEFAULTS.downloadStallTimeoutMs} ms`)), EMBED_DEFAULTS.downloadStallTimeoutMs);
  };
  arm();
  const out = fs.createWriteStream(file);
  // A write that fails (a full disk) is thrown as it is, not as a DownloadError; until then
  // its rejection is held here (unobserved, it ended the process)
  let writeError: Error | undefined;
  const closed = new Promise<void>((resolve, reject) => {
    out.on('close', resolve);
    out.on('error', (e) => {
      writeError = e;
      reject(e);
    });
  });
  closed.catch(() => undefined);
  let bytes = 0;
  try {
    let res: Response;
    try {
      res = await fetchImpl(url, { signal: ac.signal });
    } catch (e) {
      throw new DownloadError(`cannot reach ${url}: ${causeMessage(e)}`);
    }
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => undefined);
      throw new DownloadError(`${url} answered HTTP ${res.status}`);
    }
    const declared = Number(res.headers.get('content-length') ?? NaN);
    const hash = createHash('md5');
    if (res.body) {
      const reader = res.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          arm();
          hash.update(value);
          bytes += value.length;
          if (writeError) throw writeError;
          // (a stream that failed drains never)
          if (!out.write(value)) await Promise.race([new Promise<void>((r) => out.once('drain', r)), closed]);
        }
      } catch (e) {
        if (e === writeError) throw e;
        throw new DownloadError(`the download of ${url} broke off after ${bytes} bytes: ${causeMessage(e)}`);
      }
    }
    if (Number.isFinite(declared) && bytes !== declared) {
      throw new DownloadError(`the download of ${url} was cut short: ${bytes} of ${declared} bytes`);
    }
    if (bytes === 0) throw new DownloadError(`${url} is empty`);
    const digest = hash.digest('hex');
    if (md5 && digest !== md5.toLowerCase()) {
      throw new DownloadError(`${url} failed its checksum: MD5 ${digest}, the repository says ${md5}`);
    }
    out.end();
    await closed; // the last writes reached the file
    return bytes;
  } finally {
    clearTimeout(timer);
    if (!out.writableEnded) out.end();
    await closed.catch(() => undefined);
  }
}

export function causeMessage(e: unknown): string {
  const err = e as Error & { cause?: unknown };
  const cause = err?.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err?.message ?? String(e)}${cause}`;
}

async function fetchRepoConfig(fetchImpl: typeof fetch, url: string): Promise<LocalModelConfig & { model_md5?: string; vocab_md5?: string }> {
  let res: Response;
  try {
    res = await fetchImpl(url, { signal: AbortSignal.timeout(EMBED_DEFAULTS.repositoryConfigTimeoutMs), headers: { accept: 'application/json' } });
  } catch (e) {
    throw new DownloadError(`cannot reach the model repository at ${url}: ${causeMessage(e)}`);
  }
  const text = await res.text().catch(() => '');
  if (res.status === 404) throw new DownloadError(`the model repository has no such model (${url} answered HTTP 404)`);
  if (res.status !== 200) throw new DownloadError(`the model repository answered HTTP ${res.status} for ${url}`);
  let cfg: unknown;
  try {
    cfg = JSON.parse(text);
  } catch {
    throw new DownloadError(`${url} is not valid JSON`);
  }
  if (typeof cfg !== 'object' || cfg === null || Array.isArray(cfg)) throw new DownloadError(`${url} is not a JSON object`);
  const c = cfg as Record<string, unknown>;
  const vocab = c.vocab_file_name;
  if (typeof vocab !== 'string' || vocab.length === 0 || vocab.includes('/') || vocab.includes('\\') || vocab.startsWith('.')) {
    throw new DownloadError(`${url} names no usable vocab_file_name`);
  }
  if (typeof c.model_type !== 'string') c.model_type = 'bert'; // the reference's default
  return c as LocalModelConfig & { model_md5?: string; vocab_md5?: string };
}

/**
 * Makes sure built-in model `name` is in the cache, downloading it when it is not, and
 * returns its directory. Throws DownloadError (network, HTTP, size, checksum) or
 * ModelFilesError (the repository's config.json is unusable).
 */
export async function ensureBuiltinModel(name: string, opts: RepositoryOptions): Promise<string> {
  const dir = builtinModelDir(opts.dataDir, name);
  if (await isComplete(dir)) return dir;

  const fetchImpl = opts.fetch ?? globalThis.fetch;
  const base = repoBase(opts.baseUrl);
  const modelsDir = path.join(opts.dataDir, 'models');
  await fsp.mkdir(path.join(modelsDir, 'ts'), { recursive: true });
  await removeStaleDownloads(modelsDir, name);

  const cfg = await fetchRepoConfig(fetchImpl, `${base}${encodeURIComponent(name)}/config.json`);
  const tmp = path.join(modelsDir, `.download-${name}-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await fsp.mkdir(tmp);
    await fsp.writeFile(path.join(tmp, 'config.json'), JSON.stringify(cfg, null, 2) + '\n');
    await readModelConfig(tmp); // rejects a model type Fathom cannot run before the big download
    await downloadFile(fetchImpl, `${base}${encodeURIComponent(name)}/model.onnx`, path.join(tmp, 'model.onnx'), cfg.model_md5);
    await downloadFile(
      fetchImpl,
      `${base}${encodeURIComponent(name)}/${encodeURIComponent(cfg.vocab_file_name)}`,
      path.join(tmp, cfg.vocab_file_name),
      cfg.vocab_md5,
    );
    // A cached copy that is incomplete (an older layout, a manual edit) is replaced.
    if (fs.existsSync(dir) && !(await isComplete(dir))) await fsp.rm(dir, { recursive: true, force: true });
    try {
      await fsp.rename(tmp, dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if ((code === 'ENOTEMPTY' || code === 'EEXIST') && (await isComplete(dir))) {
        await fsp.rm(tmp, { recursive: true, force: true }); // another process finished first
      } else {
        throw e;
      }
    }
    return dir;
  } catch (e) {
    await fsp.rm(tmp, { recursive: true, force: true });
    if (e instanceof ModelFilesError) throw new DownloadError(`the repository's model is unusable: ${e.message.replace(tmp, `${base}${name}`)}`);
    throw noSpaceIn(e, opts.dataDir, `downloading the model \`ts/${name}\``) ?? e;
  }
}
