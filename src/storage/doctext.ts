/**
 * How documents are stored: as JSON text.
 *
 * The native JSON.stringify / JSON.parse are several times faster than a JavaScript
 * msgpack encoder for documents, and text lets an import store a line exactly as it
 * arrived when validation changed nothing (`encodeTextTransient`), and lets export stream
 * stored text without decoding it. Documents holding integers beyond 2^53 are stored with a
 * leading marker byte and read back with the lossless parser.
 */
import { hasLongInteger, isJsonSpace, parseJson, stringifyJson } from '../json.js';

const LOSSLESS = 0x01;

let scratch = Buffer.allocUnsafe(1 << 16);

/**
 * The stored form of a document's JSON text (`lossless` when it may hold integers beyond
 * 2^53: a marker byte, then the text, read back with the lossless parser), in one reused
 * buffer: for a put inside a write transaction, where lmdb-js copies the value into the
 * database before `put` returns, this spares a fresh buffer per document (an import of 63k
 * documents allocated 49 MB of short-lived buffers). With `id`, the stored text is the
 * document's JSON text with `"id": id` appended as its last member. Hot: once per imported
 * line. The result is valid only until the next call.
 */
export function encodeTextTransient(text: string, lossless: boolean, id?: string): Buffer {
  if (id === undefined) {
    const n = begin(text.length * 3, lossless);
    return scratch.subarray(0, n + scratch.write(text, n));
  }
  const body = text.trimEnd().slice(0, -1).trimEnd();
  let n = begin(body.length * 3 + id.length * 6 + 9, lossless);
  n += scratch.write(body, n);
  return idMember(n, body.endsWith('{'), id);
}

/**
 * encodeTextTransient for a line still in its bytes (valid UTF-8, as read): the same
 * result without decoding the line and encoding it again. Hot: once per imported line.
 */
export function encodeBytesTransient(line: Uint8Array, lossless: boolean, id?: string): Buffer {
  if (id === undefined) {
    const n = begin(line.length, lossless);
    scratch.set(line, n);
    return scratch.subarray(0, n + line.length);
  }
  // like text.trimEnd().slice(0, -1).trimEnd(): a valid line ends in `}` and JSON whitespace
  let end = line.length;
  while (end > 0 && isJsonSpace(line[end - 1]!)) end--;
  end--;
  while (end > 0 && isJsonSpace(line[end - 1]!)) end--;
  let n = begin(end + id.length * 6 + 9, lossless);
  scratch.set(line.subarray(0, end), n);
  n += end;
  return idMember(n, line[end - 1] === 0x7b, id);
}

/** Makes room for a value of up to `max` bytes in the scratch buffer; returns where its body starts. */
function begin(max: number, lossless: boolean): number {
  if (scratch.length < max + 1) scratch = Buffer.allocUnsafe(Math.max(max + 1, scratch.length * 2));
  if (!lossless) return 0;
  scratch[0] = LOSSLESS;
  return 1;
}

/**
 * Writes `"id":"<id>"}` (after a comma unless the body ends in `{`) at `n` and returns the
 * value. Hot: once per document with a generated id. Generated ids are digits, written byte
 * by byte (building the member as a string and encoding it costs more, per document); an
 * id that JSON would escape goes through JSON.stringify.
 */
function idMember(n: number, afterBrace: boolean, id: string): Buffer {
  if (!afterBrace) scratch[n++] = 0x2c; // ,
  scratch[n++] = 0x22; // "id":
  scratch[n++] = 0x69;
  scratch[n++] = 0x64;
  scratch[n++] = 0x22;
  scratch[n++] = 0x3a;
  const start = n;
  scratch[n++] = 0x22; // "
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
      n = start + scratch.write(JSON.stringify(id), start);
      scratch[n++] = 0x7d;
      return scratch.subarray(0, n);
    }
    scratch[n++] = c;
  }
  scratch[n++] = 0x22; // "
  scratch[n++] = 0x7d; // }
  return scratch.subarray(0, n);
}

/** lmdb-js encoder for the docs database. Hot: once per stored or read document. */
export const docEncoder = {
  encode(doc: Record<string, unknown>): Buffer {
    const text = stringifyJson(doc);
    // a copy: lmdb-js may keep an encoder's result until a later commit
    return Buffer.from(encodeTextTransient(text, hasLongInteger(text)));
  },
  decode(buf: Uint8Array): Record<string, unknown> {
    const b = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    if (b[0] === LOSSLESS) return parseJson(b.toString('utf8', 1)) as Record<string, unknown>;
    return JSON.parse(b.toString('utf8')) as Record<string, unknown>;
  },
};

/** The stored JSON text of a raw docs-database value (no decoding). */
export function storedText(buf: Uint8Array): string {
  const b = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  return b[0] === LOSSLESS ? b.toString('utf8', 1) : b.toString('utf8');
}
