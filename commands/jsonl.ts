/**
 * `--jsonl` on the list commands: Fathom's own records (collections with their schema,
 * keys without their values, stopword sets, synonyms, curation rules, presets, analytics
 * rules, conversation models with masked keys, conversations), one JSON object per line,
 * written through the `ndjson` package's object stream piped to stdout.
 *
 * Documents are not written here: they may hold int64 values beyond 2^53 as `bigint`, which
 * JSON.stringify (and so ndjson) cannot write exactly, so `export` and `search --jsonl`
 * write them with src/json.ts. A record can still carry a user's JSON (a preset's values, a
 * curation rule's metadata), and so a bigint, on which JSON.stringify throws. Here a bigint
 * becomes a number when it is a safe integer and otherwise a string of its digits: a string
 * keeps every digit where a number would be rounded, and a line is never left half written.
 * `--json` prints the same records with such integers exact.
 */
import { createRequire } from 'node:module';
import type { Transform } from 'node:stream';
import type { Command } from 'commander';
import { isStdoutClosed, out, printJson, UsageError } from './common.js';

interface Ndjson {
  /** An object stream in, `JSON.stringify(obj) + EOL` out (json-stringify-safe: cycles are marked, not thrown). */
  stringify(): Transform;
}

// ndjson has no types of its own; it stays external to the bundle and is loaded when a
// command writes JSON Lines.
let ndjson: Ndjson | undefined;
const ndjsonLib = (): Ndjson => (ndjson ??= createRequire(import.meta.url)('ndjson') as Ndjson);

/** Adds `--json` and `--jsonl` to a list command. */
export function withListOutput(cmd: Command): Command {
  return cmd.option('--json', 'print JSON').option('--jsonl', 'print one JSON object per line');
}

export type ListOutput = 'text' | 'json' | 'jsonl';

/** How a list command prints: for people, as JSON, or as JSON Lines. Both flags: a usage error. */
export function listOutput(opts: { json?: boolean; jsonl?: boolean }): ListOutput {
  if (opts.json && opts.jsonl) throw new UsageError('choose one of --json and --jsonl');
  return opts.json ? 'json' : opts.jsonl ? 'jsonl' : 'text';
}

/**
 * Prints a list command's records as `mode` says: `json` the records (or `asJson`, for a
 * command that wraps them as the API does, `{keys: [...]}`), `jsonl` one record a line,
 * `text` for people: `none` when there are no records, else `text(records)`.
 */
export async function printList<T>(mode: ListOutput, records: readonly T[], view: { none: string; text: (records: readonly T[]) => string; asJson?: unknown }): Promise<void> {
  if (mode === 'json') await printJson(view.asJson ?? records);
  else if (mode === 'jsonl') await writeJsonLines(records);
  else await out(records.length === 0 ? view.none : view.text(records));
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** `v` with every bigint made writable by JSON.stringify (see the file's comment). */
export function jsonSafe(v: unknown): unknown {
  if (typeof v === 'bigint') return v >= MIN_SAFE && v <= MAX_SAFE ? Number(v) : v.toString();
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v !== null && typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null) return v;
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[k] = jsonSafe(x);
    return o;
  }
  return v;
}

/**
 * Writes `records` to stdout, one JSON object per line, waiting when the pipe is full.
 * When the reader has gone away (EPIPE, e.g. `| head -1`) writing stops quietly, as with
 * `out` in common.ts.
 */
export async function writeJsonLines(records: Iterable<unknown>): Promise<void> {
  if (isStdoutClosed()) return;
  const lines = ndjsonLib().stringify();
  // Settles when every line has gone to stdout, when stdout fails (the 'error' listener of
  // common.ts marks it closed; a wait for a drain would never end) or when the stream fails.
  let settle!: (e?: Error) => void;
  const settled = new Promise<Error | undefined>((resolve) => (settle = resolve));
  const onStdoutError = () => settle();
  process.stdout.once('error', onStdoutError);
  lines.once('end', () => settle());
  lines.once('error', (e: Error) => settle(e));
  // A pipe never ends process.stdout: other output may follow, and bin/ waits for it to drain.
  lines.pipe(process.stdout, { end: false });
  try {
    for (const r of records) {
      if (isStdoutClosed()) break;
      if (!lines.write(jsonSafe(r))) {
        const e = await Promise.race([new Promise<undefined>((resolve) => lines.once('drain', () => resolve(undefined))), settled]);
        if (e) throw e;
      }
    }
    lines.end();
    const e = await settled;
    if (e) throw e;
  } finally {
    process.stdout.off('error', onStdoutError);
    lines.unpipe(process.stdout);
  }
}
