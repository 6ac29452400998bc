/**
 * Image decoding and CLIP preprocessing: Base64 BMP / JPEG / PNG in, the image tower's
 * input out (float32, channels first, resized, centre-cropped, normalised).
 *
 * Decoders are pure JavaScript (jpeg-js, pngjs, bmp-ts, the decoders jimp is built on):
 * nothing native to install or approve, no platform packages, the same on every machine.
 * They are slower than libvips or Rust's `image`, which is why this runs off the main
 * thread (image-worker.ts) and why an image's size is checked from its header first
 * (format.ts: a 100-megapixel image is refused before a byte of it is decoded).
 *
 * Preprocessing follows CLIP's (and Hugging Face's CLIPImageProcessor's) recipe: convert
 * to RGB (alpha dropped), resize so the short side is `size` with a bicubic filter
 * (a = -0.5) widened by the scale when shrinking (antialiasing, as PIL does), crop the
 * centre `size` x `size`, scale to [0, 1], subtract `mean` and divide by `std` per channel.
 */
import { createRequire } from 'node:module';
import { IMAGE_DEFAULTS } from '../../defaults.js';
import { checkImage, ImageError } from './format.js';

// The decoders are loaded on first use: `fathom search` and the other commands that never
// see an image do not pay for loading them.
const requireHere = createRequire(import.meta.url);
let decoders: { jpeg: typeof import('jpeg-js'); PNG: typeof import('pngjs').PNG; bmp: typeof import('bmp-ts') } | undefined;
function lib() {
  decoders ??= { jpeg: requireHere('jpeg-js'), PNG: requireHere('pngjs').PNG, bmp: requireHere('bmp-ts') };
  return decoders;
}

export interface RgbImage {
  width: number;
  height: number;
  /** width * height * 3 bytes, row by row. */
  rgb: Uint8Array;
}

export interface PreprocessSpec {
  /** Side of the square the tower takes. */
  size: number;
  mean: readonly number[];
  std: readonly number[];
}

function dropAlpha(rgba: Uint8Array, width: number, height: number, order: 'rgba' | 'abgr'): Uint8Array {
  const n = width * height;
  const out = new Uint8Array(n * 3);
  for (let i = 0, j = 0; i < n; i++, j += 4) {
    if (order === 'rgba') {
      out[i * 3] = rgba[j]!;
      out[i * 3 + 1] = rgba[j + 1]!;
      out[i * 3 + 2] = rgba[j + 2]!;
    } else {
      out[i * 3] = rgba[j + 3]!;
      out[i * 3 + 1] = rgba[j + 2]!;
      out[i * 3 + 2] = rgba[j + 1]!;
    }
  }
  return out;
}

/** Decodes a Base64 image value to RGB. ImageError for anything that is not a decodable BMP, JPEG or PNG. */
export function decodeImage(value: unknown): RgbImage {
  const { bytes, header } = checkImage(value);
  const what = header.format === 'jpeg' ? 'JPEG' : header.format.toUpperCase();
  const { jpeg, PNG, bmp } = lib();
  try {
    switch (header.format) {
      case 'jpeg': {
        const img = jpeg.decode(bytes, {
          useTArray: true,
          formatAsRGBA: false,
          maxResolutionInMP: Math.ceil(IMAGE_DEFAULTS.maxPixels / 1e6),
          maxMemoryUsageInMB: Math.ceil((IMAGE_DEFAULTS.maxPixels * 6) / 1e6),
        });
        return { width: img.width, height: img.height, rgb: img.data };
      }
      case 'png': {
        const img = PNG.sync.read(bytes);
        return { width: img.width, height: img.height, rgb: dropAlpha(img.data, img.width, img.height, 'rgba') };
      }
      case 'bmp': {
        const img = bmp.decode(bytes);
        if (img.width !== header.width || img.height !== header.height || img.data.length < img.width * img.height * 4) {
          throw new Error('the pixel data does not match the header');
        }
        return { width: img.width, height: img.height, rgb: dropAlpha(img.data, img.width, img.height, 'abgr') };
      }
    }
  } catch (e) {
    if (e instanceof ImageError) throw e;
    const msg = (e as Error)?.message ?? String(e);
    throw new ImageError(`is a ${what} image that cannot be decoded (${msg.replace(/\s+/g, ' ').slice(0, 200)})`);
  }
}

/** Bicubic convolution kernel, a = -0.5 (PIL's and CLIP's). */
function cubic(x: number): number {
  const a = -0.5;
  const t = Math.abs(x);
  if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
  return 0;
}

/** Filter taps for output pixels [start, start + count) of a resize from `inSize` to `outSize` (PIL's scheme). */
function taps(inSize: number, outSize: number, start: number, count: number): { first: Int32Array; n: Int32Array; w: Float32Array; stride: number } {
  const scale = inSize / outSize;
  const fscale = Math.max(scale, 1);
  const support = 2 * fscale;
  const stride = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(count);
  const n = new Int32Array(count);
  const w = new Float32Array(count * stride);
  for (let k = 0; k < count; k++) {
    const center = (start + k + 0.5) * scale;
    const lo = Math.max(Math.trunc(center - support + 0.5), 0);
    const hi = Math.min(Math.trunc(center + support + 0.5), inSize);
    let sum = 0;
    const m = Math.min(hi - lo, stride);
    for (let i = 0; i < m; i++) {
      const v = cubic((i + lo - center + 0.5) / fscale);
      w[k * stride + i] = v;
      sum += v;
    }
    if (sum !== 0) for (let i = 0; i < m; i++) w[k * stride + i]! /= sum;
    first[k] = lo;
    n[k] = m;
  }
  return { first, n, w, stride };
}

