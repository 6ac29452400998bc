/**
 * Image fields and image search: `image` values checked (Base64 BMP / JPEG / PNG within the
 * pixel limit) under every dirty_values mode, `store: false` never written nor returned,
 * CLIP-style models (the tiny fixture, downloaded as `ts/clip-vit-b-p32` from a local
 * model repository, or as a user directory with one or two ONNX files), text-to-image,
 * similar-image and hybrid search over HTTP with the typesense client.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { build } from 'esbuild';
import { Tokenizer } from '@huggingface/tokenizers';
import { Client } from 'typesense';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE_DEFAULTS } from '../src/defaults.js';
import { closeEmbedders, loadEmbedder } from '../src/embed/index.js';
import { checkImage, ImageError } from '../src/embed/image/format.js';
import { decodeImage, prepareImages } from '../src/embed/image/decode.js';
import { ImagePreparer, imagePreparer } from '../src/embed/image/images.js';
import { ClipTokenizer } from '../src/embed/tokenizers/clip-bpe.js';
import { startServer, type RunningServer } from '../src/server/serve.js';
import type { Engine } from '../src/engine.js';
import { ROOT, dataDirPath, openEngine } from './helpers.js';
import { BLUE, GREEN, RED, YELLOW, b64, bmpBytes, jpegBytes, pngBytes, solid, type Rgb } from './image-fixtures.js';
// @ts-expect-error the fixture generator is plain JavaScript
import { tinyClipFiles, writeTinyClip, learnMerges, clipVocab, WORDS } from '../fixtures/make-tiny-clip.mjs';

const TINY = path.join(ROOT, 'fixtures', 'models', 'tiny-clip');
const DIRTY = ['coerce_or_reject', 'coerce_or_drop', 'drop', 'reject'] as const;

const png = (c: Rgb, w = 24, h = 16) => b64(pngBytes(w, h, solid(c)));
const jpg = (c: Rgb, w = 20, h = 30) => b64(jpegBytes(w, h, solid(c)));
const bmp = (c: Rgb, w = 17, h = 9) => b64(bmpBytes(w, h, solid(c)));

/** A data directory holding the tiny CLIP fixture as the user model `clip` (and optionally its two-file form as `clip2`). */
function dirWithClip(): string {
  const dir = dataDirPath();
  fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
  fs.cpSync(TINY, path.join(dir, 'models', 'clip'), { recursive: true });
  writeTinyClip(path.join(dir, 'models', 'clip2'), { split: true });
  return dir;
}

const IMAGES_SCHEMA = (model = 'clip', store = false) => ({
  name: 'images',
  fields: [
    { name: 'name', type: 'string' },
    { name: 'kind', type: 'string', facet: true },
    { name: 'image', type: 'image', store },
    { name: 'embedding', type: 'float[]', embed: { from: ['image'], model_config: { model_name: model } } },
  ],
});

const PICTURES = [
  { id: 'r1', name: 'cherry', kind: 'fruit', image: png(RED) },
  { id: 'r2', name: 'fire truck', kind: 'vehicle', image: jpg(RED) },
  { id: 'g1', name: 'lime', kind: 'fruit', image: bmp(GREEN) },
  { id: 'g2', name: 'tractor', kind: 'vehicle', image: png(GREEN, 40, 40) },
  { id: 'b1', name: 'blueberry', kind: 'fruit', image: jpg(BLUE) },
  { id: 'y1', name: 'banana', kind: 'fruit', image: bmp(YELLOW) },
];

afterAll(async () => {
  await closeEmbedders();
});

