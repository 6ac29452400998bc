/**
 * Voice search: `voice_query_model` checked at collection creation, `voice_query` audio
 * checked (16 kHz 16-bit mono PCM WAV) with precise 400s, transcribed into `q`, and the
 * transcription shown in `request_params.voice_query.transcribed_query`. Recognisers: a tiny
 * whisper-shaped ggml model served by a local model repository (whisper.cpp really runs
 * it), a local server speaking OpenAI's /v1/audio/transcriptions, and real speech made by
 * espeak-ng, transcribed offline by Debian's pocketsphinx.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'typesense';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VOICE_DEFAULTS } from '../src/defaults.js';
import type { Engine } from '../src/engine.js';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { closeRecognizers } from '../src/voice/index.js';
import { pocketsphinxMissing } from '../src/voice/pocketsphinx.js';
import { readWav, voiceBytes, wavFile } from '../src/voice/wav.js';
import { whisperAvailable, whisperModelFile } from '../src/voice/whisper.js';
import { cli, dataDirPath, openEngine } from './helpers.js';
// @ts-expect-error the fixture generator is plain JavaScript
import { tinyWhisperModel, SAYS } from '../fixtures/make-tiny-whisper.mjs';

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const ESPEAK = has('espeak-ng');
const SOX = has('sox');
const POCKETSPHINX_MISSING = pocketsphinxMissing({ hmm: VOICE_DEFAULTS.pocketsphinxHmm, lm: VOICE_DEFAULTS.pocketsphinxLm, dict: VOICE_DEFAULTS.pocketsphinxDict });
const WHISPER = whisperAvailable();
const SPEECH_MISSING = [!ESPEAK && 'espeak-ng', !SOX && 'sox', POCKETSPHINX_MISSING && 'pocketsphinx + pocketsphinx-en-us'].filter(Boolean);
if (SPEECH_MISSING.length) console.warn(`voice.test: SKIPPING the real-speech tests: ${SPEECH_MISSING.join(', ')} not installed (apt-get install espeak-ng sox pocketsphinx pocketsphinx-en-us; .ci/run does)`);
if (!WHISPER) console.warn(`voice.test: SKIPPING the whisper.cpp tests: the optional package @fugood/node-whisper-${process.platform}-${process.arch} is not installed`);

/** A tone: `seconds` of a 440 Hz sine at `amplitude` (0..1). */
function tone(seconds: number, amplitude = 0.5, rate: number = 16000): Int16Array {
  const out = new Int16Array(Math.round(seconds * rate));
  for (let i = 0; i < out.length; i++) out[i] = Math.round(amplitude * 32767 * Math.sin((2 * Math.PI * 440 * i) / rate));
  return out;
}

const b64 = (b: Buffer) => b.toString('base64');

/** `text` spoken by espeak-ng, as a 16 kHz mono 16-bit WAV (sox converts espeak's 22 kHz). */
function speak(text: string, extraSox: string[] = []): Buffer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-speech-'));
  try {
    const raw = path.join(dir, 'raw.wav');
    const out = path.join(dir, 'out.wav');
    const e = spawnSync('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', raw, text]);
    if (e.status !== 0) throw new Error(`espeak-ng failed: ${e.stderr}`);
    const s = spawnSync('sox', [raw, ...(extraSox.length ? extraSox : ['-r', '16000', '-c', '1', '-b', '16']), out]);
    if (s.status !== 0) throw new Error(`sox failed: ${s.stderr}`);
    return fs.readFileSync(out);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const PRODUCTS = [
  { id: 'p1', name: 'Wireless Headphones', brand: 'Sonic' },
  { id: 'p2', name: 'Wired Earbuds', brand: 'Sonic' },
  { id: 'p3', name: 'Bluetooth Speaker', brand: 'Boom' },
  { id: 'p4', name: 'Phone Charger', brand: 'Volt' },
  { id: 'p5', name: 'Wireless Keyboard', brand: 'Keys' },
];

const schema = (model: Record<string, unknown>, name = 'products') => ({ name, fields: [{ name: 'name', type: 'string' }, { name: 'brand', type: 'string', facet: true }], voice_query_model: model });

afterAll(async () => {
  await closeRecognizers();
});

