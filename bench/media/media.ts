/**
 * bench/media: image embedding throughput and voice query latency.
 *
 *   node bench/run.mjs media [--images 1000] [--size 320x240] [--voice-queries 50]
 *
 * Images: JPEG and PNG photos-like pictures (gradients and noise, `--size`), imported into a
 * collection whose `store: false` image feeds the tiny CLIP fixture (so the time is Fathom's:
 * decoding, CLIP preprocessing, batching, the import; a real ViT-B/32 adds ~4 GFLOPs an image),
 * with the image worker (as `fathom` runs) and inline; decoding + preprocessing alone too.
 *
 * Voice: espeak-ng phrases (16 kHz mono), transcribed by pocketsphinx/en-us: real-time factor
 * (seconds of audio per second of transcription) and exact-match accuracy; then voice
 * queries of a 2-second utterance through Engine.search (WAV check, transcription, search),
 * p50 / p99. The same with the tiny whisper-shaped model measures the whisper.cpp host's own
 * cost (a real model's inference is not measured: no weights can be downloaded here).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { fileURLToPath } from 'node:url';
import { ROOT, arg, percentile, table, tmpdir } from '../common.js';
import { Engine } from '../../src/engine.js';
import { closeEmbedders } from '../../src/embed/index.js';
import { prepareImages } from '../../src/embed/image/decode.js';
import { closeRecognizers, loadRecognizer } from '../../src/voice/index.js';
import { wavFile } from '../../src/voice/wav.js';
// @ts-expect-error plain JavaScript
import { tinyWhisperModel } from '../../fixtures/make-tiny-whisper.mjs';

const N_IMAGES = Number(arg('images', '1000'));
const [W, H] = (arg('size', '320x240') as string).split('x').map(Number) as [number, number];
const N_VOICE = Number(arg('voice-queries', '50'));

// ---------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------

/** A photo-like picture: a colour gradient with noise (so JPEG and PNG have real work). */
function picture(i: number, format: 'jpeg' | 'png'): string {
  const data = Buffer.alloc(W * H * 4);
  let seed = i * 7919 + 1;
  const base = [(i * 37) % 256, (i * 91) % 256, (i * 53) % 256];
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const n = (seed % 32) - 16;
      const o = (y * W + x) * 4;
      data[o] = Math.max(0, Math.min(255, base[0]! + (x * 128) / W + n));
      data[o + 1] = Math.max(0, Math.min(255, base[1]! + (y * 128) / H + n));
      data[o + 2] = Math.max(0, Math.min(255, base[2]! + n));
      data[o + 3] = 255;
    }
  }
  if (format === 'jpeg') return jpeg.encode({ width: W, height: H, data }, 85).data.toString('base64');
  const png = new PNG({ width: W, height: H });
  data.copy(png.data);
  return PNG.sync.write(png).toString('base64');
}

console.log(`making ${N_IMAGES} pictures of ${W} x ${H} (half JPEG, half PNG) ...`);
const pictures = Array.from({ length: N_IMAGES }, (_, i) => picture(i, i % 2 ? 'png' : 'jpeg'));
const meanKb = pictures.reduce((s, p) => s + (p.length * 3) / 4, 0) / N_IMAGES / 1024;

// the image worker beside the bundled benchmark, where `new URL('./image-worker.js', import.meta.url)` finds it
const here = path.dirname(fileURLToPath(import.meta.url));
await build({ entryPoints: [path.join(ROOT, 'src/embed/image/image-worker.ts')], bundle: true, platform: 'node', format: 'esm', packages: 'external', outfile: path.join(here, 'image-worker.js'), logLevel: 'warning', banner: { js: "import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url);" } });