describe('an image value', () => {
  it('is accepted as Base64 of a PNG, a JPEG or a BMP, with line breaks or URL-safe letters', () => {
    expect(checkImage(png(RED)).header).toEqual({ format: 'png', width: 24, height: 16 });
    expect(checkImage(jpg(RED)).header).toEqual({ format: 'jpeg', width: 20, height: 30 });
    expect(checkImage(bmp(RED)).header).toEqual({ format: 'bmp', width: 17, height: 9 });
    const wrapped = png(BLUE, 64, 64).replace(/.{76}/g, '$&\n');
    expect(checkImage(wrapped).header.format).toBe('png');
    const urlSafe = jpg(GREEN).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    expect(checkImage(urlSafe).header.format).toBe('jpeg');
  });

  it.each([
    ['not Base64', 'helloworld!', /is not valid Base64: character "!" at position 10/],
    ['cut-off Base64', png(RED).slice(0, 41), /is not valid Base64: its length or padding is wrong/],
    ['an empty string', '', /is an empty string/],
    ['a data: URL', `data:image/png;base64,${png(RED)}`, /is a data: URL; send only the Base64 text after the comma/],
    ['a GIF', Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;').toString('base64'), /is a GIF image; only BMP, JPEG and PNG images are accepted/],
    ['a WebP', Buffer.concat([Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 '), Buffer.alloc(8)]).toString('base64'), /is a WebP image/],
    ['text', Buffer.from('just some text in a file').toString('base64'), /is not a BMP, JPEG or PNG image \(its 24 bytes start with no known image signature\)/],
    ['a PNG with no header', pngBytes(4, 4, solid(RED)).subarray(0, 12).toString('base64'), /is a PNG file cut short or damaged: no IHDR header/],
    ['a JPEG with no frame', jpegBytes(4, 4, solid(RED)).subarray(0, 20).toString('base64'), /is a JPEG file cut short or damaged/],
    ['a number', 42, /must be a Base64-encoded BMP, JPEG or PNG image, got number 42/],
  ])('is refused when it is %s, saying so', (_what, value, message) => {
    expect(() => checkImage(value)).toThrow(ImageError);
    expect(() => checkImage(value)).toThrow(message);
  });

  it(`is refused beyond ${IMAGE_DEFAULTS.maxPixels / 1e6} megapixels, from the header alone`, () => {
    // a real PNG header claiming 20000 x 20000 pixels, with no pixel data behind it
    const head = pngBytes(1, 1, solid(RED));
    head.writeUInt32BE(20000, 16);
    head.writeUInt32BE(20000, 20);
    expect(() => checkImage(head.toString('base64'))).toThrow(/is a PNG image of 20000 x 20000 pixels \(400\.0 megapixels\); images may have at most 25 megapixels/);
    const bmpHead = bmpBytes(2, 2, solid(RED));
    bmpHead.writeInt32LE(6000, 18);
    bmpHead.writeInt32LE(-6000, 22); // top-down
    expect(() => checkImage(bmpHead.toString('base64'))).toThrow(/BMP image of 6000 x 6000 pixels/);
  });

  it('decodes to the colours it was made of, in every format', () => {
    const split = (x: number): Rgb => (x < 3 ? RED : BLUE);
    for (const [name, bytes] of [['png', pngBytes(6, 2, split)], ['bmp', bmpBytes(6, 2, split)], ['jpeg', jpegBytes(6, 2, split, 100)]] as const) {
      const img = decodeImage(bytes.toString('base64'));
      expect([img.width, img.height], name).toEqual([6, 2]);
      const px = (x: number) => Array.from(img.rgb.subarray(x * 3, x * 3 + 3));
      const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]!) <= 40);
      expect(near(px(0), RED), `${name} left`).toBe(true);
      expect(near(px(5), BLUE), `${name} right`).toBe(true);
    }
  });

  it('whose pixel data is damaged fails when decoded, saying which format', () => {
    const bytes = pngBytes(32, 32, (x, y) => [x * 8, y * 8, 0]);
    const cut = bytes.subarray(0, bytes.length - 30); // header intact, image data cut
    expect(checkImage(cut.toString('base64')).header.format).toBe('png');
    expect(() => decodeImage(cut.toString('base64'))).toThrow(/is a PNG image that cannot be decoded/);
    const j = jpegBytes(32, 32, (x, y) => [x * 8, y * 8, 0]);
    const garbled = Buffer.concat([j.subarray(0, 200), Buffer.alloc(50, 0xff), j.subarray(250)]);
    expect(() => decodeImage(garbled.toString('base64'))).toThrow(/JPEG image that cannot be decoded/);
  });
});

describe("CLIP's preprocessing", () => {
  const spec = { size: 8, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] };
  const at = (p: Float32Array, c: number, y: number, x: number) => p[c * 64 + y * 8 + x]!;

  it('keeps a solid colour solid and scales it to [-1, 1] with mean and std 0.5', () => {
    const { pixels, slot, errors } = prepareImages([png(RED, 100, 30)], spec);
    expect(Array.from(slot)).toEqual([0]);
    expect(errors).toEqual([null]);
    expect(pixels.length).toBe(3 * 64);
    for (const [c, v] of [[0, 1], [1, -1], [2, -1]] as const) for (let i = 0; i < 64; i++) expect(pixels[c * 64 + i]).toBeCloseTo(v, 5);
  });

  it('resizes the short side and crops the centre of the long one', () => {
    // 40 x 10: a red middle half between blue quarters; the 8 x 8 centre crop of the 32 x 8 resize is all red
    const { pixels } = prepareImages([b64(pngBytes(40, 10, (x) => (x >= 10 && x < 30 ? RED : BLUE)))], spec);
    for (let y = 0; y < 8; y++) for (let x = 0; x < 8; x++) expect(at(pixels, 0, y, x)).toBeCloseTo(1, 3);
    // 10 x 40 top half green, bottom half blue: the centre crop is half and half, top rows green
    const { pixels: tall } = prepareImages([b64(pngBytes(10, 40, (_x, y) => (y < 20 ? GREEN : BLUE)))], spec);
    expect(at(tall, 1, 0, 4)).toBeCloseTo(1, 3);
    expect(at(tall, 2, 7, 4)).toBeCloseTo(1, 3);
  });

  it('reports an image that cannot be decoded in its slot and prepares the others', () => {
    const r = prepareImages([png(RED), 'nope', bmp(BLUE)], spec);
    expect(Array.from(r.slot)).toEqual([0, -1, 1]);
    expect(r.errors[1]).toMatch(/is not a BMP, JPEG or PNG image/);
    expect(r.pixels.length).toBe(2 * 3 * 64);
  });

  it('gives the same pixels from the compiled image worker as inline', async () => {
    const dir = fs.mkdtempSync(path.join(ROOT, 'node_modules', '.fathom-test-'));
    try {
      await build({ entryPoints: [path.join(ROOT, 'src/embed/image/image-worker.ts')], bundle: true, platform: 'node', format: 'esm', packages: 'external', outfile: path.join(dir, 'image-worker.mjs'), logLevel: 'silent', banner: { js: "import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url);" } });
      const viaWorker = new ImagePreparer(path.join(dir, 'image-worker.mjs'));
      const images = [png(RED, 50, 20), 'bad', jpg(GREEN, 33, 47), bmp(YELLOW)];
      const a = await viaWorker.prepare(images, spec);
      const b = prepareImages(images, spec);
      expect(viaWorker.counts).toEqual({ worker: 1, inline: 0 });
      expect(Array.from(a.pixels)).toEqual(Array.from(b.pixels));
      expect(Array.from(a.slot)).toEqual(Array.from(b.slot));
      expect(a.errors).toEqual(b.errors);
      await viaWorker.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("CLIP's tokenizer", () => {
  /** The same tokenizer assembled from @huggingface/tokenizers' components, as Hugging Face's CLIP tokenizer.json has it. */
  function oracle(merges: string[], vocab: Map<string, number>): Tokenizer {
    const json = {
      version: '1.0',
      added_tokens: [
        { id: vocab.get('<|startoftext|>'), content: '<|startoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: true, special: true },
        { id: vocab.get('<|endoftext|>'), content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: true, special: true },
      ],
      normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }, { type: 'Lowercase' }] },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: "'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+" }, behavior: 'Removed', invert: true },
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
        ],
      },
      post_processor: { type: 'RobertaProcessing', sep: ['<|endoftext|>', vocab.get('<|endoftext|>')], cls: ['<|startoftext|>', vocab.get('<|startoftext|>')], trim_offsets: false, add_prefix_space: false },
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: { type: 'BPE', dropout: null, unk_token: '<|endoftext|>', continuing_subword_prefix: '', end_of_word_suffix: '</w>', fuse_unk: false, byte_fallback: false, vocab: Object.fromEntries(vocab), merges },
    };
    return new Tokenizer(json as never, {});
  }

  it('agrees with @huggingface/tokenizers on words, punctuation, digits, accents and unknown words', () => {
    const words = [...WORDS, 'café', 'naïve', "don't", '2024'];
    const merges: string[] = learnMerges(words);
    const vocab: Map<string, number> = clipVocab(merges);
    const mine = new ClipTokenizer('#version: 0.2\n' + merges.join('\n') + '\n', { vocabSize: vocab.size, contextLength: 77 });
    const ref = oracle(merges, vocab);
    for (const text of ['a photo of something RED', 'Wireless   headphones!!', "don't stop, 2024 café", 'naïve dogs & cats', 'zebra-striped shoe?', 'Ünïcödé ✓ 漢字']) {
      expect(mine.encode(text), text).toEqual(ref.encode(text).ids);
    }
  });

  it('cuts long texts to the context length, keeping the start and end tokens', () => {
    const merges: string[] = learnMerges(WORDS);
    const vocab: Map<string, number> = clipVocab(merges);
    const t = new ClipTokenizer(merges.join('\n'), { vocabSize: vocab.size, contextLength: 6 });
    const ids = t.encode('red green blue yellow white black');
    expect(ids).toEqual([t.bosId, ...['red', 'green', 'blue', 'yellow'].map((w) => vocab.get(`${w}</w>`)), t.eosId]);
  });

  it('uses only as many merges as the vocabulary size allows', () => {
    const t = new ClipTokenizer('#version: 0.2\nr e\nre d</w>\n', { vocabSize: 513 + 2, contextLength: 77 });
    expect(t.size).toBe(515); // 512 byte tokens + "re" + 2 special; "red</w>" is not reached
    expect(t.tokens('red')).toHaveLength(2);
  });
});