describe('voice_query audio', () => {
  const ok = wavFile(tone(1));
  const msg = (b: Buffer | string) => {
    try {
      readWav(typeof b === 'string' ? voiceBytes(b) : b);
      return '';
    } catch (e) {
      return (e as Error).message;
    }
  };

  it('is read when it is 16 kHz 16-bit mono PCM WAV', () => {
    const pcm = readWav(ok);
    expect(pcm.samples.length).toBe(16000);
    expect(pcm.seconds).toBe(1);
    expect(pcm.peakDbfs).toBeCloseTo(-6, 0);
  });

  it('says what it found and what is needed when the format is wrong', () => {
    const need = 'it must be PCM, 16000 Hz, 16-bit, mono; convert it with `ffmpeg -i <file> -ar 16000 -ac 1 -c:a pcm_s16le voice_query.wav`';
    expect(msg(wavFile(tone(1, 0.5, 44100), 44100 as number))).toBe(`voice_query: the WAV audio is PCM, 44100 Hz, 16-bit, mono; ${need}`);
    expect(msg(wavFile(tone(1), 16000, 2))).toBe(`voice_query: the WAV audio is PCM, 16000 Hz, 16-bit, stereo; ${need}`);
    const float = wavFile(tone(1));
    float.writeUInt16LE(3, 20);
    float.writeUInt16LE(32, 34);
    expect(msg(float)).toBe(`voice_query: the WAV audio is IEEE float, 16000 Hz, 32-bit, mono; ${need}`);
    const eight = wavFile(tone(1));
    eight.writeUInt16LE(8, 34);
    expect(msg(eight)).toMatch(/PCM, 16000 Hz, 8-bit, mono; it must be/);
  });

  it('must be a WAV file: other audio and other bytes are named', () => {
    expect(msg(Buffer.concat([Buffer.from('ID3\x03\x00'), Buffer.alloc(100)]))).toMatch(/^voice_query: the audio must be a WAV file \(RIFF\/WAVE\), got MP3 audio; convert it with/);
    expect(msg(Buffer.from('OggS' + 'x'.repeat(60)))).toMatch(/got Ogg audio/);
    expect(msg(Buffer.from('hello there, not audio'))).toMatch(/got 22 bytes that are not a WAV file/);
    expect(msg('!!!')).toMatch(/^voice_query: the value is not valid Base64: character "!" at position 0/);
    expect(msg('')).toMatch(/^voice_query: the value is an empty string, not Base64-encoded WAV audio/);
  });

  it('refuses empty audio, audio that is too long, and silence', () => {
    expect(msg(wavFile(new Int16Array(0)))).toBe('voice_query: the WAV file holds no audio (its data chunk is empty)');
    expect(msg(ok.subarray(0, 36))).toBe('voice_query: the WAV file has no `data` chunk: it holds no audio');
    expect(msg(wavFile(tone(VOICE_DEFAULTS.maxSeconds + 1, 0.1)))).toBe(`voice_query: the audio is 31.0 s long; a voice query may be at most ${VOICE_DEFAULTS.maxSeconds} s`);
    expect(msg(wavFile(new Int16Array(32000)))).toBe('voice_query: the audio is silent (2.0 s, loudest sample zero; speech needs more than -50 dBFS)');
    expect(msg(wavFile(tone(2, 0.001)))).toMatch(/^voice_query: the audio is silent \(2\.0 s, loudest sample -60 dBFS/);
  });

  it('finds the data chunk after other chunks, and takes WAVE_FORMAT_EXTENSIBLE PCM', () => {
    const base = wavFile(tone(0.5));
    const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([5, 0, 0, 0]), Buffer.from('INFOx'), Buffer.alloc(1)]); // odd size, padded
    const withList = Buffer.concat([base.subarray(0, 36), list, base.subarray(36)]);
    expect(readWav(withList).samples.length).toBe(8000);
    const ext = Buffer.concat([base.subarray(0, 16), Buffer.from([40, 0, 0, 0, 0xfe, 0xff]), base.subarray(22, 36), Buffer.from([22, 0, 16, 0, 4, 0, 0, 0, 1, 0]), Buffer.alloc(14), base.subarray(36)]);
    expect(readWav(ext).samples.length).toBe(8000);
  });
});

