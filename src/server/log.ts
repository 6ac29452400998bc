/**
 * src/server/log.ts: structured logs, one JSON object per line on stdout.
 *
 * Serving processes log through Fastify's logger (pino) with the options below; the
 * cluster primary, which serves nothing, writes the same shape with `primaryLog`.
 * Secrets never reach a log line: request lines carry the key id, not the key; the logged
 * URL has no key parameter, however its name is spelt or encoded (`redactUrl`); and every
 * line, whatever wrote it, is searched for key values before it is written: those the
 * request presented (in its URL) and every key the data directory knows (src/keys/redact.ts).
 */
import type { Writable } from 'node:stream';
import { KeyFinder, maskPattern } from '../keys/redact.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const RANK: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/** Does a logger at `level` write lines of level `l`? */
export function logs(level: string, l: Exclude<LogLevel, 'silent'>): boolean {
  return (RANK[level as LogLevel] ?? 0) <= RANK[l];
}

/**
 * Options for Fastify's `logger`. `keys`: what the data directory knows of its keys; every
 * line written is searched for their values (in any encoding, redact.ts) and masked.
 */
export function loggerOptions(level: LogLevel, role: string, stream?: Writable, keys?: () => KeyFinder): Record<string, unknown> {
  return {
    level,
    base: { pid: process.pid, role },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
    ...(stream ? { stream } : {}),
    ...(keys ? { hooks: { streamWrite: (line: string) => keys().mask(line, { json: true }) } } : {}),
  };
}

export type PrimaryLog = (level: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) => void;

/** The cluster primary's log; `keys` as for loggerOptions (undefined until the primary has opened its directory). */
export function primaryLog(level: LogLevel, stream: Writable = process.stdout, keys?: () => KeyFinder | undefined): PrimaryLog {
  return (l, msg, fields = {}) => {
    if (RANK[l] < RANK[level]) return;
    const line = JSON.stringify({ level: RANK[l], time: new Date().toISOString(), pid: process.pid, role: 'primary', ...fields, msg });
    stream.write((keys?.()?.mask(line, { json: true }) ?? line) + '\n');
  };
}

/** A query parameter name that carries a key, in any case or encoding: `x-typesense-api-key`, `X%2DService%2DApi%2DKey`, `api_key`... */
const KEY_NAME = /api[-_ ]?key/i;
/** A key-named `name=value` inside a path (`;x-typesense-api-key=...`): the value, up to the next separator. */
const KEY_PAIR_IN_PATH = /api[-_ ]?key[^=/;?]*=([^/;&?]*)/dgi;
/** Percent-decodings undone before a parameter's name is looked at (a name encoded twice or more is still a key's). */
const MAX_NAME_DECODES = 4;

/** Percent-decodes a query string part as the query parser does (`+` is a space); the raw text when it is not valid. */
function decodePart(s: string): string {
  if (s.indexOf('%') < 0 && s.indexOf('+') < 0) return s;
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

/** A parameter name with every layer of percent-encoding undone (up to MAX_NAME_DECODES). */
function decodeName(s: string): string {
  for (let i = 0; i < MAX_NAME_DECODES; i++) {
    const d = decodePart(s);
    if (d === s) break;
    s = d;
  }
  return s;
}

const NO_KEYS = new KeyFinder();

/**
 * The request URL as logged: without any query parameter whose name carries a key (dropped
 * whole, in every case and however many times its name was percent-encoded), with `***` for
 * the value of a key-named `name=value` in the path (`;x-typesense-api-key=...`), and with
 * `***` for every key value anywhere in it, in any encoding (redact.ts): the values the
 * request presented (`presented`: header and parameter values) and those `finder` knows.
 */
export function redactUrl(url: string, presented: readonly string[] = [], finder: KeyFinder = NO_KEYS): string {
  const q = url.indexOf('?');
  const path = maskPattern(q < 0 ? url : url.slice(0, q), KEY_PAIR_IN_PATH);
  const kept: string[] = [];
  if (q >= 0) {
    for (const part of url.slice(q + 1).split('&')) {
      if (part === '') continue;
      const eq = part.indexOf('=');
      if (KEY_NAME.test(decodeName(eq < 0 ? part : part.slice(0, eq)))) continue;
      kept.push(part);
    }
  }
  return finder.mask(kept.length > 0 ? `${path}?${kept.join('&')}` : path, { presented });
}

/** Every key value a request presented: key headers and key-named query parameters, decoded. */
export function presentedValues(headers: Record<string, string | string[] | undefined>, url: string): string[] {
  const out: string[] = [];
  for (const name of ['x-typesense-api-key', 'x-service-api-key']) {
    const v = headers[name];
    for (const x of Array.isArray(v) ? v : v === undefined ? [] : [v]) if (x !== '') out.push(x);
  }
  const q = url.indexOf('?');
  if (q >= 0) {
    for (const part of url.slice(q + 1).split('&')) {
      const eq = part.indexOf('=');
      if (eq < 0 || !KEY_NAME.test(decodeName(part.slice(0, eq)))) continue;
      const v = decodePart(part.slice(eq + 1));
      if (v !== '') out.push(v);
    }
  }
  return out;
}
