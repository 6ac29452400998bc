/**
 * Image-text (CLIP-style) models: an image tower and a text tower that map images and
 * texts into one vector space. Documents' `image` fields are embedded by the image tower,
 * search text (`q`) by the text tower, so that a text finds the images it describes.
 *
 * A model directory (`ts/clip-vit-b-p32` downloaded from the repository, or your own in
 * `<data_dir>/models/<dir>/`):
 *
 *   config.json   model_type "clip"; vocab_file_name (CLIP's BPE merges file);
 *                 optional: image_model_file_name, text_model_file_name (default model.onnx
 *                 for both: one model holding both towers), image_size (224), image_mean,
 *                 image_std (OpenAI CLIP's), context_length (77), vocab_size (49408),
 *                 indexing_prefix / query_prefix (for the texts)
 *   model.onnx    both towers: inputs input_ids (int64 [batch, seq]), attention_mask
 *                 (optional), pixel_values (float32 [batch, 3, size, size]); outputs
 *                 text_embeds and image_embeds ([batch, dims]), as Hugging Face's CLIPModel
 *                 exports; or two files, a text tower (input_ids [+ attention_mask] -> its
 *                 `text_embeds` or first output) and an image tower (pixel_values -> its
 *                 `image_embeds` or first output)
 *
 * Inference runs in worker threads (worker.ts, one per model file); images are decoded and
 * preprocessed in the image worker (image/images.ts) and embedded IMAGE_DEFAULTS.batchSize
 * at a time, one session run per batch. Vectors are L2-normalised.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { EMBED_DEFAULTS, IMAGE_DEFAULTS } from '../defaults.js';
import { imagePreparer, type PreprocessSpec } from './image/images.js';
import { ModelFilesError } from './onnx.js';
import { ClipTokenizer } from './tokenizers/clip-bpe.js';
import { EmbeddingError, type EmbedOptions, type TextModel } from './types.js';
import { InferenceWorker, type TensorInfo } from './worker.js';

export interface ClipConfig {
  model_type: 'clip';
  vocab_file_name: string;
  image_model_file_name: string;
  text_model_file_name: string;
  image_size: number;
  image_mean: number[];
  image_std: number[];
  context_length: number;
  vocab_size: number;
}

function fileName(file: string, cfg: Record<string, unknown>, key: string, dflt?: string): string {
  const v = cfg[key] ?? dflt;
  if (typeof v !== 'string' || v.length === 0) throw new ModelFilesError(`${file} needs a string \`${key}\``);
  if (v.includes('/') || v.includes('\\') || v.startsWith('..')) throw new ModelFilesError(`${file}: \`${key}\` must be a file name in the model directory`);
  return v;
}

/** Reads a CLIP model directory's config.json (already known to say model_type "clip"), with defaults. */
export function clipConfig(file: string, cfg: Record<string, unknown>): ClipConfig {
  const int = (key: string, dflt: number, min: number): number => {
    const v = cfg[key] ?? dflt;
    if (!Number.isInteger(v) || (v as number) < min) throw new ModelFilesError(`${file}: \`${key}\` must be an integer of at least ${min}`);
    return v as number;
  };
  const triple = (key: string, dflt: readonly number[], positive: boolean): number[] => {
    const v = cfg[key] ?? dflt;
    if (!Array.isArray(v) || v.length !== 3 || !v.every((x) => typeof x === 'number' && Number.isFinite(x) && (!positive || x > 0))) {
      throw new ModelFilesError(`${file}: \`${key}\` must be three ${positive ? 'positive ' : ''}numbers (red, green, blue)`);
    }
    return v as number[];
  };
  return {
    model_type: 'clip',
    vocab_file_name: fileName(file, cfg, 'vocab_file_name'),
    image_model_file_name: fileName(file, cfg, 'image_model_file_name', 'model.onnx'),
    text_model_file_name: fileName(file, cfg, 'text_model_file_name', 'model.onnx'),
    image_size: int('image_size', IMAGE_DEFAULTS.clipImageSize, 1),
    image_mean: triple('image_mean', IMAGE_DEFAULTS.clipMean, false),
    image_std: triple('image_std', IMAGE_DEFAULTS.clipStd, true),
    context_length: int('context_length', IMAGE_DEFAULTS.clipContextLength, 3),
    vocab_size: int('vocab_size', IMAGE_DEFAULTS.clipVocabSize, 515),
  };
}

