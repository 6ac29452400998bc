/**
 * src/server/log.ts: structured logs, one JSON object per line on stdout.
 *
 * Serving processes log through Fastify's logger (pino) with the options below; the
 * cluster primary, which serves nothing, writes the same shape with `primaryLog`.
 * Secrets never reach a log line: request lines carry the key id, not the key, and the
 * logged URL has no key parameter, however its name is spelt, and no presented key inside
 * another parameter or the path (`redactUrl`).
 */
import type { Writable } from 'node:stream';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const RANK: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/** Options for Fastify's `logger`. */
export function loggerOptions(level: LogLevel, role: string, stream?: Writable): Record<string, unknown> {
  return {
    level,
    base: { pid: process.pid, role },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
    ...(stream ? { stream } : {}),
  };
}

export type PrimaryLog = (level: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) => void;

export function primaryLog(level: LogLevel, stream: Writable = process.stdout): PrimaryLog {
  return (l, msg, fields = {}) => {
    if (RANK[l] < RANK[level]) return;
    stream.write(JSON.stringify({ level: RANK[l], time: new Date().toISOString(), pid: process.pid, role: 'primary', ...fields, msg }) + '\n');
  };
}

/** A query parameter name that carries a key, in any case or encoding: `x-typesense-api-key`, `X%2DService%2DApi%2DKey`, `api_key`... */
const KEY_NAME = /api[-_ ]?key/i;
/** A key-named `name=value` inside a path (`;x-typesense-api-key=...`): the name, then the value up to the next separator. */
const KEY_PAIR_IN_PATH = new RegExp(`(${KEY_NAME.source}[^=/;]*=)[^/;&]*`, 'gi');

/** Percent-decodes a query string part as the query parser does (`+` is a space); the raw text when it is not valid. */
function decodePart(s: string): string {
  if (s.indexOf('%') < 0 && s.indexOf('+') < 0) return s;
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

/** Does decoded text hold a presented key (whole, or inside a filter, a query, an id)? */
function holdsKey(text: string, presented: readonly string[]): boolean {
  return text !== '' && presented.some((k) => text.includes(k));
}

/**
 * The request URL as logged: the path, with `***` for a presented key or a key-named
 * `name=value` anywhere in it (redactPath), and the query string without any
 * parameter whose decoded name carries a key (dropped whole, in every case and encoding) and
 * with `***` for any value that holds a key the request presented (`presented`: header and
 * parameter values), equal to it or inside a filter or a query.
 */
export function redactUrl(url: string, presented: readonly string[] = []): string {
  const q = url.indexOf('?');
  const path = redactPath(q < 0 ? url : url.slice(0, q), presented);
  if (q < 0) return path;
  const kept: string[] = [];
  for (const part of url.slice(q + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const rawName = eq < 0 ? part : part.slice(0, eq);
    const name = decodePart(rawName);
    if (KEY_NAME.test(name)) continue;
    if (holdsKey(name, presented)) {
      kept.push('***');
      continue;
    }
    if (eq >= 0 && holdsKey(decodePart(part.slice(eq + 1)), presented)) {
      kept.push(`${rawName}=***`);
      continue;
    }
    kept.push(part);
  }
  return kept.length > 0 ? `${path}?${kept.join('&')}` : path;
}

/**
 * The path as logged: a presented key anywhere in it (an id, a collection name; a base64
 * key may span segments) becomes `***`, and so does the value of a key-named `name=value`
 * (`;x-typesense-api-key=...`). Such a path is logged decoded; any other as it was sent.
 */
function redactPath(path: string, presented: readonly string[]): string {
  let text = path;
  if (path.includes('%')) {
    try {
      text = decodeURIComponent(path);
    } catch {
      // not valid percent-encoding: looked at as sent
    }
  }
  const keyed = presented.filter((k) => k !== '' && text.includes(k));
  const named = KEY_NAME.test(text);
  if (keyed.length === 0 && !named) return path;
  let out = text;
  for (const k of keyed) out = out.split(k).join('***');
  return named ? out.replace(KEY_PAIR_IN_PATH, '$1***') : out;
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
      if (eq < 0 || !KEY_NAME.test(decodePart(part.slice(0, eq)))) continue;
      const v = decodePart(part.slice(eq + 1));
      if (v !== '') out.push(v);
    }
  }
  return out;
}