const imageRows: (string | number)[][] = [];
{
  const spec = { size: 224, mean: [0.48145466, 0.4578275, 0.40821073], std: [0.26862954, 0.26130258, 0.27577711] };
  for (const format of ['jpeg', 'png'] as const) {
    const some = pictures.filter((_, i) => (i % 2 ? 'png' : 'jpeg') === format).slice(0, 200);
    const t = performance.now();
    for (let i = 0; i < some.length; i += 16) prepareImages(some.slice(i, i + 16), spec);
    const s = (performance.now() - t) / 1000;
    imageRows.push([`decode + CLIP preprocess (224 px), ${format.toUpperCase()}, one thread`, `${Math.round(some.length / s)} images/s`, `${((s / some.length) * 1000).toFixed(1)} ms an image`]);
  }
}

async function importImages(viaWorker: boolean): Promise<number> {
  const work = tmpdir('fathom-bench-media-');
  const dir = path.join(work, 'data');
  fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'fixtures', 'models', 'tiny-clip'), path.join(dir, 'models', 'clip'), { recursive: true });
  // the shared preparer uses the worker when its script is there; inline otherwise
  const workerFile = path.join(here, 'image-worker.js');
  const hidden = workerFile + '.off';
  if (!viaWorker) fs.renameSync(workerFile, hidden);
  const e = Engine.open(dir, { merges: 'inline' });
  try {
    await e.createCollection({
      name: 'images',
      fields: [
        { name: 'name', type: 'string' },
        { name: 'image', type: 'image', store: false },
        { name: 'embedding', type: 'float[]', embed: { from: ['image'], model_config: { model_name: 'clip' } } },
      ],
    });
    const lines = pictures.map((p, i) => JSON.stringify({ id: `i${i}`, name: `picture ${i}`, image: p })).join('\n');
    const t = performance.now();
    let failed = 0;
    await e.import('images', [Buffer.from(lines)], { batchSize: 40 }, (_l, ok) => void (ok || failed++));
    const s = (performance.now() - t) / 1000;
    if (failed) throw new Error(`${failed} images failed`);
    return N_IMAGES / s;
  } finally {
    await e.close();
    await closeEmbedders();
    if (!viaWorker) fs.renameSync(hidden, workerFile);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

for (const viaWorker of [true, false]) {
  const rate = await importImages(viaWorker);
  imageRows.push([`import with the tiny CLIP model (batch_size 40), ${viaWorker ? 'image worker thread' : 'inline'}`, `${Math.round(rate)} images/s`, `${(1000 / rate).toFixed(1)} ms an image`]);
}
console.log(`\nImages: ${N_IMAGES} of ${W} x ${H}, ${meanKb.toFixed(0)} KB on average, ${os.cpus().length} cores\n`);
console.log(table(['what', 'rate', 'time'], imageRows));

// ---------------------------------------------------------------------------
// Voice
// ---------------------------------------------------------------------------

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
if (!has('espeak-ng') || !has('sox') || !has('pocketsphinx_batch')) {
  console.log('\nVoice: SKIPPED (needs espeak-ng, sox, pocketsphinx, pocketsphinx-en-us)');
  process.exit(0);
}

function speak(text: string): Int16Array {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-bench-speech-'));
  try {
    spawnSync('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', path.join(dir, 'a.wav'), text]);
    spawnSync('sox', [path.join(dir, 'a.wav'), '-r', '16000', '-c', '1', '-b', '16', path.join(dir, 'b.wav')]);
    const b = fs.readFileSync(path.join(dir, 'b.wav')).subarray(44);
    return new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + (b.length & ~1)));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const PHRASES = ['wireless headphones', 'wireless keyboard', 'phone charger', 'bluetooth speaker', 'wired earbuds', 'coffee maker', 'running shoes', 'kitchen table', 'laptop stand', 'red dress', 'camera lens', 'water bottle', 'office chair', 'desk lamp', 'winter jacket', 'cheap flights to paris', 'how to bake bread', 'the weather tomorrow', 'open source search engine', 'a new pair of glasses'];
