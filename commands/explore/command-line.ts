/**
 * commands/explore/command-line.ts: the current query as commands to paste into a
 * script: `fathom search ...` (on the data directory) and `curl ...` (against the HTTP
 * API). Arguments are shell-quoted; `layoutCommand` breaks them into lines ending in ` \`
 * so that even the wrapped form pastes as one command.
 */
import { SERVER_DEFAULTS } from '../../src/defaults.js';
import { SEARCH_FLAGS } from '../search.js';
import type { SearchParams, Source } from './client.js';

/** The environment variable the curl form reads the API key from. */
export const API_KEY_ENV = 'FATHOM_API_KEY';

/** A word of a command: quoted for the shell when shown, unless `literal`. */
export interface Word {
  text: string;
  /** Shown exactly as written (it carries its own quoting, like "${KEY}"). */
  literal?: boolean;
}

/** A command as groups of words kept together on one line (a flag and its value). */
export type Command = Word[][];

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** Quotes a word for POSIX shells: bare when safe, else in single quotes. */
export function shellQuote(s: string): string {
  if (s !== '' && SAFE.test(s)) return s;
  return "'" + s.replace(/'/g, `'\\''`) + "'";
}

function show(w: Word): string {
  return w.literal ? w.text : shellQuote(w.text);
}

const word = (text: string): Word => ({ text });
const FLAGS = new Set(SEARCH_FLAGS.map(([f]) => f));

export function fathomCommand(collection: string, params: SearchParams, source: Source): Command {
  const cmd: Command = [[word('fathom'), word('search'), word(collection)]];
  for (const [k, v] of Object.entries(params)) {
    if (k === 'q') cmd.push([word('-q'), word(v)]);
    else {
      const flag = k.replace(/_/g, '-');
      cmd.push(FLAGS.has(flag) ? [word(`--${flag}`), word(v)] : [word('--param'), word(`${k}=${v}`)]);
    }
  }
  if (source.kind === 'local' && !source.defaultDataDir) cmd.push([word('-d'), word(source.dataDir)]);
  return cmd;
}

export function curlCommand(collection: string, params: SearchParams, source: Source): Command {
  const base = source.kind === 'server' ? source.url : `http://localhost:${SERVER_DEFAULTS.port}`;
  const cmd: Command = [[word('curl'), word('-sG'), word(`${base}/collections/${encodeURIComponent(collection)}/documents/search`)]];
  cmd.push([word('-H'), { text: `"X-TYPESENSE-API-KEY: \${${API_KEY_ENV}}"`, literal: true }]);
  for (const [k, v] of Object.entries(params)) cmd.push([word('--data-urlencode'), word(`${k}=${v}`)]);
  return cmd;
}

/** The command on one line, for the clipboard. */
export function commandText(cmd: Command): string {
  return cmd.map((g) => g.map(show).join(' ')).join(' ');
}

/**
 * Splits one word into pieces, each quoted on its own and at most `room` columns (the
 * first `firstRoom`): on lines joined by backslash-newlines with no space between, the
 * shell reads them back as the one word.
 */
function splitWord(text: string, firstRoom: number, room: number): string[] {
  const pieces: string[] = [];
  let limit = Math.max(4, firstRoom);
  let piece = '';
  for (const ch of Array.from(text)) {
    if (piece !== '' && shellQuote(piece + ch).length > limit) {
      pieces.push(shellQuote(piece));
      piece = '';
      limit = Math.max(4, room);
    }
    piece += ch;
  }
  pieces.push(shellQuote(piece));
  return pieces;
}

/**
 * The command as lines of at most `width` columns, continued with ` \`, so that a mouse
 * selection of the lines pastes as the same command: a flag and its value stay together,
 * and a value too long for any line is split into quoted pieces that continue at column
 * 0 (a continuation line must not add a space inside the word).
 */
export function layoutCommand(cmd: Command, width: number): string[] {
  const w = Math.max(20, width);
  const lines: string[] = [];
  let line = '';
  for (const group of cmd) {
    const words = group.map(show).join(' ');
    if (line !== '' && line.length + 1 + words.length + 2 <= w) {
      line += ' ' + words;
      continue;
    }
    const indent = line === '' ? '' : '  ';
    if (line !== '') lines.push(line + ' \\');
    const last = group[group.length - 1]!;
    if (indent.length + words.length + 2 <= w || last.literal) {
      line = indent + words;
      continue;
    }
    const lead = indent + group.slice(0, -1).map((x) => show(x) + ' ').join('');
    const pieces = splitWord(last.text, w - lead.length - 2, w - 2);
    line = lead + pieces[0];
    for (const p of pieces.slice(1)) {
      lines.push(line + '\\');
      line = p;
    }
  }
  if (line) lines.push(line);
  return lines;
}
