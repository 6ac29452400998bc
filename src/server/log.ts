/**
 * src/server/log.ts: structured logs, one JSON object per line on stdout.
 *
 * Serving processes log through Fastify's logger (pino) with the options below; the
 * cluster primary, which serves nothing, writes the same shape with `primaryLog`.
 * Secrets never reach a log line: request lines carry the key id, not the key, and
 * URLs have any key parameter masked (app.ts `redactUrl`).
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