/**
 * CLIP's preprocessing of one decoded image, written into `out` (3 * size * size floats,
 * channels first) at `offset`. Only the pixels of the centre crop are computed. Hot: once
 * per embedded image.
 */
export function preprocessInto(img: RgbImage, spec: PreprocessSpec, out: Float32Array, offset: number): void {
  const { width: w, height: h, rgb } = img;
  const S = spec.size;
  // the short side becomes S, the long one keeps the aspect ratio (rounded down, at least S)
  const rw = w <= h ? S : Math.max(S, Math.trunc((S * w) / h));
  const rh = w <= h ? Math.max(S, Math.trunc((S * h) / w)) : S;
  const left = Math.trunc((rw - S) / 2);
  const top = Math.trunc((rh - S) / 2);
  const hx = taps(w, rw, left, S);
  const vy = taps(h, rh, top, S);
  // horizontal pass over the input rows the vertical taps touch
  let rowLo = h;
  let rowHi = 0;
  for (let k = 0; k < S; k++) {
    rowLo = Math.min(rowLo, vy.first[k]!);
    rowHi = Math.max(rowHi, vy.first[k]! + vy.n[k]!);
  }
  const mid = new Float32Array((rowHi - rowLo) * S * 3);
  for (let y = rowLo; y < rowHi; y++) {
    const src = y * w * 3;
    const dst = (y - rowLo) * S * 3;
    for (let x = 0; x < S; x++) {
      let r = 0;
      let g = 0;
      let b = 0;
      const f = hx.first[x]!;
      const m = hx.n[x]!;
      const wo = x * hx.stride;
      for (let i = 0; i < m; i++) {
        const wt = hx.w[wo + i]!;
        const p = src + (f + i) * 3;
        r += wt * rgb[p]!;
        g += wt * rgb[p + 1]!;
        b += wt * rgb[p + 2]!;
      }
      mid[dst + x * 3] = r;
      mid[dst + x * 3 + 1] = g;
      mid[dst + x * 3 + 2] = b;
    }
  }
  const plane = S * S;
  const s0 = 1 / (255 * spec.std[0]!);
  const s1 = 1 / (255 * spec.std[1]!);
  const s2 = 1 / (255 * spec.std[2]!);
  const m0 = spec.mean[0]! / spec.std[0]!;
  const m1 = spec.mean[1]! / spec.std[1]!;
  const m2 = spec.mean[2]! / spec.std[2]!;
  // the resized image is 8-bit in CLIP's pipeline: clamp to [0, 255] before normalising
  const clamp = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : v);
  for (let y = 0; y < S; y++) {
    const f = vy.first[y]!;
    const m = vy.n[y]!;
    const wo = y * vy.stride;
    const row = offset + y * S;
    for (let x = 0; x < S; x++) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (let i = 0; i < m; i++) {
        const wt = vy.w[wo + i]!;
        const p = ((f + i - rowLo) * S + x) * 3;
        r += wt * mid[p]!;
        g += wt * mid[p + 1]!;
        b += wt * mid[p + 2]!;
      }
      out[row + x] = clamp(r) * s0 - m0;
      out[row + plane + x] = clamp(g) * s1 - m1;
      out[row + 2 * plane + x] = clamp(b) * s2 - m2;
    }
  }
}

/** Result of preparing a batch of images for an image tower. */
export interface PreparedImages {
  /** Pixels of the images that decoded, in order, each 3 * size * size floats. */
  pixels: Float32Array;
  /** Per input image: its index among the decoded ones, or -1. */
  slot: Int32Array;
  /** Per input image: why it failed (completes "field `x` ..."), or null. */
  errors: Array<string | null>;
}

/** Decodes and preprocesses a batch of Base64 images (the image worker's job, also run inline). */
export function prepareImages(images: unknown[], spec: PreprocessSpec): PreparedImages {
  const slot = new Int32Array(images.length).fill(-1);
  const errors: Array<string | null> = new Array(images.length).fill(null);
  const per = 3 * spec.size * spec.size;
  const all = new Float32Array(images.length * per);
  let n = 0;
  // each image is preprocessed as soon as it is decoded, so one decoded image is alive at a
  // time: a batch of images at the pixel limit would otherwise hold 75 MB of RGB apiece
  images.forEach((v, i) => {
    let img: RgbImage;
    try {
      img = decodeImage(v);
    } catch (e) {
      if (!(e instanceof ImageError)) throw e;
      errors[i] = e.message;
      return;
    }
    preprocessInto(img, spec, all, n * per);
    slot[i] = n++;
  });
  const pixels = n === images.length ? all : all.slice(0, n * per);
  return { pixels, slot, errors };
}