describe('voice_query_model', () => {
  let e: Engine;
  beforeAll(() => {
    e = openEngine();
  });
  afterAll(async () => {
    await e.close();
  });

  it.each([
    [{ model_name: 'ts/nope' }, /`voice_query_model`: unknown model "ts\/nope"; use `ts\/whisper\/<model>`/],
    [{ model_name: 'openai/whisper-1' }, /`api_key` is required for OpenAI/],
    [{ model_name: 'pocketsphinx/fr-fr' }, /the built-in pocketsphinx model is `pocketsphinx\/en-us`/],
    [{ model_name: 'ts/whisper/base.en', api_key: 'x' }, /`api_key` applies to remote or pocketsphinx models only/],
    [{ model_name: 'ts/whisper/base.en', colour: 'x' }, /unknown attribute `colour`/],
    ['ts/whisper/base.en', /must be an object with a `model_name`/],
  ])('is refused at creation when it is malformed: %j', async (model, message) => {
    await expect(e.createCollection(schema(model as never))).rejects.toMatchObject({ status: 400, message: expect.stringMatching(message) });
  });

  it('is refused at creation when its files are missing', async () => {
    await expect(e.createCollection(schema({ model_name: 'pocketsphinx/en-us', hmm: '/nonexistent/hmm' }))).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/`voice_query_model`: cannot load `pocketsphinx\/en-us`: (pocketsphinx_batch is not installed|the hmm file \/nonexistent\/hmm does not exist)/),
    });
    expect(e.listCollections()).toEqual([]);
  });

  it('is needed to search by voice, and voice_query cannot come with q', async () => {
    await e.createCollection({ name: 'plain', fields: [{ name: 'name', type: 'string' }] });
    const audio = b64(wavFile(tone(1)));
    await expect(e.search('plain', { voice_query: audio, query_by: 'name' })).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/collection `plain` has no `voice_query_model`/) });
    await expect(e.search('plain', { voice_query: audio, q: 'x', query_by: 'name' })).rejects.toMatchObject({ status: 400, message: '`voice_query` and `q` cannot be sent together: the audio is transcribed into `q`' });
  });
});

