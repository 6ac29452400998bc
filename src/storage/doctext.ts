/**
 * How documents are stored: as JSON text.
 *
 * The native JSON.stringify / JSON.parse are several times faster than a JavaScript
 * msgpack encoder for documents, and text lets an import store a line exactly as it
 * arrived when validation changed nothing (`rememberText`), and lets export stream stored
 * text without decoding it. Documents holding integers beyond 2^53 are stored with a
 * leading marker byte and read back with the lossless parser.
 */
import { parseJson, stringifyJson } from '../json.js';

const TEXT = new WeakMap<object, { text: string; lossless: boolean }>();
const LOSSLESS = 0x01;

/**
 * Records that `doc` is exactly the JSON `text` (so storing it needs no encoding);
 * `lossless` when the text may hold integers beyond 2^53.
 */
export function rememberText(doc: object, text: string, lossless = hasBigInt(text)): void {
  TEXT.set(doc, { text, lossless });
}

/** The remembered text of a document, if any. */
export function rememberedText(doc: object): { text: string; lossless: boolean } | undefined {
  return TEXT.get(doc);
}

function hasBigInt(text: string): boolean {
  // a quick pre-check: a bigint needs 16+ digits in a row
  return /\d{16}/.test(text);
}

/** lmdb-js encoder for the docs database. Hot: once per stored or read document. */
export const docEncoder = {
  encode(doc: Record<string, unknown>): Buffer {
    const known = TEXT.get(doc);
    const text = known ? known.text : stringifyJson(doc);
    // any 16-digit run may be an integer beyond 2^53: read such documents losslessly
    if (known ? known.lossless : hasBigInt(text)) {
      const b = Buffer.allocUnsafe(Buffer.byteLength(text) + 1);
      b[0] = LOSSLESS;
      b.write(text, 1);
      return b;
    }
    return Buffer.from(text);
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
