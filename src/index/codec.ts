/**
 * Binary building blocks of the on-disk index: LEB128 varints and sectioned blobs. The
 * term dictionaries stored in those blobs are src/termdict.
 *
 * A sectioned blob (one per segment and field) is:
 *
 *   +--------+---------+----------+--------------------------------+-----------+
 *   | "FTHM" | version | nSection | nSection x (tag, offset, size) | data ...  |
 *   +--------+---------+----------+--------------------------------+-----------+
 *     u32      u32       u32        3 x u32 each                     8-aligned
 *
 * Each section is a typed array, 8-byte aligned inside the blob so that a reader can
 * view it without copying once the blob itself sits at an aligned address.
 */

export const BLOB_MAGIC = 0x4d485446; // "FTHM" little-endian
export const BLOB_VERSION = 1;

// ---------------------------------------------------------------------------
// Varints (unsigned, < 2^32). Hot: postings are read and written with these.
// ---------------------------------------------------------------------------

/** A growable byte buffer for varint streams. */
export class ByteWriter {
  buf: Uint8Array;
  len = 0;
  constructor(initial = 256) {
    this.buf = new Uint8Array(initial);
  }
  private grow(need: number) {
    let cap = this.buf.length * 2;
    while (cap < this.len + need) cap *= 2;
    const nb = new Uint8Array(cap);
    nb.set(this.buf.subarray(0, this.len));
    this.buf = nb;
  }
  varint(v: number) {
    if (this.len + 5 > this.buf.length) this.grow(5);
    const b = this.buf;
    let l = this.len;
    while (v >= 0x80) {
      b[l++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[l++] = v;
    this.len = l;
  }
  bytes(src: Uint8Array, start: number, end: number) {
    const n = end - start;
    if (this.len + n > this.buf.length) this.grow(n);
    if (n < 32) {
      // short copies (positions of one document) are faster by hand than via subarray + set
      const b = this.buf;
      let l = this.len;
      for (let k = start; k < end; k++) b[l++] = src[k]!;
      this.len = l;
    } else {
      this.buf.set(src.subarray(start, end), this.len);
      this.len += n;
    }
  }
  result(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }
}

/** Cursor over a varint stream. */
export class ByteReader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start = 0,
  ) {
    this.pos = start;
  }
  varint(): number {
    const b = this.buf;
    let p = this.pos;
    let byte = b[p++]!;
    let v = byte & 0x7f;
    if (byte >= 0x80) {
      byte = b[p++]!;
      v |= (byte & 0x7f) << 7;
      if (byte >= 0x80) {
        byte = b[p++]!;
        v |= (byte & 0x7f) << 14;
        if (byte >= 0x80) {
          byte = b[p++]!;
          v |= (byte & 0x7f) << 21;
          if (byte >= 0x80) {
            byte = b[p++]!;
            v = (v >>> 0) + (byte & 0x0f) * 0x10000000;
          }
        }
      }
    }
    this.pos = p;
    return v >>> 0;
  }
  /** Skips `n` varints. */
  skip(n: number) {
    const b = this.buf;
    let p = this.pos;
    while (n > 0) {
      if (b[p++]! < 0x80) n--;
    }
    this.pos = p;
  }
}

// ---------------------------------------------------------------------------
// Sectioned blobs
// ---------------------------------------------------------------------------

export type Section = Uint8Array | Uint16Array | Uint32Array | Int32Array | Float64Array;

export function encodeBlob(sections: Map<number, Section>): Uint8Array {
  const entries = [...sections.entries()];
  const headerLen = 12 + entries.length * 12;
  let off = align8(headerLen);
  const placed: Array<[number, number, Section]> = [];
  for (const [tag, arr] of entries) {
    placed.push([tag, off, arr]);
    off = align8(off + arr.byteLength);
  }
  const out = new Uint8Array(off);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, BLOB_MAGIC, true);
  dv.setUint32(4, BLOB_VERSION, true);
  dv.setUint32(8, entries.length, true);
  placed.forEach(([tag, o, arr], i) => {
    dv.setUint32(12 + i * 12, tag, true);
    dv.setUint32(16 + i * 12, o, true);
    dv.setUint32(20 + i * 12, arr.byteLength, true);
    out.set(new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength), o);
  });
  return out;
}

function align8(n: number) {
  return (n + 7) & ~7;
}

/** Reads a sectioned blob. Copies it once when it is not 8-byte aligned. */
export class Blob {
  readonly bytes: Uint8Array;
  private readonly index = new Map<number, [number, number]>();
  constructor(raw: Uint8Array) {
    let b = raw;
    if (b.byteOffset % 8 !== 0) {
      const copy = new Uint8Array(new ArrayBuffer(align8(b.byteLength)), 0, b.byteLength);
      copy.set(b);
      b = copy;
    }
    this.bytes = b;
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    if (b.byteLength < 12 || dv.getUint32(0, true) !== BLOB_MAGIC) throw new Error('index blob is corrupt (bad magic)');
    const version = dv.getUint32(4, true);
    if (version > BLOB_VERSION) throw new Error(`index blob version ${version} is newer than this Fathom supports`);
    const n = dv.getUint32(8, true);
    for (let i = 0; i < n; i++) {
      this.index.set(dv.getUint32(12 + i * 12, true), [dv.getUint32(16 + i * 12, true), dv.getUint32(20 + i * 12, true)]);
    }
  }
  has(tag: number): boolean {
    return this.index.has(tag);
  }
  private range(tag: number): [number, number] {
    const r = this.index.get(tag);
    if (!r) throw new Error(`index blob has no section ${tag}`);
    return r;
  }
  u8(tag: number): Uint8Array {
    const [o, l] = this.range(tag);
    return new Uint8Array(this.bytes.buffer, this.bytes.byteOffset + o, l);
  }
  u16(tag: number): Uint16Array {
    const [o, l] = this.range(tag);
    return new Uint16Array(this.bytes.buffer, this.bytes.byteOffset + o, l / 2);
  }
  u32(tag: number): Uint32Array {
    const [o, l] = this.range(tag);
    return new Uint32Array(this.bytes.buffer, this.bytes.byteOffset + o, l / 4);
  }
  i32(tag: number): Int32Array {
    const [o, l] = this.range(tag);
    return new Int32Array(this.bytes.buffer, this.bytes.byteOffset + o, l / 4);
  }
  f64(tag: number): Float64Array {
    const [o, l] = this.range(tag);
    return new Float64Array(this.bytes.buffer, this.bytes.byteOffset + o, l / 8);
  }
  json<T>(tag: number): T {
    return JSON.parse(new TextDecoder().decode(this.u8(tag))) as T;
  }
}

export function jsonSection(v: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(v));
}