interface Tower {
  worker: InferenceWorker;
  file: string;
  inputs: Map<string, TensorInfo>;
  outputs: TensorInfo[];
  /** The output read: `text_embeds` / `image_embeds`, or a lone tower's first output. */
  output: string;
}

/** Loads one tower (or reuses `shared`'s session when both towers are in the same file). */
async function loadTower(dir: string, file: string, label: string, want: 'text' | 'image', shared?: Tower): Promise<Tower> {
  const modelPath = path.join(dir, file);
  let worker: InferenceWorker;
  let inputs: Map<string, TensorInfo>;
  let outputs: TensorInfo[];
  const own = !(shared && shared.file === file);
  if (!own) {
    worker = shared!.worker;
    inputs = shared!.inputs;
    outputs = shared!.outputs;
  } else {
    const st = await fs.stat(modelPath).catch(() => undefined);
    if (!st || !st.isFile()) throw new ModelFilesError(`${modelPath} does not exist`);
    worker = new InferenceWorker(label);
    try {
      const info = (await worker.call({ op: 'load-onnx', path: modelPath })).info!;
      inputs = new Map((info.inputs ?? []).map((i) => [i.name, i]));
      outputs = info.outputs ?? [];
    } catch (e) {
      await worker.close();
      throw new ModelFilesError(`${modelPath} could not be loaded: ${(e as Error).message}`);
    }
  }
  const need = want === 'text' ? 'input_ids' : 'pixel_values';
  const wantOut = want === 'text' ? 'text_embeds' : 'image_embeds';
  const fail = async (msg: string): Promise<never> => {
    if (own) await worker.close();
    throw new ModelFilesError(`${modelPath}: ${msg}`);
  };
  if (!inputs.has(need)) return fail(`the ${want} tower needs a \`${need}\` input (inputs: ${[...inputs.keys()].join(', ') || 'none'})`);
  const other = want === 'text' ? 'pixel_values' : 'input_ids';
  // a file holding both towers must name its outputs; a lone tower may have any one output
  const output = outputs.find((o) => o.name === wantOut)?.name ?? (inputs.has(other) ? undefined : outputs[0]?.name);
  if (!output) return fail(`the ${want} tower needs a \`${wantOut}\` output (outputs: ${outputs.map((o) => o.name).join(', ') || 'none'})`);
  return { worker, file, inputs, outputs, output };
}

type Feed = { type: string; data: Int32Array | Float32Array; dims: number[] };

export class ClipModel implements TextModel {
  private vectorSize = 0;

  private constructor(
    private readonly tokenizer: ClipTokenizer,
    private readonly text: Tower,
    private readonly image: Tower,
    private readonly spec: PreprocessSpec,
    private readonly fixedSeq: number | undefined,
  ) {}

  get dims(): number {
    return this.vectorSize;
  }

  /** Set once an inference thread has died; the model must then be loaded again. */
  get failed(): Error | undefined {
    return this.text.worker.failed ?? this.image.worker.failed;
  }

