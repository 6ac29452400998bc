/**
 * Helpers shared by the command files: option parsing at the edge, opening the data
 * directory, reading input files or stdin, and writing output that respects pipes.
 */
import fs from 'node:fs';
import { Option, type Command } from 'commander';
import { DEFAULT_DATA_DIR } from '../src/defaults.js';
import { FathomError } from '../src/errors.js';
import type { Engine, EngineLog, EngineOptions } from '../src/engine.js';

/** A usage error: printed as one line, exit status 2. */
export class UsageError extends FathomError {
  constructor(message: string) {
    super('BAD_PARAMETER', message);
  }
}

/** What a command's action resolves to: its exit status (default 0). */
export type ExitCode = number | void;

/** Adds the `--data-dir` option every on-disk command takes. */
export function withDataDir(cmd: Command): Command {
  return cmd.addOption(
    new Option('-d, --data-dir <dir>', 'data directory').env('FATHOM_DATA_DIR').default(DEFAULT_DATA_DIR),
  );
}

/**
 * What went wrong in the background of a command's engine (a merge that found no room,
 * vector graph upkeep). With --debug each failure is a JSON line on stderr as it happens.
 * Otherwise they are kept: a command that fails says what went wrong in its one line (a
 * full disk fails the command's own writes too), and one that succeeds (exit status 0)
 * prints the first failure as one warning line at its end (`backgroundWarning`,
 * bin/main.mts).
 */
export const background: { debug: boolean; first?: string; more: number } = { debug: false, more: 0 };

function keep(fields: Record<string, unknown>, msg: string): void {
  if (background.first !== undefined) {
    background.more++;
    return;
  }
  const err = fields.err instanceof Error ? fields.err.message : fields.err;
  const where = typeof fields.collection === 'string' ? ` (collection ${fields.collection})` : '';
  background.first = `${msg}${where}${err === undefined ? '' : `: ${String(err)}`}`;
}

/** The CLI's engine log without --debug (see `background`). */
const keptLog: EngineLog = { warn: keep, error: keep };

/** The one line a command that succeeded prints about its background failures, if any; forgets them. */
export function backgroundWarning(): string | undefined {
  const { first, more } = background;
  background.first = undefined;
  background.more = 0;
  if (first === undefined) return undefined;
  return `warning: ${first}${more > 0 ? ` (and ${more} more background failure${more > 1 ? 's' : ''})` : ''}`;
}

export async function openEngine(dataDir: string, opts: EngineOptions = {}): Promise<Engine> {
  const { Engine, stderrLog } = await import('../src/engine.js');
  const engine = Engine.open(dataDir, { log: background.debug ? stderrLog : keptLog, ...opts });
  // A cluster node's directory changes only through the cluster's stream: the CLI reads it
  // and refuses to write it (a write here would exist on this node alone).
  const cluster = engine.clusterMembership();
  if (cluster) {
    engine.replicateThrough(async () => {
      throw new FathomError('CONFLICT', `${dataDir} is the data directory of cluster node ${cluster.node ?? '?'} (stream ${cluster.name}): write through the cluster's HTTP API`);
    });
  }
  return engine;
}

/**
 * Runs `fn` with an open engine and always closes it. `close.exiting`: the process exits
 * right after (a one-shot read-only command), see Store.close.
 */
export async function withEngine<T>(dataDir: string, fn: (e: Engine) => Promise<T> | T, opts: EngineOptions = {}, close: { exiting?: boolean } = {}): Promise<T> {
  const engine = await openEngine(dataDir, opts);
  try {
    return await fn(engine);
  } finally {
    await engine.close(close);
  }
}

export function parseIntOption(name: string, min: number, max: number) {
  return (v: string): number => {
    if (!/^-?\d+$/.test(v.trim())) throw new UsageError(`--${name} must be a whole number, got "${v}"`);
    const n = Number(v);
    if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${n}`);
    return n;
  };
}

/** A flag that may also be written `--flag true` / `--flag=false` (as the reference's server takes it). */
export function parseBool(name: string) {
  return (v: string | undefined): boolean => {
    if (v === undefined) return true;
    const s = v.toLowerCase();
    if (s === 'true' || s === '1') return true;
    if (s === 'false' || s === '0') return false;
    throw new UsageError(`--${name} must be true or false, got "${v}"`);
  };
}

export function parseChoice<T extends string>(name: string, choices: readonly T[]) {
  return (v: string): T => {
    if (!(choices as readonly string[]).includes(v)) throw new UsageError(`--${name} must be one of ${choices.join(', ')}, got "${v}"`);
    return v as T;
  };
}

/** A readable stream for a file argument, or stdin for `-` / no argument. */
export function inputStream(file: string | undefined): NodeJS.ReadableStream & AsyncIterable<Buffer> {
  if (file === undefined || file === '-') {
    if (process.stdin.isTTY) throw new UsageError('no input: give a file or pipe JSON Lines on stdin');
    return process.stdin as NodeJS.ReadableStream & AsyncIterable<Buffer>;
  }
  if (!fs.existsSync(file)) throw new UsageError(`file not found: ${file}`);
  if (fs.statSync(file).isDirectory()) throw new UsageError(`${file} is a directory, not a file`);
  return fs.createReadStream(file, { highWaterMark: 1 << 20 }) as unknown as NodeJS.ReadableStream & AsyncIterable<Buffer>;
}

export async function readAllInput(file: string | undefined): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of inputStream(file)) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  let s = Buffer.concat(chunks).toString('utf8');
  if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
  return s;
}

/**
 * Writes to stdout, waiting when the pipe is full. Resolves false when the reader has
 * gone away (EPIPE), so a command piped into `head` stops quietly.
 */
export function out(text: string): Promise<boolean> | boolean {
  if (stdoutClosed) return false;
  if (process.stdout.write(text)) return true;
  return new Promise((resolve) => {
    const done = () => {
      process.stdout.off('drain', done);
      process.stdout.off('error', fail);
      resolve(!stdoutClosed);
    };
    const fail = () => {
      stdoutClosed = true;
      done();
    };
    process.stdout.once('drain', done);
    process.stdout.once('error', fail);
  });
}

let stdoutClosed = false;
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') stdoutClosed = true;
});

export function isStdoutClosed(): boolean {
  return stdoutClosed;
}

export function printJson(v: unknown, pretty = true): Promise<boolean> | boolean {
  return import('../src/json.js').then(({ stringifyJson, stringifyPretty }) => out((pretty ? stringifyPretty(v) : stringifyJson(v)) + '\n'));
}
