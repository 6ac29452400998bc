/**
 * `voice_query` audio: Base64 of a WAV file holding 16 kHz, 16-bit, mono PCM.
 *
 * The RIFF chunks are walked (fmt may come after other chunks, chunks are padded to even
 * sizes, WAVE_FORMAT_EXTENSIBLE with a PCM sub-format counts as PCM), and every way the
 * audio can differ from what is needed gets a message saying what was found and what is
 * needed, with the ffmpeg line that converts it. Empty audio, audio longer than
 * VOICE_DEFAULTS.maxSeconds and silence (a peak below VOICE_DEFAULTS.silencePeakDbfs) are
 * refused before any recogniser sees them.
 */
import { VOICE_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { base64Bytes, ImageError } from '../embed/image/format.js';

export interface Pcm16 {
  /** Samples, 16 kHz mono. */
  samples: Int16Array;
  seconds: number;
  /** Loudest sample, dB relative to full scale (-Infinity for all zeros). */
  peakDbfs: number;
}

const CONVERT = 'convert it with `ffmpeg -i <file> -ar 16000 -ac 1 -c:a pcm_s16le voice_query.wav`';

function bad(message: string): never {
  throw new FathomError('BAD_PARAMETER', `voice_query: ${message}`);
}

const FORMAT_NAMES: Record<number, string> = { 1: 'PCM', 2: 'ADPCM', 3: 'IEEE float', 6: 'A-law', 7: 'mu-law', 0x11: 'IMA ADPCM', 0x55: 'MP3' };

/** The bytes of the Base64 text (a FathomError naming the problem otherwise). */
export function voiceBytes(value: unknown): Buffer {
  if (typeof value !== 'string') bad(`must be a string of Base64-encoded WAV audio, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
  try {
    return base64Bytes(value);
  } catch (e) {
    if (e instanceof ImageError) bad(`the value ${e.message.replace('a Base64-encoded image', 'Base64-encoded WAV audio')}`);
    throw e;
  }
}

/** Reads and checks a WAV file: RIFF/WAVE, PCM, 16 kHz, 16-bit, mono, not empty, not too long, not silent. */
export function readWav(b: Buffer): Pcm16 {
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WAVE') {
    const head = b.toString('latin1', 0, 4);
    const what =
      head === 'OggS' ? 'Ogg audio' : head === 'fLaC' ? 'FLAC audio' : head.startsWith('ID3') || (b[0] === 0xff && (b[1]! & 0xe0) === 0xe0) ? 'MP3 audio' : b.toString('latin1', 4, 8) === 'ftyp' ? 'MP4/M4A audio' : head === 'RIFF' ? `a RIFF file of type ${JSON.stringify(b.toString('latin1', 8, 12))}` : `${b.length} bytes that are not a WAV file`;
    bad(`the audio must be a WAV file (RIFF/WAVE), got ${what}; ${CONVERT}`);
  }
  let fmt: { format: number; channels: number; rate: number; bits: number } | undefined;
  let data: Buffer | undefined;
  for (let i = 12; i + 8 <= b.length; ) {
    const id = b.toString('latin1', i, i + 4);
    const size = b.readUInt32LE(i + 4);
    const body = b.subarray(i + 8, Math.min(b.length, i + 8 + size));
    if (id === 'fmt ') {
      if (body.length < 16) bad('the WAV file has a damaged `fmt ` chunk');
      let format = body.readUInt16LE(0);
      if (format === 0xfffe && body.length >= 26) format = body.readUInt16LE(24); // WAVE_FORMAT_EXTENSIBLE: the sub-format's first two bytes
      fmt = { format, channels: body.readUInt16LE(2), rate: body.readUInt32LE(4), bits: body.readUInt16LE(14) };
    } else if (id === 'data') {
      data = body;
      break;
    }
    i += 8 + size + (size & 1);
  }
  if (!fmt) bad('the WAV file has no `fmt ` chunk, so its format is unknown');
  if (!data) bad('the WAV file has no `data` chunk: it holds no audio');
  const found = `${FORMAT_NAMES[fmt.format] ?? `format ${fmt.format}`}, ${fmt.rate} Hz, ${fmt.bits}-bit, ${fmt.channels === 1 ? 'mono' : fmt.channels === 2 ? 'stereo' : `${fmt.channels} channels`}`;
  if (fmt.format !== 1 || fmt.rate !== VOICE_DEFAULTS.sampleRate || fmt.bits !== 16 || fmt.channels !== 1) {
    bad(`the WAV audio is ${found}; it must be PCM, 16000 Hz, 16-bit, mono; ${CONVERT}`);
  }
  const n = data.length >> 1;
  if (n === 0) bad('the WAV file holds no audio (its data chunk is empty)');
  const seconds = n / VOICE_DEFAULTS.sampleRate;
  if (seconds > VOICE_DEFAULTS.maxSeconds) bad(`the audio is ${seconds.toFixed(1)} s long; a voice query may be at most ${VOICE_DEFAULTS.maxSeconds} s`);
  const samples = new Int16Array(n);
  let peak = 0;
  for (let k = 0; k < n; k++) {
    const v = data.readInt16LE(k * 2);
    samples[k] = v;
    const a = v < 0 ? -v : v;
    if (a > peak) peak = a;
  }
  const peakDbfs = peak === 0 ? -Infinity : 20 * Math.log10(peak / 32768);
  if (peakDbfs < VOICE_DEFAULTS.silencePeakDbfs) {
    bad(`the audio is silent (${seconds.toFixed(1)} s, loudest sample ${peak === 0 ? 'zero' : `${peakDbfs.toFixed(0)} dBFS`}; speech needs more than ${VOICE_DEFAULTS.silencePeakDbfs} dBFS)`);
  }
  return { samples, seconds, peakDbfs };
}

/** A WAV file (44-byte header) of 16 kHz mono 16-bit samples: for recognisers that take files, and for tests. */
export function wavFile(samples: Int16Array, rate: number = VOICE_DEFAULTS.sampleRate, channels = 1, bits = 16): Buffer {
  const bytes = samples.length * 2;
  const b = Buffer.alloc(44 + bytes);
  b.write('RIFF', 0, 'latin1');
  b.writeUInt32LE(36 + bytes, 4);
  b.write('WAVE', 8, 'latin1');
  b.write('fmt ', 12, 'latin1');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(channels, 22);
  b.writeUInt32LE(rate, 24);
  b.writeUInt32LE((rate * channels * bits) / 8, 28);
  b.writeUInt16LE((channels * bits) / 8, 32);
  b.writeUInt16LE(bits, 34);
  b.write('data', 36, 'latin1');
  b.writeUInt32LE(bytes, 40);
  Buffer.from(samples.buffer, samples.byteOffset, bytes).copy(b, 44);
  return b;
}
