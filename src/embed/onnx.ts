/**
 * Local ONNX embedding models: a directory with `model.onnx`, a vocabulary and `config.json`.
 *
 * config.json keys read:
 *   model_type       'bert' (also 'distilbert': the same WordPiece tokenizer) or 'xlm_roberta'
 *   vocab_file_name  the vocabulary file in the same directory (vocab.txt / sentencepiece.bpe.model)
 *   max_seq_length   optional; longest token sequence (else model_max_length, else 512)
 *   do_lower_case    optional, bert only; default: lower-case when the vocabulary is uncased
 *   indexing_prefix, query_prefix   optional defaults; a field's model_config overrides them
 *
 * Inference: int64 (or int32, as the model declares) `input_ids` and `attention_mask`, plus
 * all-zero `token_type_ids` when the model declares that input; the first output is the last
 * hidden state [batch, sequence, hidden], mean-pooled over the attention mask and
 * L2-normalised (a [batch, hidden] output is taken as already pooled).
 *
 * Texts of a call are sorted by token count and run in batches, so that padding stays small;
 * results come back in the caller's order.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { EMBED_DEFAULTS } from '../defaults.js';
import { parseVocabTxt, WordPieceTokenizer } from './tokenizers/wordpiece.js';
import { parseSentencePieceModelAsync, XlmRobertaTokenizer } from './tokenizers/sentencepiece.js';
import type { SubwordTokenizer } from './tokenizers/tokenizer.js';
import { EmbeddingError, type EmbedOptions, type TextModel } from './types.js';
import { InferenceWorker, type TensorInfo } from './worker.js';

/** `clip` directories are image-text models, loaded by clip.ts; the others are text models loaded here. */
export const SUPPORTED_MODEL_TYPES = ['bert', 'distilbert', 'xlm_roberta', 'clip'] as const;

/** A model directory's config.json, as far as Fathom reads it. */
export interface LocalModelConfig {
  model_type: string;
  vocab_file_name: string;
  max_seq_length?: number;
  model_max_length?: number;
  do_lower_case?: boolean;
  indexing_prefix?: string;
  query_prefix?: string;
  [k: string]: unknown;
}

/** A problem with the model's files: reported as a schema error naming the directory. */
export class ModelFilesError extends Error {}

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new ModelFilesError(err.code === 'ENOENT' ? `${file} does not exist` : `cannot read ${file}: ${err.message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ModelFilesError(`${file} is not valid JSON: ${(e as Error).message}`);
  }
}

/** Reads and checks `<dir>/config.json`. */
export async function readModelConfig(dir: string): Promise<LocalModelConfig> {
  const file = path.join(dir, 'config.json');
  const c = await readJson(file);
  if (typeof c !== 'object' || c === null || Array.isArray(c)) throw new ModelFilesError(`${file} must hold a JSON object`);
  const cfg = c as Record<string, unknown>;
  if (typeof cfg.model_type !== 'string') throw new ModelFilesError(`${file} needs a string \`model_type\` (${SUPPORTED_MODEL_TYPES.join(', ')})`);
  if (!(SUPPORTED_MODEL_TYPES as readonly string[]).includes(cfg.model_type)) {
    throw new ModelFilesError(`${file}: model_type \`${cfg.model_type}\` is not supported (supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`);
  }
  if (typeof cfg.vocab_file_name !== 'string' || cfg.vocab_file_name.length === 0) {
    throw new ModelFilesError(`${file} needs a string \`vocab_file_name\``);
  }
  if (cfg.vocab_file_name.includes('/') || cfg.vocab_file_name.includes('\\') || cfg.vocab_file_name.startsWith('..')) {
    throw new ModelFilesError(`${file}: vocab_file_name must be a file name in the model directory`);
  }
  for (const k of ['max_seq_length', 'model_max_length'] as const) {
    if (cfg[k] !== undefined && !(Number.isInteger(cfg[k]) && (cfg[k] as number) >= 3)) {
      throw new ModelFilesError(`${file}: \`${k}\` must be an integer of at least 3`);
    }
  }
  return cfg as LocalModelConfig;
}

/** Builds the tokenizer a model directory's config.json asks for. */
export async function loadTokenizer(dir: string, cfg: LocalModelConfig, maxTokens: number): Promise<SubwordTokenizer> {
  const vocabPath = path.join(dir, cfg.vocab_file_name);
  let data: Buffer;
  try {
    data = await fs.readFile(vocabPath);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new ModelFilesError(err.code === 'ENOENT' ? `the vocabulary file ${vocabPath} does not exist` : `cannot read ${vocabPath}: ${err.message}`);
  }
  const maxCharsPerToken = EMBED_DEFAULTS.localMaxCharsPerToken;
  try {
    if (cfg.model_type === 'xlm_roberta') {
      return await XlmRobertaTokenizer.create(await parseSentencePieceModelAsync(data), { maxTokens, maxCharsPerToken });
    }
    const lowercase = typeof cfg.do_lower_case === 'boolean' ? cfg.do_lower_case : undefined;
    return new WordPieceTokenizer(parseVocabTxt(data.toString('utf8')), { maxTokens, lowercase });
  } catch (e) {
    throw new ModelFilesError(`${vocabPath}: ${(e as Error).message}`);
  }
}

export class OnnxModel implements TextModel {
  private constructor(
    private vectorSize: number,
    private readonly tokenizer: SubwordTokenizer,
    private readonly worker: InferenceWorker,
    private readonly inputTypes: Record<string, string>,
    private readonly fixedSeq: number | undefined,
  ) {}