  /** Loads a CLIP model directory. ModelFilesError for missing or malformed files. */
  static async load(dir: string, rawConfig: Record<string, unknown>, label: string): Promise<ClipModel> {
    const cfgFile = path.join(dir, 'config.json');
    const cfg = clipConfig(cfgFile, rawConfig);
    const vocabPath = path.join(dir, cfg.vocab_file_name);
    let merges: string;
    try {
      merges = await fs.readFile(vocabPath, 'utf8');
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      throw new ModelFilesError(err.code === 'ENOENT' ? `the vocabulary file ${vocabPath} does not exist` : `cannot read ${vocabPath}: ${err.message}`);
    }
    let tokenizer: ClipTokenizer;
    try {
      tokenizer = new ClipTokenizer(merges, { vocabSize: cfg.vocab_size, contextLength: cfg.context_length });
    } catch (e) {
      throw new ModelFilesError(`${vocabPath}: ${(e as Error).message}`);
    }
    const text = await loadTower(dir, cfg.text_model_file_name, `${label} (text)`, 'text');
    let image: Tower;
    try {
      image = await loadTower(dir, cfg.image_model_file_name, `${label} (image)`, 'image', text);
    } catch (e) {
      await text.worker.close();
      throw e;
    }
    const close = async () => {
      await text.worker.close();
      if (image.worker !== text.worker) await image.worker.close();
    };
    const pix = image.inputs.get('pixel_values')!;
    for (const d of [2, 3]) {
      const s = pix.shape[d];
      if (typeof s === 'number' && s > 0 && s !== cfg.image_size) {
        await close();
        throw new ModelFilesError(`${path.join(dir, cfg.image_model_file_name)} takes ${s}-pixel images but config.json says image_size ${cfg.image_size}`);
      }
    }
    const seqDim = text.inputs.get('input_ids')!.shape[1];
    const fixedSeq = typeof seqDim === 'number' && seqDim > 0 ? seqDim : undefined;
    const model = new ClipModel(tokenizer, text, image, { size: cfg.image_size, mean: cfg.image_mean, std: cfg.image_std }, fixedSeq);
    try {
      // both towers once: they must agree on the dimension
      const [t] = await model.runTexts([tokenizer.encode('a photo')]);
      const [v] = await model.runPixels(new Float32Array(3 * cfg.image_size * cfg.image_size), 1);
      if (t!.length !== v!.length) throw new Error(`the text tower gives ${t!.length}-dimensional vectors and the image tower ${v!.length}-dimensional ones`);
      model.vectorSize = t!.length;
    } catch (e) {
      await close();
      throw new ModelFilesError(`${dir} failed on a test input: ${(e as Error).message}`);
    }
    return model;
  }

  /** Token ids of one text (for tests and diagnostics). */
  encode(text: string): number[] {
    return this.tokenizer.encode(text);
  }

  private dummyPixels(): Feed {
    const S = this.spec.size;
    return { type: 'float32', data: new Float32Array(3 * S * S), dims: [1, 3, S, S] };
  }

  private dummyText(): Record<string, Feed> {
    const ids = Int32Array.from([this.tokenizer.bosId, this.tokenizer.eosId]);
    const out: Record<string, Feed> = {};
    const seq = this.fixedSeq ?? 2;
    const padded = new Int32Array(seq).fill(this.tokenizer.eosId);
    padded.set(ids.subarray(0, seq));
    out.input_ids = { type: this.text.inputs.get('input_ids')!.type, data: padded, dims: [1, seq] };
    const m = this.text.inputs.get('attention_mask');
    if (m) out.attention_mask = { type: m.type, data: new Int32Array(seq).fill(1), dims: [1, seq] };
    return out;
  }

  /** One padded batch of token sequences through the text tower. */
  private async runTexts(seqs: number[][]): Promise<Float32Array[]> {
    const batch = seqs.length;
    let seq = this.fixedSeq ?? 0;
    if (seq === 0) for (const s of seqs) seq = Math.max(seq, s.length);
    const ids = new Int32Array(batch * seq).fill(this.tokenizer.eosId);
    const mask = new Int32Array(batch * seq);
    seqs.forEach((s, b) => {
      const n = Math.min(s.length, seq);
      ids.set(n < s.length ? s.slice(0, n) : s, b * seq);
      mask.fill(1, b * seq, b * seq + n);
    });
    const feeds: Record<string, Feed> = { input_ids: { type: this.text.inputs.get('input_ids')!.type, data: ids, dims: [batch, seq] } };
    const m = this.text.inputs.get('attention_mask');
    if (m) feeds.attention_mask = { type: m.type, data: mask, dims: [batch, seq] };
    if (this.text.inputs.has('pixel_values')) feeds.pixel_values = this.dummyPixels();
    return this.call(this.text, feeds, batch);
  }

