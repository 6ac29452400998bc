/**
 * JSON Lines input: splits a byte stream into lines without holding the stream in memory,
 * and decodes each line strictly (invalid UTF-8 is reported for that line only; a
 * byte-order mark before the first line is skipped).
 *
 * We split bytes ourselves instead of using ndjson's parser: it either throws on the
 * first bad line or drops bad lines silently, and an import must answer every line.
 */
import { FathomError } from '../errors.js';

export interface RawLine {
  /** 1-based line number in the input. */
  no: number;
  bytes: Buffer;
}

const strict = new TextDecoder('utf-8', { fatal: true });

/** Yields the lines of a byte stream (without the trailing newline or CR). */
export async function* splitLines(source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>): AsyncGenerator<RawLine> {
  let pending: Buffer[] = [];
  let pendingLen = 0;
  let no = 0;
  let first = true;
  for await (const chunk of source) {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (first && buf.length > 0) {
      first = false;
      if (buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) buf = buf.subarray(3);
    }
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(10, start);
      if (nl < 0) break;
      let line: Buffer;
      if (pendingLen > 0) {
        pending.push(buf.subarray(start, nl));
        line = Buffer.concat(pending);
        pending = [];
        pendingLen = 0;
      } else line = buf.subarray(start, nl);
      if (line.length > 0 && line[line.length - 1] === 13) line = line.subarray(0, line.length - 1);
      yield { no: ++no, bytes: line };
      start = nl + 1;
    }
    if (start < buf.length) {
      pending.push(buf.subarray(start));
      pendingLen += buf.length - start;
    }
  }
  if (pendingLen > 0) {
    let line = Buffer.concat(pending);
    if (line.length > 0 && line[line.length - 1] === 13) line = line.subarray(0, line.length - 1);
    yield { no: ++no, bytes: line };
  }
}

/** The error of line `no` when decodeLine refuses it. */
export function notUtf8(no: number): FathomError {
  return new FathomError('BAD_JSON', `line ${no} is not valid UTF-8`);
}

/** Decodes one line; undefined when it is not valid UTF-8. Hot: once per imported line. */
export function decodeLine(bytes: Buffer): string | undefined {
  const s = bytes.toString('utf8');
  if (s.indexOf('\uFFFD') < 0) return s;
  try {
    return strict.decode(bytes);
  } catch {
    return undefined;
  }
}

export function isBlank(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (c !== 32 && c !== 9 && c !== 13) return false;
  }
  return true;
}

/**
 * A batch of lines in one buffer of its own: line i is bytes[offsets[i], offsets[i + 1]),
 * input line number nos[i]. Its buffers can be transferred to a worker and back.
 */
export interface PackedLines {
  bytes: Uint8Array;
  offsets: Uint32Array;
  nos: Uint32Array;
}

/** Line i of a packed batch (a view, no copy). */
export function lineBytes(lines: PackedLines, i: number): Buffer {
  const a = lines.offsets[i]!;
  return Buffer.from(lines.bytes.buffer, lines.bytes.byteOffset + a, lines.offsets[i + 1]! - a);
}

/** Copies a batch's lines into one buffer of its own (so that it can be transferred). */
export function packLines(raws: RawLine[]): PackedLines {
  let total = 0;
  for (const r of raws) total += r.bytes.length;
  const bytes = new Uint8Array(total);
  const offsets = new Uint32Array(raws.length + 1);
  const nos = new Uint32Array(raws.length);
  let at = 0;
  for (let i = 0; i < raws.length; i++) {
    const b = raws[i]!.bytes;
    bytes.set(b, at);
    offsets[i] = at;
    nos[i] = raws[i]!.no;
    at += b.length;
  }
  offsets[raws.length] = at;
  return { bytes, offsets, nos };
}