const voiceRows: (string | number)[][] = [];
const recognizer = await loadRecognizer({ model_name: 'pocketsphinx/en-us' }, { dataDir: tmpdir('fathom-bench-voice-') });
let audioS = 0;
let busyS = 0;
let exact = 0;
const heard: string[] = [];
for (const p of PHRASES) {
  const pcm = speak(p);
  const t = performance.now();
  const text = await recognizer.transcribe(pcm);
  busyS += (performance.now() - t) / 1000;
  audioS += pcm.length / 16000;
  if (text === p) exact++;
  heard.push(`${p} -> ${text || '(nothing)'}`);
}
voiceRows.push(['pocketsphinx/en-us, 20 espeak-ng phrases', `real-time factor ${(audioS / busyS).toFixed(1)}x (${audioS.toFixed(1)} s of audio in ${busyS.toFixed(1)} s)`, `${exact}/${PHRASES.length} transcribed exactly`]);

/** "wireless headphones" padded with silence to exactly 2.0 s. */
const utterance = (() => {
  const s = speak('wireless headphones');
  const out = new Int16Array(32000);
  out.set(s.subarray(0, 32000), Math.max(0, Math.floor((32000 - s.length) / 2)));
  return Buffer.from(wavFile(out)).toString('base64');
})();

async function voiceLatency(model: Record<string, unknown>, env: { modelRepositoryUrl?: string } = {}): Promise<number[]> {
  const work = tmpdir('fathom-bench-voice-');
  const e = Engine.open(path.join(work, 'data'), { merges: 'inline', ...env });
  try {
    await e.createCollection({ name: 'products', fields: [{ name: 'name', type: 'string' }], voice_query_model: model });
    await e.import('products', [['Wireless Headphones', 'Wired Earbuds', 'Bluetooth Speaker', 'Phone Charger'].map((n, i) => JSON.stringify({ id: `p${i}`, name: n })).join('\n')], {}, () => undefined);
    for (let i = 0; i < 3; i++) await e.search('products', { voice_query: utterance, query_by: 'name' });
    const lat: number[] = [];
    for (let i = 0; i < N_VOICE; i++) {
      const t = performance.now();
      const r = await e.search('products', { voice_query: utterance, query_by: 'name' });
      lat.push(performance.now() - t);
      if (i === 0 && r.hits?.[0]?.document.id !== 'p0') throw new Error(`the voice query found ${JSON.stringify(r.hits?.[0]?.document)}`);
    }
    return lat.sort((a, b) => a - b);
  } finally {
    await e.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

const ps = await voiceLatency({ model_name: 'pocketsphinx/en-us' });
voiceRows.push([`voice query, 2.0 s utterance, pocketsphinx/en-us (${N_VOICE} queries)`, `p50 ${percentile(ps, 50).toFixed(0)} ms`, `p99 ${percentile(ps, 99).toFixed(0)} ms`]);

// the whisper.cpp path, with the tiny whisper-shaped model from a local repository
const model = tinyWhisperModel() as Buffer;
const server = http.createServer((req, res) => {
  if (req.url === '/r/audio_query/models.json') return void res.end(JSON.stringify({ 'whisper/base.en.bin': createHash('md5').update(model).digest('hex') }));
  if (req.url === '/r/audio_query/whisper/base.en.bin') return void res.end(model);
  res.writeHead(404).end();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
try {
  const wh = await voiceLatency({ model_name: 'ts/whisper/base.en' }, { modelRepositoryUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/r/` });
  voiceRows.push([`voice query, 2.0 s utterance, whisper.cpp host with the tiny model (${N_VOICE} queries: the pipeline's cost, not a real model's)`, `p50 ${percentile(wh, 50).toFixed(0)} ms`, `p99 ${percentile(wh, 99).toFixed(0)} ms`]);
} catch (e) {
  voiceRows.push(['whisper.cpp host', 'SKIPPED', (e as Error).message.slice(0, 80)]);
} finally {
  server.closeAllConnections();
  server.close();
}
await closeRecognizers();

console.log('\nVoice\n');
console.log(table(['what', 'figure', ''], voiceRows));
console.log('\npocketsphinx heard:\n  ' + heard.join('\n  '));