/** A model repository serving the tiny whisper model as `whisper/base.en` (and nothing else). */
class Repository {
  server!: http.Server;
  requests: string[] = [];
  model = tinyWhisperModel() as Buffer;
  async start(): Promise<string> {
    const md5 = createHash('md5').update(this.model).digest('hex');
    this.server = http.createServer((req, res) => {
      this.requests.push(req.url!);
      if (req.url === '/public/audio_query/models.json') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ 'whisper/base.en.bin': md5, 'whisper/small.en.bin': '0'.repeat(32) }));
      if (req.url === '/public/audio_query/whisper/base.en.bin') return void res.writeHead(200, { 'content-length': String(this.model.length) }).end(this.model);
      if (req.url === '/public/audio_query/whisper/small.en.bin') return void res.writeHead(200).end(this.model); // fails its checksum
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/public/`;
  }
  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

describe.skipIf(!WHISPER)('ts/whisper models (whisper.cpp, a tiny model from a local repository)', () => {
  let repo: Repository;
  let server: RunningServer;
  let client: Client;
  let dataDir: string;

  beforeAll(async () => {
    repo = new Repository();
    const base = await repo.start();
    dataDir = dataDirPath();
    server = await startServer({ dataDir, apiKey: 'k', address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline', modelRepositoryUrl: base } });
    client = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: 'k', connectionTimeoutSeconds: 10, logLevel: 'silent' });
  });
  afterAll(async () => {
    await server?.stop();
    await repo?.stop();
  });

  it('downloads the model once, checked, when the collection is created', async () => {
    await client.collections().create(schema({ model_name: 'ts/whisper/base.en' }) as never);
    expect(repo.requests).toEqual(['/public/audio_query/models.json', '/public/audio_query/whisper/base.en.bin']);
    expect(fs.readFileSync(whisperModelFile(dataDir, 'base.en')).equals(repo.model)).toBe(true);
    await client.collections('products').documents().import(PRODUCTS, { action: 'create' });
    await client.collections().create(schema({ model_name: 'ts/whisper/base.en' }, 'again') as never);
    expect(repo.requests.filter((r) => r.endsWith('.bin'))).toHaveLength(1);
  });

  it('refuses a model the repository lacks, or whose download fails its checksum, and leaves nothing behind', async () => {
    await expect(client.collections().create(schema({ model_name: 'ts/whisper/large-v9' }, 'x') as never)).rejects.toMatchObject({
      httpStatus: 400,
      message: expect.stringMatching(/cannot download `ts\/whisper\/large-v9`: the model repository has no whisper model `large-v9` \(it has: base\.en, small\.en\)/),
    });
    await expect(client.collections().create(schema({ model_name: 'ts/whisper/small.en' }, 'y') as never)).rejects.toMatchObject({ httpStatus: 400, message: expect.stringMatching(/small\.en\.bin failed its checksum/) });
    expect(fs.readdirSync(path.dirname(whisperModelFile(dataDir, 'x'))).sort()).toEqual(['base.en.bin']);
  });

  it('transcribes a voice query into q and shows the transcription (multi_search)', async () => {
    const { results } = (await client.multiSearch.perform({ searches: [{ collection: 'products', query_by: 'name', voice_query: b64(wavFile(tone(2))) }] } as never)) as unknown as { results: Array<Record<string, any>> };
    const r = results[0]!;
    expect((r.request_params as Record<string, unknown>).voice_query).toEqual({ transcribed_query: SAYS.trim() });
    expect(r.request_params.q).toBe('wireless headphones');
    expect(r.hits[0].document.id).toBe('p1');
  });

  it('answers bad audio with 400 and its message, in its slot of a multi_search', async () => {
    const { results } = (await client.multiSearch.perform({
      searches: [
        { collection: 'products', query_by: 'name', voice_query: b64(wavFile(tone(1, 0.5, 8000), 8000 as number)) },
        { collection: 'products', query_by: 'name', voice_query: b64(wavFile(new Int16Array(16000))) },
        { collection: 'products', query_by: 'name', voice_query: b64(wavFile(tone(1))), q: 'phone' },
      ],
    } as never)) as unknown as { results: Array<{ code: number; error: string }> };
    expect(results.map((r) => r.code)).toEqual([400, 400, 400]);
    expect(results[0]!.error).toMatch(/the WAV audio is PCM, 8000 Hz, 16-bit, mono; it must be PCM, 16000 Hz/);
    expect(results[1]!.error).toMatch(/the audio is silent/);
    expect(results[2]!.error).toMatch(/cannot be sent together/);
  });
});

/** A local server speaking OpenAI's /v1/audio/transcriptions: checks the form, answers a fixed text. */
class FakeTranscriptions {
  server!: http.Server;
  seen: Array<{ auth?: string; model?: string; wav?: Buffer }> = [];
  answer: { status: number; body: unknown } = { status: 200, body: { text: ' Wireless headphones. ' } };
  url = '';
  async start() {
    this.server = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const form = await new Request('http://x', { method: 'POST', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks) }).formData();
      const file = form.get('file') as File | null;
      this.seen.push({ auth: req.headers.authorization, model: form.get('model') as string, wav: file ? Buffer.from(await file.arrayBuffer()) : undefined });
      if (req.url !== '/v1/audio/transcriptions') return void res.writeHead(404).end();
      res.writeHead(this.answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(this.answer.body));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  stop() {
    this.server.closeAllConnections();
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

describe('a remote transcription API (openai/<model>, or any url)', () => {
  let api: FakeTranscriptions;
  let e: Engine;
  beforeAll(async () => {
    api = new FakeTranscriptions();
    await api.start();
    e = openEngine();
  });
  afterAll(async () => {
    await e.close();
    await api.stop();
  });

  it('is probed at creation, sent the WAV with the model and key, and its text becomes q', async () => {
    const info = await e.createCollection(schema({ model_name: 'openai/whisper-1', api_key: 'sk-test-0123456789', url: api.url }));
    expect(info.voice_query_model).toEqual({ model_name: 'openai/whisper-1', api_key: 'sk-********', url: api.url });
    expect(api.seen).toHaveLength(1); // the probe
    await e.import('products', [PRODUCTS.map((p) => JSON.stringify(p)).join('\n')], {}, () => undefined);
    const audio = wavFile(tone(1.5));
    const r = await e.search('products', { voice_query: b64(audio), query_by: 'name' });
    expect((r.request_params as Record<string, unknown>).voice_query).toEqual({ transcribed_query: 'Wireless headphones.' });
    expect(r.hits![0]!.document.id).toBe('p1');
    const last = api.seen.at(-1)!;
    expect(last).toMatchObject({ auth: 'Bearer sk-test-0123456789', model: 'whisper-1' });
    expect(last.wav!.equals(audio)).toBe(true);
    expect(JSON.stringify(e.getCollection('products'))).not.toContain('0123456789');
  });

  it("is refused at creation when it refuses the key, with the provider's message", async () => {
    api.answer = { status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } };
    await expect(e.createCollection(schema({ model_name: 'openai/whisper-1', api_key: 'bad', url: api.url }, 'nokey'))).rejects.toMatchObject({
      status: 400,
      message: '`voice_query_model`: cannot load `openai/whisper-1`: transcription API error: Incorrect API key provided',
    });
  });

  it('turns a failure at query time into 400 (refused) or 503 (down), and nothing heard into 400', async () => {
    api.answer = { status: 400, body: { error: { message: 'Audio file might be corrupted or unsupported' } } };
    await expect(e.search('products', { voice_query: b64(wavFile(tone(1))), query_by: 'name' })).rejects.toMatchObject({ status: 400, message: 'voice_query: transcription API error: Audio file might be corrupted or unsupported' });
    api.answer = { status: 503, body: { error: { message: 'overloaded' } } };
    await expect(e.search('products', { voice_query: b64(wavFile(tone(1))), query_by: 'name' })).rejects.toMatchObject({ status: 503, message: expect.stringMatching(/the transcription failed: transcription API error: overloaded \(2 attempts\)/) });
    api.answer = { status: 200, body: { text: '  ' } };
    await expect(e.search('products', { voice_query: b64(wavFile(tone(1))), query_by: 'name' })).rejects.toMatchObject({ status: 400, message: 'voice_query: no speech was recognised in the 1.0 s of audio' });
  });
});

describe.skipIf(SPEECH_MISSING.length > 0)('real speech, offline: espeak-ng speaks, pocketsphinx/en-us transcribes', () => {
  let e: Engine;
  beforeAll(async () => {
    e = openEngine();
    await e.createCollection(schema({ model_name: 'pocketsphinx/en-us' }));
    await e.import('products', [PRODUCTS.map((p) => JSON.stringify(p)).join('\n')], {}, () => undefined);
  });
  afterAll(async () => {
    await e.close();
  });

  it('hears "wireless headphones" and finds the product', async () => {
    const r = await e.search('products', { voice_query: b64(speak('wireless headphones')), query_by: 'name' });
    expect((r.request_params as Record<string, unknown>).voice_query).toEqual({ transcribed_query: 'wireless headphones' });
    expect(r.hits![0]!.document.id).toBe('p1');
  });

  it('hears a second query with the same process; a half-right transcription still finds the product', async () => {
    // pocketsphinx hears "what keyboard" here (README: its accuracy limits); the keyword search still finds it
    const r = await e.search('products', { voice_query: b64(speak('wireless keyboard')), query_by: 'name' });
    expect(((r.request_params as Record<string, unknown>).voice_query as { transcribed_query: string }).transcribed_query).toMatch(/keyboard/);
    expect(r.hits![0]!.document.id).toBe('p5');
  });

  it('works from the CLI with --voice-query-file, and bad audio is one line and exit status 2 (a bad parameter)', async () => {
    const dir = e.dir;
    await e.close();
    const wav = path.join(os.tmpdir(), `fathom-voice-${process.pid}.wav`);
    fs.writeFileSync(wav, speak('wireless headphones'));
    try {
      const r = await cli(['search', 'products', '--query-by', 'name', '--voice-query-file', wav, '--json', '-d', dir]);
      expect(r.code, r.stderr).toBe(0);
      const res = JSON.parse(r.stdout);
      expect(res.request_params.voice_query).toEqual({ transcribed_query: 'wireless headphones' });
      expect(res.hits[0].document.id).toBe('p1');
      fs.writeFileSync(wav, wavFile(tone(1, 0.5, 22050), 22050 as number));
      const bad = await cli(['search', 'products', '--query-by', 'name', '--voice-query-file', wav, '-d', dir]);
      expect(bad.code).toBe(2);
      expect(bad.stderr.trim()).toMatch(/^error: voice_query: the WAV audio is PCM, 22050 Hz, 16-bit, mono; it must be PCM, 16000 Hz, 16-bit, mono/);
    } finally {
      fs.rmSync(wav, { force: true });
      e = openEngine(dir);
    }
  });

  it('refuses the same speech at 44.1 kHz stereo, saying what it is', async () => {
    await expect(e.search('products', { voice_query: b64(speak('wireless headphones', ['-r', '44100', '-c', '2', '-b', '16'])), query_by: 'name' })).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/the WAV audio is PCM, 44100 Hz, 16-bit, stereo; it must be PCM, 16000 Hz, 16-bit, mono/),
    });
  });

  it('answers noise in which it hears nothing with 400', async () => {
    const noise = new Int16Array(16000);
    let seed = 7;
    for (let i = 0; i < noise.length; i++) noise[i] = (((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 200) - 100) * 2; // quiet hiss, -44 dBFS
    const r = await e.search('products', { voice_query: b64(wavFile(noise)), query_by: 'name' }).then(
      (x) => (x.request_params as Record<string, unknown>).voice_query,
      (err: { status: number; message: string }) => err,
    );
    // pocketsphinx may hear a filler word in hiss; what must not happen is a 5xx
    if ('status' in (r as object)) expect(r).toMatchObject({ status: 400, message: expect.stringMatching(/no speech was recognised/) });
    else expect(r).toHaveProperty('transcribed_query');
  });
});
