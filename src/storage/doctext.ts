/**
 * How documents are stored: as JSON text.
 *
 * The native JSON.stringify / JSON.parse are several times faster than a JavaScript
 * msgpack encoder for documents, and text lets an import store a line exactly as it
 * arrived when validation changed nothing (`encodeTextTransient`), and lets export stream
 * stored text without decoding it. Documents holding integers beyond 2^53 are stored with a
 * leading marker byte and read back with the lossless parser.
 */
import { hasLongInteger, parseJson, stringifyJson } from '../json.js';

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
  let body = text;
  let tail = '';
  if (id !== undefined) {
    body = text.trimEnd().slice(0, -1).trimEnd();
    tail = idMember(body.endsWith('{'), id);
  }
  let n = begin(body.length * 3 + tail.length, lossless);
  n += scratch.write(body, n);
  return finish(n, tail);
}

/**
 * encodeTextTransient for a line still in its bytes (valid UTF-8, as read): the same
 * result without decoding the line and encoding it again. Hot: once per imported line.
 */
export function encodeBytesTransient(line: Uint8Array, lossless: boolean, id?: string): Buffer {
  let end = line.length;
  let tail = '';
  if (id !== undefined) {
    // like text.trimEnd().slice(0, -1).trimEnd(): a valid line ends in `}` and JSON whitespace
    while (end > 0 && isJsonSpace(line[end - 1]!)) end--;
    end--;
    while (end > 0 && isJsonSpace(line[end - 1]!)) end--;
    tail = idMember(line[end - 1] === 0x7b, id);
  }
  let n = begin(end + tail.length, lossless);
  scratch.set(end === line.length ? line : line.subarray(0, end), n);
  n += end;
  return finish(n, tail);
}

/** Makes room for a value of up to `max` bytes in the scratch buffer; returns where its body starts. */
function begin(max: number, lossless: boolean): number {
  if (scratch.length < max + 1) scratch = Buffer.allocUnsafe(Math.max(max + 1, scratch.length * 2));
  if (!lossless) return 0;
  scratch[0] = LOSSLESS;
  return 1;
}

/** `"id": id` as the last member, closing the object (the body ends in `{` or in a member). */
function idMember(afterBrace: boolean, id: string): string {
  return (afterBrace ? '' : ',') + '"id":' + JSON.stringify(id) + '}';
}

/**
 * Ends the value with its id member. Ids are ASCII (validateId; generated ones are
 * digits), so it is written as latin1: a UTF-8 write of a short string costs ~1 us.
 */
function finish(n: number, tail: string): Buffer {
  if (tail) n += scratch.write(tail, n, 'latin1');
  return scratch.subarray(0, n);
}

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
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
