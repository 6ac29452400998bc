/**
 * `image` field values: Base64 text of a BMP, JPEG or PNG file.
 *
 * `checkImage` is the cheap check every write makes, on the document's thread: the text is
 * strict Base64 (standard or URL-safe alphabet, optional padding, line breaks allowed), the
 * bytes start with one of the three formats' signatures, and the header gives a size within
 * IMAGE_DEFAULTS.maxPixels. Nothing is decoded past the header; the pixels are decoded only
 * where an embedding needs them (decode.ts), and a file whose body is corrupt fails there.
 *
 * Messages say what was found and what is needed (another format is named when its
 * signature is recognised), so that a caller can fix the value.
 */
import { IMAGE_DEFAULTS } from '../../defaults.js';

export type ImageFormat = 'png' | 'jpeg' | 'bmp';

export interface ImageHeader {
  format: ImageFormat;
  width: number;
  height: number;
}

/** An image value that cannot be used; `message` completes "field `x` ..." */
export class ImageError extends Error {}

const BASE64_BODY = /^[A-Za-z0-9+/_-]*$/;

/** The bytes of a Base64 value, or an ImageError saying why it is not Base64. */
export function base64Bytes(value: string): Buffer {
  let s = value;
  if (/[\r\n]/.test(s)) s = s.replace(/[\r\n]+/g, ''); // `base64` wraps lines at 76 characters
  if (s.length === 0) throw new ImageError('is an empty string, not a Base64-encoded image');
  if (s.startsWith('data:')) throw new ImageError('is a data: URL; send only the Base64 text after the comma');
  let end = s.length;
  while (end > 0 && s.charCodeAt(end - 1) === 61 /* = */) end--;
  const padding = s.length - end;
  const body = end === s.length ? s : s.slice(0, end);
  if (!BASE64_BODY.test(body)) {
    const bad = /[^A-Za-z0-9+/_-]/.exec(body)!;
    throw new ImageError(`is not valid Base64: character ${JSON.stringify(bad[0])} at position ${bad.index}`);
  }
  if (padding > 2 || (padding > 0 && s.length % 4 !== 0) || body.length % 4 === 1) {
    throw new ImageError('is not valid Base64: its length or padding is wrong (the text may be cut short)');
  }
  return Buffer.from(body, 'base64');
}

/** Names formats we recognise but do not accept, for the error message. */
function otherFormat(b: Buffer): string | undefined {
  const ascii = (from: number, to: number) => b.toString('latin1', from, to);
  if (ascii(0, 4) === 'GIF8') return 'a GIF image';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'a WebP image';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'WAV audio';
  if ((b[0] === 0x49 && b[1] === 0x49 && b[2] === 0x2a && b[3] === 0) || (b[0] === 0x4d && b[1] === 0x4d && b[2] === 0 && b[3] === 0x2a)) return 'a TIFF image';
  if (ascii(4, 8) === 'ftyp') {
    const brand = ascii(8, 12);
    if (/^(avif|avis)/.test(brand)) return 'an AVIF image';
    if (/^(heic|heix|hevc|mif1|msf1)/.test(brand)) return 'a HEIF image';
    return 'an MP4/QuickTime file';
  }
  if (ascii(0, 4) === '%PDF') return 'a PDF document';
  if (b[0] === 0 && b[1] === 0 && b[2] === 1 && b[3] === 0) return 'an ICO icon';
  const head = ascii(0, Math.min(b.length, 256)).trimStart().toLowerCase();
  if (head.startsWith('<svg') || (head.startsWith('<?xml') && head.includes('<svg'))) return 'an SVG image';
  return undefined;
}

function pngHeader(b: Buffer): ImageHeader {
  // signature (8), IHDR length (4), "IHDR", width, height (big-endian)
  if (b.length < 24 || b.toString('latin1', 12, 16) !== 'IHDR') throw new ImageError('is a PNG file cut short or damaged: no IHDR header');
  return { format: 'png', width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

/** Start-of-frame markers: C0-CF except DHT (C4), JPG (C8) and DAC (CC). */
function isSof(m: number): boolean {
  return m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;
}

function jpegHeader(b: Buffer): ImageHeader {
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) throw new ImageError(`is a JPEG file with a damaged marker at byte ${i}`);
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) break; // end of image / start of scan before any frame
    const len = b.readUInt16BE(i + 2);
    if (len < 2) throw new ImageError(`is a JPEG file with a damaged segment at byte ${i}`);
    if (isSof(marker)) {
      if (i + 9 > b.length) break;
      return { format: 'jpeg', height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    }
    i += 2 + len;
  }
  throw new ImageError('is a JPEG file cut short or damaged: no frame header (SOF) before its image data');
}

function bmpHeader(b: Buffer): ImageHeader {
  if (b.length < 26) throw new ImageError('is a BMP file cut short: its header is incomplete');
  const dib = b.readUInt32LE(14);
  if (dib === 12) return { format: 'bmp', width: b.readUInt16LE(18), height: b.readUInt16LE(20) }; // BITMAPCOREHEADER
  if (dib < 40 || b.length < 30) throw new ImageError(`is a BMP file with an unknown header (${dib} bytes)`);
  return { format: 'bmp', width: Math.abs(b.readInt32LE(18)), height: Math.abs(b.readInt32LE(22)) };
}

/** The format and size of an image file, from its header; ImageError when it is not a usable BMP, JPEG or PNG. */
export function imageHeader(b: Buffer): ImageHeader {
  let h: ImageHeader;
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a) h = pngHeader(b);
  else if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) h = jpegHeader(b);
  else if (b.length >= 2 && b[0] === 0x42 && b[1] === 0x4d) h = bmpHeader(b);
  else {
    const other = otherFormat(b);
    throw new ImageError(other ? `is ${other}; only BMP, JPEG and PNG images are accepted` : `is not a BMP, JPEG or PNG image (its ${b.length} bytes start with no known image signature)`);
  }
  if (h.width === 0 || h.height === 0) throw new ImageError(`is a ${h.format.toUpperCase()} image of ${h.width} x ${h.height} pixels: it has no pixels`);
  if (h.width * h.height > IMAGE_DEFAULTS.maxPixels) {
    throw new ImageError(
      `is a ${h.format.toUpperCase()} image of ${h.width} x ${h.height} pixels (${((h.width * h.height) / 1e6).toFixed(1)} megapixels); ` +
        `images may have at most ${(IMAGE_DEFAULTS.maxPixels / 1e6).toFixed(0)} megapixels`,
    );
  }
  return h;
}

/** Checks an `image` value: strict Base64 of a BMP, JPEG or PNG within the pixel limit. Returns its bytes and header. */
export function checkImage(value: unknown): { bytes: Buffer; header: ImageHeader } {
  if (typeof value !== 'string') {
    const what = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
    throw new ImageError(`must be a Base64-encoded BMP, JPEG or PNG image, got ${what}`);
  }
  const bytes = base64Bytes(value);
  return { bytes, header: imageHeader(bytes) };
}
