/** Small real images for the image tests, encoded by the same libraries' encoders: PNG, JPEG, BMP. */
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import * as bmp from 'bmp-ts';

export type Rgb = [number, number, number];

/** RGBA pixels of a w x h image filled by `at(x, y)`. */
function pixels(w: number, h: number, at: (x: number, y: number) => Rgb): Buffer {
  const data = Buffer.alloc(w * h * 4);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const [r, g, b] = at(x, y);
      const i = (y * w + x) * 4;
      data[i] = r;
      data[i + 1] = g;
      data[i + 2] = b;
      data[i + 3] = 255;
    }
  }
  return data;
}

export function pngBytes(w: number, h: number, at: (x: number, y: number) => Rgb): Buffer {
  const png = new PNG({ width: w, height: h });
  pixels(w, h, at).copy(png.data);
  return PNG.sync.write(png);
}

export function jpegBytes(w: number, h: number, at: (x: number, y: number) => Rgb, quality = 90): Buffer {
  return jpeg.encode({ width: w, height: h, data: pixels(w, h, at) }, quality).data;
}

/** A 24-bit BMP (bmp-ts takes ABGR pixels). */
export function bmpBytes(w: number, h: number, at: (x: number, y: number) => Rgb): Buffer {
  const rgba = pixels(w, h, at);
  const abgr = Buffer.alloc(rgba.length);
  for (let i = 0; i < rgba.length; i += 4) {
    abgr[i] = 255;
    abgr[i + 1] = rgba[i + 2]!;
    abgr[i + 2] = rgba[i + 1]!;
    abgr[i + 3] = rgba[i]!;
  }
  return bmp.encode({ width: w, height: h, data: abgr, bitPP: 24 }).data;
}

export const solid = (c: Rgb) => () => c;
export const b64 = (b: Buffer) => b.toString('base64');

export const RED: Rgb = [255, 0, 0];
export const GREEN: Rgb = [0, 255, 0];
export const BLUE: Rgb = [0, 0, 255];
export const YELLOW: Rgb = [255, 255, 0];