  get dims(): number {
    return this.vectorSize;
  }

  /** Set once the inference thread has died; the model must then be loaded again. */
  get failed(): Error | undefined {
    return this.worker.failed;
  }

  /**
   * Loads `<dir>/model.onnx` with its tokenizer in a worker thread. `label` names the model
   * in errors. Throws ModelFilesError for missing or malformed files.
   */
  static async load(dir: string, label: string): Promise<OnnxModel> {
    const cfg = await readModelConfig(dir);
    const modelPath = path.join(dir, 'model.onnx');
    const st = await fs.stat(modelPath).catch(() => undefined);
    if (!st || !st.isFile()) throw new ModelFilesError(`${modelPath} does not exist`);
    if (st.size === 0) throw new ModelFilesError(`${modelPath} is empty`);

    const worker = new InferenceWorker(label);
    try {
      let info;
      try {
        info = (await worker.call({ op: 'load-onnx', path: modelPath })).info!;
      } catch (e) {
        throw new ModelFilesError(`${modelPath} could not be loaded: ${(e as Error).message}`);
      }
      const inputs = info.inputs ?? [];
      const outputs = info.outputs ?? [];
      const byName = new Map(inputs.map((i) => [i.name, i]));
      const inputTypes: Record<string, string> = {};
      for (const name of ['input_ids', 'attention_mask', 'token_type_ids']) {
        const inp = byName.get(name);
        if (!inp) {
          if (name === 'token_type_ids') continue;
          throw new ModelFilesError(`${modelPath} has no \`${name}\` input (inputs: ${inputs.map((i) => i.name).join(', ')})`);
        }
        if (inp.type !== 'int64' && inp.type !== 'int32') throw new ModelFilesError(`${modelPath}: input \`${name}\` is ${inp.type}, expected int64`);
        inputTypes[name] = inp.type;
      }
      const extra = inputs.filter((i) => !(i.name in inputTypes));
      if (extra.length > 0) {
        throw new ModelFilesError(`${modelPath} needs inputs Fathom does not provide: ${extra.map((i) => i.name).join(', ')}`);
      }
      if (outputs.length === 0) throw new ModelFilesError(`${modelPath} has no outputs`);

      // A model exported with a fixed sequence length gets every batch padded to it.
      const seqDim = byName.get('input_ids')!.shape[1];
      const fixedSeq = typeof seqDim === 'number' && seqDim > 0 ? seqDim : undefined;
      const maxTokens = Math.min(cfg.max_seq_length ?? cfg.model_max_length ?? EMBED_DEFAULTS.localMaxTokens, fixedSeq ?? Infinity);
      const tokenizer = await loadTokenizer(dir, cfg, maxTokens);

      // Vector size: the output's last dimension when fixed, else one probe inference.
      const outShape = outputs[0]!.shape;
      const last = outShape[outShape.length - 1];
      const model = new OnnxModel(typeof last === 'number' && last > 0 ? last : 0, tokenizer, worker, inputTypes, fixedSeq);
      if (model.vectorSize === 0) {
        try {
          model.vectorSize = (await model.runBatch([tokenizer.encode('probe')]))[0]!.length;
        } catch (e) {
          throw new ModelFilesError(`${modelPath} failed on a test input: ${(e as Error).message}`);
        }
      }
      return model;
    } catch (e) {
      await worker.close();
      throw e;
    }
  }

  /** Token ids of one finished text (for tests and diagnostics). */
  encode(text: string): number[] {
    return this.tokenizer.encode(text);
  }

  /** Runs one padded batch in the worker. Hot path. */
  private async runBatch(seqs: number[][]): Promise<Float32Array[]> {
    const batch = seqs.length;
    let seq = this.fixedSeq ?? 0;
    if (seq === 0) for (const s of seqs) if (s.length > seq) seq = s.length;
    const ids = new Int32Array(batch * seq).fill(this.tokenizer.padId);
    const mask = new Int32Array(batch * seq);
    for (let b = 0; b < batch; b++) {
      const s = seqs[b]!;
      ids.set(s, b * seq);
      mask.fill(1, b * seq, b * seq + s.length);
    }
    const reply = await this.worker.call({ op: 'run-onnx', ids, mask, batch, seq, inputTypes: this.inputTypes }, [ids.buffer, mask.buffer]);
    const dims = reply.dims!;
    const all = reply.vectors!;
    const out: Float32Array[] = [];
    for (let b = 0; b < batch; b++) out.push(all.subarray(b * dims, (b + 1) * dims));
    return out;
  }

  async run(texts: string[], opts: EmbedOptions): Promise<Float32Array[]> {
    const batchSize = Math.max(1, Math.min(opts.batchSize ?? EMBED_DEFAULTS.localBatchSize, EMBED_DEFAULTS.localBatchSize));
    const seqs = texts.map((t) => this.tokenizer.encode(t));
    const order = seqs.map((_, i) => i).sort((a, b) => seqs[a]!.length - seqs[b]!.length);
    const out = new Array<Float32Array>(texts.length);
    try {
      for (let i = 0; i < order.length; i += batchSize) {
        const idx = order.slice(i, i + batchSize);
        const vecs = await this.runBatch(idx.map((j) => seqs[j]!));
        idx.forEach((j, k) => (out[j] = vecs[k]!));
      }
    } catch (e) {
      throw new EmbeddingError('INTERNAL', `inference failed: ${(e as Error).message}`);
    }
    return out;
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

export type { TensorInfo };
