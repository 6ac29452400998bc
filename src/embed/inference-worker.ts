/**
 * The inference thread of a local model (driven by worker.ts through src/worker-client.ts).
 *
 * onnxruntime-node runs a model synchronously on the calling thread (its `run` only defers
 * to setImmediate), and so does the TensorFlow.js WASM backend behind `ts/use-lite`; model
 * loading is synchronous too. Each local model therefore lives in a thread of its own: the
 * main thread tokenises and sends token ids, this thread runs the model, pools, normalises
 * and transfers the vectors back.
 *
 * The packages are loaded by the absolute paths the main thread resolved (workerData), so
 * that this script runs the same wherever it was built to.
 *
 * Messages in:  { id, op: 'load-onnx', path }              out: { id, info: { inputs, outputs } }
 *               { id, op: 'run-onnx', ids, mask, batch, seq, inputTypes }   out: { id, vectors, dims }
 *               { id, op: 'run-tower', feeds: {name: {type, data, dims}}, output }   out: { id, vectors, dims }
 *               { id, op: 'load-use' }                      out: { id, info: { dims } }
 *               { id, op: 'embed-use', texts }              out: { id, vectors, dims }
 *               any failure                                 out: { id, error }
 */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import type * as Ort from 'onnxruntime-node';

/** Where the packages are (resolved by the main thread). */
export interface InferencePaths {
  ortPath: string;
  usePath: string;
  useModelPath: string;
}

export interface TensorInfo {
  name: string;
  /** 'int64', 'int32', 'float32', … or 'non-tensor'. */
  type: string;
  /** Fixed sizes as numbers, symbolic ones as their names. */
  shape: Array<number | string>;
}

export type IntType = 'int32' | 'int64';

export type InferenceRequest =
  | { op: 'load-onnx'; path: string }
  /** inputTypes: the model's element type ('int32' or 'int64') of input_ids, attention_mask and, when it has one, token_type_ids. */
  | { op: 'run-onnx'; ids: Int32Array; mask: Int32Array; batch: number; seq: number; inputTypes: Record<string, string> }
  /** feeds: per input, 'float32' or an integer type, its data and shape. */
  | { op: 'run-tower'; feeds: Record<string, { type: string; data: Float32Array | Int32Array; dims: number[] }>; output: string }
  | { op: 'load-use' }
  | { op: 'embed-use'; texts: string[] };

export interface InferenceReply {
  info?: { inputs?: TensorInfo[]; outputs?: TensorInfo[]; dims?: number };
  vectors?: Float32Array;
  dims?: number;
}

interface UseModel {
  embed(texts: string[]): Promise<number[][]>;
}

const load = createRequire(import.meta.url);
const paths = workerData as InferencePaths;
let session: Ort.InferenceSession | null = null;
let ort: typeof Ort | null = null;
let useModel: UseModel | null = null;

function normalizeRows(out: Float32Array, rows: number, dims: number): Float32Array {
  for (let r = 0; r < rows; r++) {
    let s = 0;
    const o = r * dims;
    for (let k = 0; k < dims; k++) s += out[o + k]! * out[o + k]!;
    if (s > 0) {
      const inv = 1 / Math.sqrt(s);
      for (let k = 0; k < dims; k++) out[o + k]! *= inv;
    }
  }
  return out;
}

/** Hot: the mean of the hidden states whose attention mask is 1, per sequence. */
function meanPool(hidden: Float32Array, batch: number, seq: number, dims: number, mask: Int32Array): Float32Array {
  const out = new Float32Array(batch * dims);
  for (let b = 0; b < batch; b++) {
    let count = 0;
    const o = b * dims;
    for (let t = 0; t < seq; t++) {
      if (!mask[b * seq + t]) continue;
      count++;
      const h = (b * seq + t) * dims;
      for (let k = 0; k < dims; k++) out[o + k]! += hidden[h + k]!;
    }
    if (count > 0) for (let k = 0; k < dims; k++) out[o + k]! /= count;
  }
  return out;
}

function meta(list: readonly Ort.InferenceSession.ValueMetadata[]): TensorInfo[] {
  return list.map((m) => ({
    name: m.name,
    type: m.isTensor ? m.type : 'non-tensor',
    shape: m.isTensor ? m.shape.map((d) => (typeof d === 'number' ? d : String(d))) : [],
  }));
}