describe('a CLIP model directory', () => {
  it('embeds texts and images into one space: a colour word lands next to pictures of that colour', async () => {
    const dataDir = dirWithClip();
    for (const model of ['clip', 'clip2']) {
      const e = await loadEmbedder({ model_name: model }, { dataDir });
      expect(e.dims).toBe(8);
      const [red, green] = await e.embed(['a photo of something red', 'green'], { purpose: 'query' });
      const images = await e.embedImages!([png(RED), jpg(GREEN), bmp(BLUE), 'bm90IGFuIGltYWdl']);
      const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
      const [ri, gi, bi] = images as Float32Array[];
      expect(dot(red!, ri!), model).toBeGreaterThan(0.95);
      expect(dot(red!, gi!)).toBeLessThan(0);
      expect(dot(green!, gi!)).toBeGreaterThan(0.95);
      expect(dot(ri!, bi!)).toBeLessThan(0.5);
      expect(images[3]).toBeInstanceOf(Error);
      expect((images[3] as Error).message).toMatch(/is not a BMP, JPEG or PNG image/);
    }
  });

  it('is refused with the reason when its files do not fit CLIP', async () => {
    const dataDir = dirWithClip();
    const broken = (name: string, change: (dir: string) => void) => {
      const dir = path.join(dataDir, 'models', name);
      fs.cpSync(TINY, dir, { recursive: true });
      change(dir);
      return loadEmbedder({ model_name: name }, { dataDir }).then(
        () => '',
        (e: Error) => e.message,
      );
    };
    expect(await broken('no-vocab', (d) => fs.rmSync(path.join(d, 'vocab.txt')))).toMatch(/the vocabulary file .*vocab\.txt does not exist/);
    expect(await broken('bad-size', (d) => fs.writeFileSync(path.join(d, 'config.json'), JSON.stringify({ model_type: 'clip', vocab_file_name: 'vocab.txt', image_size: 224, vocab_size: 571 })))).toMatch(/takes 32-pixel images but config\.json says image_size 224/);
    expect(await broken('text-only', (d) => fs.copyFileSync(path.join(ROOT, 'fixtures', 'models', 'tiny-bert', 'model.onnx'), path.join(d, 'model.onnx')))).toMatch(/the text tower needs a `text_embeds` output|the image tower needs a `pixel_values` input/);
  });
});