  /** `count` preprocessed images through the image tower. */
  private runPixels(pixels: Float32Array, count: number): Promise<Float32Array[]> {
    const S = this.spec.size;
    const feeds: Record<string, Feed> = { pixel_values: { type: 'float32', data: pixels, dims: [count, 3, S, S] } };
    if (this.image.inputs.has('input_ids')) Object.assign(feeds, this.dummyText());
    return this.call(this.image, feeds, count);
  }

  private async call(tower: Tower, feeds: Record<string, Feed>, rows: number): Promise<Float32Array[]> {
    const transfer = Object.values(feeds).map((f) => f.data.buffer as ArrayBuffer);
    const reply = await tower.worker.call({ op: 'run-tower', feeds, output: tower.output }, transfer);
    const dims = reply.dims!;
    const all = reply.vectors!;
    if (all.length !== rows * dims) throw new Error(`the model gave ${all.length / dims} vectors for ${rows} inputs`);
    return Array.from({ length: rows }, (_, b) => all.subarray(b * dims, (b + 1) * dims));
  }

  /** Texts through the text tower, in batches sorted by length. */
  async run(texts: string[], opts: EmbedOptions): Promise<Float32Array[]> {
    const batchSize = Math.max(1, Math.min(opts.batchSize ?? EMBED_DEFAULTS.localBatchSize, EMBED_DEFAULTS.localBatchSize));
    const seqs = texts.map((t) => this.tokenizer.encode(t));
    const order = seqs.map((_, i) => i).sort((a, b) => seqs[a]!.length - seqs[b]!.length);
    const out = new Array<Float32Array>(texts.length);
    try {
      for (let i = 0; i < order.length; i += batchSize) {
        const idx = order.slice(i, i + batchSize);
        const vecs = await this.runTexts(idx.map((j) => seqs[j]!));
        idx.forEach((j, k) => (out[j] = vecs[k]!));
      }
    } catch (e) {
      throw new EmbeddingError('INTERNAL', `inference failed: ${(e as Error).message}`);
    }
    return out;
  }

  /**
   * Base64 images through the image tower: one vector per image, or an Error (BAD_DOCUMENT)
   * for an image that cannot be decoded. Batches are prepared in the image worker while
   * the previous one runs.
   */
  async runImages(images: string[]): Promise<Array<Float32Array | Error>> {
    const out = new Array<Float32Array | Error>(images.length);
    const size = IMAGE_DEFAULTS.batchSize;
    const preparer = imagePreparer();
    const per = 3 * this.spec.size * this.spec.size;
    // one batch is prepared ahead of the one running: enough to keep both threads busy, and
    // the pixels waiting stay bounded (a CLI import batch may hold a thousand images)
    const prepare = (from: number) => {
      const p = preparer.prepare(images.slice(from, from + size), this.spec);
      p.catch(() => undefined);
      return p;
    };
    let next = images.length > 0 ? prepare(0) : undefined;
    for (let from = 0; from < images.length; from += size) {
      const p = await next!;
      next = from + size < images.length ? prepare(from + size) : undefined;
      const n = p.pixels.length / per;
      let vecs: Float32Array[] = [];
      if (n > 0) {
        try {
          vecs = await this.runPixels(p.pixels, n);
        } catch (e) {
          throw new EmbeddingError('INTERNAL', `image inference failed: ${(e as Error).message}`);
        }
      }
      for (let k = 0; k < p.slot.length; k++) {
        const s = p.slot[k]!;
        out[from + k] = s >= 0 ? vecs[s]! : new ImageValueError(p.errors[k]!);
      }
    }
    return out;
  }

  async close(): Promise<void> {
    await this.text.worker.close();
    if (this.image.worker !== this.text.worker) await this.image.worker.close();
  }
}

/** An image value that could not be decoded; the message completes "field `x` ...". */
export class ImageValueError extends Error {}