function intTensor(type: IntType, values: ArrayLike<number>, dims: number[]): Ort.Tensor {
  if (type === 'int32') return new ort!.Tensor('int32', Int32Array.from(values), dims);
  const big = new BigInt64Array(values.length);
  for (let i = 0; i < values.length; i++) big[i] = BigInt(values[i]!);
  return new ort!.Tensor('int64', big, dims);
}

async function handle(msg: InferenceRequest): Promise<InferenceReply> {
  switch (msg.op) {
    case 'load-onnx': {
      ort = load(paths.ortPath) as typeof Ort;
      session = await ort.InferenceSession.create(msg.path, { logSeverityLevel: 4, graphOptimizationLevel: 'all' });
      return { info: { inputs: meta(session.inputMetadata), outputs: meta(session.outputMetadata) } };
    }
    case 'run-onnx': {
      const { batch, seq, ids, mask, inputTypes } = msg;
      const dims2 = [batch, seq];
      const feeds: Record<string, Ort.Tensor> = {
        input_ids: intTensor(inputTypes.input_ids as IntType, ids, dims2),
        attention_mask: intTensor(inputTypes.attention_mask as IntType, mask, dims2),
      };
      if (inputTypes.token_type_ids) feeds.token_type_ids = intTensor(inputTypes.token_type_ids as IntType, new Int32Array(batch * seq), dims2);
      const outputName = session!.outputNames[0]!;
      const result = await session!.run(feeds, [outputName]);
      const out = result[outputName]!;
      const data = out.data as Float32Array;
      let vectors: Float32Array;
      let dims: number;
      if (out.dims.length === 3) {
        dims = out.dims[2]!;
        vectors = meanPool(data, batch, out.dims[1]!, dims, mask);
      } else if (out.dims.length === 2) {
        dims = out.dims[1]!;
        vectors = Float32Array.from(data);
      } else {
        throw new Error(`the model output ${outputName} has shape [${out.dims.join(', ')}]; expected [batch, sequence, hidden] or [batch, hidden]`);
      }
      out.dispose?.();
      return { vectors: normalizeRows(vectors, batch, dims), dims };
    }
    case 'run-tower': {
      // a tower with named inputs and one [batch, dims] output (CLIP's image and text towers)
      const feeds: Record<string, Ort.Tensor> = {};
      for (const [name, t] of Object.entries(msg.feeds)) {
        feeds[name] = t.type === 'float32' ? new ort!.Tensor('float32', t.data as Float32Array, t.dims) : intTensor(t.type as IntType, t.data, t.dims);
      }
      const result = await session!.run(feeds, [msg.output]);
      const out = result[msg.output]!;
      if (out.dims.length !== 2) throw new Error(`the model output ${msg.output} has shape [${out.dims.join(', ')}]; expected [batch, dims]`);
      const rows = out.dims[0]!;
      const dims = out.dims[1]!;
      const vectors = Float32Array.from(out.data as Float32Array);
      out.dispose?.();
      return { vectors: normalizeRows(vectors, rows, dims), dims };
    }
    case 'load-use': {
      const { initModel } = load(paths.usePath) as { initModel: (source: unknown) => Promise<UseModel> };
      const { modelSource } = load(paths.useModelPath) as { modelSource: unknown };
      useModel = await initModel(modelSource);
      const probe = await useModel.embed(['probe']);
      return { info: { dims: probe[0]!.length } };
    }
    case 'embed-use': {
      const rows = await useModel!.embed(msg.texts);
      const dims = rows.length > 0 ? rows[0]!.length : 0;
      const vectors = new Float32Array(rows.length * dims);
      rows.forEach((r, i) => vectors.set(r, i * dims));
      return { vectors: normalizeRows(vectors, rows.length, dims), dims };
    }
    default:
      throw new Error(`unknown op ${(msg as { op: string }).op}`);
  }
}

if (parentPort) {
  const port = parentPort;
  // One message at a time: inference is synchronous anyway, and order is kept.
  let chain = Promise.resolve();
  port.on('message', (msg: InferenceRequest & { id: number }) => {
    chain = chain.then(async () => {
      try {
        const reply = await handle(msg);
        port.postMessage({ ...reply, id: msg.id }, reply.vectors ? [reply.vectors.buffer as ArrayBuffer] : []);
      } catch (e) {
        port.postMessage({ id: msg.id, error: e instanceof Error ? e.message : String(e) });
      }
    });
  });
}