/** A model repository on 127.0.0.1 serving the tiny CLIP model under any name, in the reference's layout. */
class Repository {
  server!: http.Server;
  requests: string[] = [];
  files: Record<string, Buffer> = {};
  async start(): Promise<string> {
    for (const [name, data] of Object.entries(tinyClipFiles() as Record<string, string | Uint8Array>)) this.files[name] = Buffer.from(data as never);
    const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
    this.server = http.createServer((req, res) => {
      this.requests.push(req.url!);
      const m = /^\/public\/([^/]+)\/([^/]+)$/.exec(req.url!);
      if (!m) return void res.writeHead(404).end();
      if (m[2] === 'config.json') {
        const cfg = { ...JSON.parse(this.files['config.json']!.toString()), model_md5: md5(this.files['model.onnx']!), vocab_md5: md5(this.files['vocab.txt']!) };
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(cfg));
      }
      const f = this.files[m[2]!];
      if (!f) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': String(f.length) }).end(f);
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/public/`;
  }
  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

describe('image fields in documents', () => {
  let e: Engine;
  beforeAll(async () => {
    e = openEngine(dirWithClip());
    await e.createCollection(IMAGES_SCHEMA('clip', false));
    await e.createCollection({ ...IMAGES_SCHEMA('clip', true), name: 'stored' });
  });
  afterAll(async () => {
    await e.close();
  });

  it('refuses a bad image under every dirty_values mode, one line at a time, and writes nothing of it', async () => {
    for (const dirty of DIRTY) {
      const lines = [
        JSON.stringify({ id: `ok-${dirty}`, name: 'ok', kind: 'x', image: png(RED) }),
        JSON.stringify({ id: `gif-${dirty}`, name: 'gif', kind: 'x', image: Buffer.from('GIF89a....').toString('base64') }),
        JSON.stringify({ id: `junk-${dirty}`, name: 'junk', kind: 'x', image: 'not base64 at all' }),
        JSON.stringify({ id: `num-${dirty}`, name: 'num', kind: 'x', image: 12 }),
      ];
      const out: string[] = [];
      await e.import('images', [lines.join('\n')], { dirtyValues: dirty, returnId: true }, (l) => void out.push(l));
      const results = out.map((l) => JSON.parse(l));
      expect(results.map((r) => r.success), dirty).toEqual([true, false, false, false]);
      expect(results[1].error).toBe('field `image` is a GIF image; only BMP, JPEG and PNG images are accepted');
      expect(results[2].error).toMatch(/^field `image` is not valid Base64: character " " at position 3$/);
      expect(results[3].error).toBe('field `image` must be a Base64-encoded BMP, JPEG or PNG image, got number 12');
      await expect(e.writeDocument('images', { name: 'one', kind: 'x', image: 'AAAA' }, { dirtyValues: dirty })).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/^field `image` is not a BMP, JPEG or PNG image/) });
    }
    expect(() => e.getDocument('images', 'gif-drop')).toThrow(/not found/);
  });

  it('fails the document whose image cannot be decoded when it is embedded, and keeps the rest of the batch', async () => {
    const bytes = pngBytes(32, 32, (x, y) => [x * 8, y * 8, 0]);
    const lines = [
      JSON.stringify({ id: 'cut', name: 'cut', kind: 'x', image: bytes.subarray(0, bytes.length - 30).toString('base64') }),
      JSON.stringify({ id: 'fine', name: 'fine', kind: 'x', image: jpg(BLUE) }),
    ];
    const out: string[] = [];
    await e.import('images', [lines.join('\n')], {}, (l) => void out.push(l));
    expect(JSON.parse(out[0]!)).toMatchObject({ success: false, error: expect.stringMatching(/^field `image` is a PNG image that cannot be decoded/) });
    expect(JSON.parse(out[1]!)).toEqual({ success: true });
    expect(() => e.getDocument('images', 'cut')).toThrow(/not found/);
  });

  it('with store: false is used for the embedding and never written, returned, exported or found in the data directory', async () => {
    const marker = png(YELLOW, 13, 11);
    const created = await e.writeDocument('images', { id: 'secret', name: 'sun', kind: 'star', image: marker });
    expect(created.image).toBeUndefined();
    expect((created.embedding as number[]).length).toBe(8);
    const got = e.getDocument('images', 'secret');
    expect(got.image).toBeUndefined();
    expect(got.embedding).toHaveLength(8);
    const line = [...e.exportLines('images')].find((l) => l.includes('"secret"'))!;
    expect(line).not.toContain(marker.slice(0, 40));
    const hit = (await e.search('images', { q: 'sun', query_by: 'name' })).hits![0]!;
    expect(hit.document.image).toBeUndefined();
    // and an import of lines (the path that stores lines as they arrived) drops it too
    await e.import('images', [JSON.stringify({ id: 'secret2', name: 'moon', kind: 'star', image: marker })], {}, () => undefined);
    await e.idle();
    const raw = fs.readFileSync(path.join(e.dir, 'data.mdb'));
    expect(raw.includes(Buffer.from(marker.slice(0, 60)))).toBe(false);
    // store: true keeps it
    await e.writeDocument('stored', { id: 'kept', name: 'sun', kind: 'star', image: marker });
    expect(e.getDocument('stored', 'kept').image).toBe(marker);
  });

  it('an update without the unstored image keeps its embedding; a new image replaces it', async () => {
    await e.writeDocument('images', { id: 'u', name: 'before', kind: 'x', image: png(RED) });
    const before = e.getDocument('images', 'u').embedding as number[];
    await e.updateDocument('images', 'u', { name: 'after' });
    const kept = e.getDocument('images', 'u');
    expect(kept.name).toBe('after');
    expect(kept.embedding).toEqual(before);
    await e.updateDocument('images', 'u', { image: png(GREEN) });
    expect(e.getDocument('images', 'u').embedding).not.toEqual(before);
    await expect(e.writeDocument('images', { id: 'u', name: 'again', kind: 'x' }, { action: 'upsert' })).rejects.toThrow('Field `image` has been declared in the schema, but is not found in the document.');
  });

  it('a collection with a required unstored image takes new fields, but not a new required unstored image', async () => {
    await e.createCollection({ ...IMAGES_SCHEMA(), name: 'altered' });
    await e.writeDocument('altered', { id: 'a1', name: 'cherry', kind: 'fruit', image: png(RED) });
    const before = e.getDocument('altered', 'a1').embedding;
    await e.updateCollection('altered', { fields: [{ name: 'price', type: 'int32', optional: true }] });
    expect(e.getDocument('altered', 'a1')).toEqual({ id: 'a1', name: 'cherry', kind: 'fruit', embedding: before });
    expect((await e.search('altered', { q: 'cherry', query_by: 'name' })).found).toBe(1);
    await expect(e.updateCollection('altered', { fields: [{ name: 'thumb', type: 'image', store: false }] })).rejects.toMatchObject({
      status: 400,
      message: 'document `a1` does not fit the new schema: field `thumb` is required by the schema but missing from the document',
    });
    await e.updateCollection('altered', { fields: [{ name: 'thumb', type: 'image', store: false, optional: true }] });
  });

  it('refuses store: false on a nested image field or a name pattern, which could not be left out', async () => {
    for (const name of ['pics.thumb', 'thumb_.*']) {
      await expect(e.createCollection({ name: 'nested', enable_nested_fields: true, fields: [{ name, type: 'image', store: false }] })).rejects.toThrow(
        /`store: false` is only allowed on a top-level image field named in full/,
      );
    }
  });

  it('cannot feed an embedding field whose model embeds only text', async () => {
    const dir = e.dir;
    fs.cpSync(path.join(ROOT, 'fixtures', 'models', 'tiny-bert'), path.join(dir, 'models', 'bert'), { recursive: true });
    await expect(e.createCollection({ ...IMAGES_SCHEMA('bert'), name: 'wrong' })).rejects.toThrow(
      /field `embedding`: `embed.from` names the image field `image`, but model `bert` embeds only text; use an image-text model such as `ts\/clip-vit-b-p32`/,
    );
  });

  it('mixing text and image sources gives the normalised mean of their vectors', async () => {
    await e.createCollection({
      name: 'mixed',
      fields: [
        { name: 'caption', type: 'string' },
        { name: 'image', type: 'image', store: false },
        { name: 'embedding', type: 'float[]', embed: { from: ['caption', 'image'], model_config: { model_name: 'clip' } } },
      ],
    });
    await e.writeDocument('mixed', { id: 'm', caption: 'green', image: png(RED) });
    const got = e.getDocument('mixed', 'm').embedding as number[];
    const model = await loadEmbedder({ model_name: 'clip' }, { dataDir: e.dir });
    const [t] = await model.embed(['green'], { purpose: 'index' });
    const [i] = (await model.embedImages!([png(RED)])) as Float32Array[];
    const sum = Array.from(t!, (x, k) => x + i![k]!);
    const norm = Math.hypot(...sum);
    got.forEach((x, k) => expect(x).toBeCloseTo(sum[k]! / norm, 5));
  });

  it('are embedded in batches, several images per inference call', async () => {
    await e.createCollection({ ...IMAGES_SCHEMA(), name: 'many' });
    const before = { ...imagePreparer().counts };
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ id: `m${i}`, name: `n${i}`, kind: 'k', image: png([i * 6, 255 - i * 6, 0], 8 + i, 8) }));
    const out: string[] = [];
    await e.import('many', [lines.join('\n')], { batchSize: 40 }, (l) => void out.push(l));
    expect(out.every((l) => l === '{"success":true}')).toBe(true);
    const calls = imagePreparer().counts.worker + imagePreparer().counts.inline - before.worker - before.inline;
    expect(calls).toBe(Math.ceil(40 / IMAGE_DEFAULTS.batchSize));
  });
});

describe('image search over HTTP with the typesense client', () => {
  const ADMIN = 'image-key';
  let repo: Repository;
  let server: RunningServer;
  let client: Client;

  beforeAll(async () => {
    repo = new Repository();
    const base = await repo.start();
    server = await startServer({ dataDir: dataDirPath(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline', modelRepositoryUrl: base } });
    client = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: ADMIN, connectionTimeoutSeconds: 5, logLevel: 'silent' });
  });
  afterAll(async () => {
    await server?.stop();
    await repo?.stop();
  });

  it('downloads ts/clip-vit-b-p32 once, checked, when the collection is created', async () => {
    const created = await client.collections().create(IMAGES_SCHEMA('ts/clip-vit-b-p32') as never);
    expect(created.fields.find((f) => f.name === 'embedding')).toMatchObject({ num_dim: 8 });
    expect(repo.requests).toEqual(['/public/clip-vit-b-p32/config.json', '/public/clip-vit-b-p32/model.onnx', '/public/clip-vit-b-p32/vocab.txt']);
    const results = await client.collections('images').documents().import(PICTURES, { action: 'create' });
    expect(results.every((r) => r.success)).toBe(true);
  });

  it('finds pictures by a description of what is in them (multi_search and GET)', async () => {
    const { results } = (await client.multiSearch.perform({ searches: [{ collection: 'images', q: 'a photo of something red', query_by: 'embedding', exclude_fields: 'embedding' }] } as never)) as unknown as { results: unknown[] };
    const r = results[0] as { hits: Array<{ document: Record<string, unknown>; vector_distance: number }> };
    expect(r.hits.slice(0, 2).map((h) => h.document.id).sort()).toEqual(['r1', 'r2']);
    expect(r.hits[0]!.vector_distance).toBeLessThan(0.05);
    expect(r.hits[0]!.document.image).toBeUndefined();
    const green = await client.collections('images').documents().search({ q: 'green', query_by: 'embedding', per_page: 2 });
    expect(green.hits!.map((h) => (h.document as { id: string }).id).sort()).toEqual(['g1', 'g2']);
  });

  it('finds similar pictures to a stored one, without the stored one', async () => {
    const r = await client.collections('images').documents().search({ q: '*', vector_query: 'embedding:([], id: r1)', per_page: 3 });
    const ids = r.hits!.map((h) => (h.document as { id: string }).id);
    expect(ids[0]).toBe('r2');
    expect(ids).not.toContain('r1');
  });

  it('mixes keywords and pictures (hybrid) and filters them', async () => {
    const r = await client.collections('images').documents().search({ q: 'red tractor', query_by: 'name,embedding', filter_by: 'kind:=vehicle' });
    const ids = r.hits!.map((h) => (h.document as { id: string }).id);
    expect(ids.sort()).toEqual(['g2', 'r2']); // the keyword match and the red picture; fruit filtered out
    const filtered = await client.collections('images').documents().search({ q: 'red', query_by: 'embedding', filter_by: 'kind:=fruit', per_page: 1 });
    expect((filtered.hits![0]!.document as { id: string }).id).toBe('r1');
  });

  it('answers a bad image with 400 and its message, and an import line with its own error', async () => {
    await expect(client.collections('images').documents().create({ id: 'bad', name: 'x', kind: 'x', image: 'R0lGODlhAQABAAAAACw=' })).rejects.toMatchObject({
      httpStatus: 400,
      message: expect.stringMatching(/field `image` is a GIF image; only BMP, JPEG and PNG images are accepted/),
    });
    const huge = pngBytes(1, 1, solid(RED));
    huge.writeUInt32BE(100_000, 16);
    huge.writeUInt32BE(1000, 20);
    const res = await client.collections('images').documents().import([{ id: 'huge', name: 'x', kind: 'x', image: huge.toString('base64') }], { action: 'create' }).catch((e: { importResults: unknown[] }) => e.importResults);
    expect((res as Array<{ success: boolean; error: string }>)[0]).toMatchObject({ success: false, error: expect.stringMatching(/100000 x 1000 pixels \(100\.0 megapixels\); images may have at most 25 megapixels/) });
  });
});
