/**
 * XLM-RoBERTa's tokenizer: a SentencePiece Unigram model read from its `.model` file
 * (`sentencepiece.bpe.model`, a protobuf `ModelProto`, despite the name), with fairseq ids.
 *
 * Pipeline (SentencePiece with XLM-R's `nmt_nfkc` normaliser, as @huggingface/tokenizers'
 * Precompiled normaliser + Metaspace + Unigram implement it; the tests use that as an oracle):
 *   1. drop C0/C1 controls, map other whitespace (and `▁`) to a space, NFKC;
 *   2. collapse runs of spaces, trim, show spaces as `▁` and prepend one;
 *   3. per word, the Viterbi segmentation maximising the sum of piece scores; a character no
 *      piece covers is `<unk>` (score: lowest piece score − 10), consecutive ones fused;
 *   4. fairseq ids: `<s>`=0, `<pad>`=1, `</s>`=2, `<unk>`=3, every other piece at its
 *      SentencePiece id + 1; wrapped as `<s> … </s>` and truncated to `maxTokens`.
 * Control, unused and byte pieces never match text.
 *
 * Hand-written rather than the library's: building its lattice trie for XLM-R's 250,002
 * pieces blocks the thread for 1.5 s and its encoding is slow; here pieces sit in one Map,
 * words are segmented separately (pieces never span a `▁` inside) and cached. The protobuf
 * is parsed with a small reader (only the fields that matter are read).
 */
import { clipForTokens, type SubwordTokenizer } from './tokenizer.js';

/** SentencePiece piece types (sentencepiece_model.proto). */
export const PIECE_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

export interface SentencePiece {
  piece: string;
  score: number;
  type: number;
}

export interface SentencePieceModel {
  pieces: SentencePiece[];
  /** 1 Unigram, 2 BPE, 3 word, 4 char (TrainerSpec.model_type; default Unigram). */
  modelType: number;
  unkId: number;
  bosId: number;
  eosId: number;
  padId: number;
  normalizerName: string;
  addDummyPrefix: boolean;
  removeExtraWhitespaces: boolean;
}

// ---------------------------------------------------------------------------
// Protobuf reading
// ---------------------------------------------------------------------------

/** A cursor over one protobuf message (a range of `buf`); nested messages share the buffer. */
class ProtoReader {
  pos: number;
  private readonly view: DataView;

  constructor(
    private readonly buf: Uint8Array,
    start = 0,
    private readonly end = buf.length,
    view?: DataView,
  ) {
    this.pos = start;
    this.view = view ?? new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** A varint as a JS number (exact below 2^53). */
  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error('truncated varint');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
    throw new Error('varint longer than 10 bytes');
  }

  /** An `int32` field (negative values are sign-extended 10-byte varints). */
  int32(): number {
    let low = 0;
    let shift = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error('truncated varint');
      const b = this.buf[this.pos++]!;
      if (shift < 32) low |= (b & 0x7f) << shift;
      shift += 7;
      if ((b & 0x80) === 0) return low | 0;
    }
    throw new Error('varint longer than 10 bytes');
  }

  float32(): number {
    if (this.pos + 4 > this.end) throw new Error('truncated float');
    const v = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }

  /** Skips over a length-delimited field, returning its byte range. */
  private range(): [number, number] {
    const n = this.varint();
    const start = this.pos;
    if (start + n > this.end) throw new Error('truncated length-delimited field');
    this.pos = start + n;
    return [start, start + n];
  }

  /** A nested message. */
  message(): ProtoReader {
    const [start, end] = this.range();
    return new ProtoReader(this.buf, start, end, this.view);
  }

  /** A string field. Hot while loading: XLM-R has 250,002 pieces. */
  string(): string {
    const [start, end] = this.range();
    let ascii = true;
    for (let i = start; i < end; i++) {
      if (this.buf[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (!ascii) return utf8.decode(this.buf.subarray(start, end));
    let s = '';
    for (let i = start; i < end; i++) s += String.fromCharCode(this.buf[i]!);
    return s;
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.range();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
    if (this.pos > this.end) throw new Error('truncated field');
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads a SentencePiece `ModelProto`. Throws on anything that is not one. */
export function parseSentencePieceModel(buf: Uint8Array): SentencePieceModel {
  return runToEnd(parseSteps(buf));
}

/** Pieces parsed, or indexed, between two yields to the event loop (a few ms of work). */
const STEP = 10_000;

/** As parseSentencePieceModel, yielding to the event loop every STEP pieces (XLM-R: 250,002). */
export function parseSentencePieceModelAsync(buf: Uint8Array): Promise<SentencePieceModel> {
  return runYielding(parseSteps(buf));
}

function runToEnd<T>(g: Generator<void, T>): T {
  for (;;) {
    const r = g.next();
    if (r.done) return r.value;
  }
}

async function runYielding<T>(g: Generator<void, T>): Promise<T> {
  for (;;) {
    const r = g.next();
    if (r.done) return r.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

function* parseSteps(buf: Uint8Array): Generator<void, SentencePieceModel> {
  const m: SentencePieceModel = {
    pieces: [],
    modelType: 1,
    unkId: 0,
    bosId: 1,
    eosId: 2,
    padId: -1,
    normalizerName: 'nmt_nfkc',
    addDummyPrefix: true,
    removeExtraWhitespaces: true,
  };
  const r = new ProtoReader(buf);
  while (!r.done) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === 2) {
      const pr = r.message();
      const p: SentencePiece = { piece: '', score: 0, type: PIECE_TYPE.NORMAL };
      while (!pr.done) {
        const t = pr.varint();
        const f = Math.floor(t / 8);
        const w = t & 7;
        if (f === 1 && w === 2) p.piece = pr.string();
        else if (f === 2 && w === 5) p.score = pr.float32();
        else if (f === 3 && w === 0) p.type = pr.varint();
        else pr.skip(w);
      }
      m.pieces.push(p);
      if (m.pieces.length % STEP === 0) yield;
    } else if (field === 2 && wire === 2) {
      const tr = r.message();
      while (!tr.done) {
        const t = tr.varint();
        const f = Math.floor(t / 8);
        const w = t & 7;
        if (w !== 0) tr.skip(w);
        else if (f === 3) m.modelType = tr.varint();
        else if (f === 40) m.unkId = tr.int32();
        else if (f === 41) m.bosId = tr.int32();
        else if (f === 42) m.eosId = tr.int32();
        else if (f === 43) m.padId = tr.int32();
        else tr.skip(w);
      }
    } else if (field === 3 && wire === 2) {
      const nr = r.message();
      while (!nr.done) {
        const t = nr.varint();
        const f = Math.floor(t / 8);
        const w = t & 7;
        if (f === 1 && w === 2) m.normalizerName = nr.string();
        else if (f === 3 && w === 0) m.addDummyPrefix = nr.varint() !== 0;
        else if (f === 4 && w === 0) m.removeExtraWhitespaces = nr.varint() !== 0;
        else nr.skip(w);
      }
    } else {
      r.skip(wire);
    }
  }
  if (m.pieces.length === 0) throw new Error('the SentencePiece model has no pieces');
  if (m.unkId < 0 || m.unkId >= m.pieces.length) throw new Error(`the SentencePiece model's unk_id ${m.unkId} is out of range`);
  return m;
}

// ---------------------------------------------------------------------------
// The tokenizer
// ---------------------------------------------------------------------------

/** fairseq special ids used by XLM-R. */
export const XLMR_IDS = { bos: 0, pad: 1, eos: 2, unk: 3 } as const;
/** XLM-R's ids are SentencePiece ids shifted by this. */
export const FAIRSEQ_OFFSET = 1;
/** Penalty of an unknown character below the lowest piece score (SentencePiece's kUnkPenalty). */
const UNK_PENALTY = 10;
/** Distinct words remembered with their pieces; the cache is emptied when full. */
const WORD_CACHE_SIZE = 50_000;
const META = '\u2581';

export interface SentencePieceOptions {
  /** Longest sequence, <s> and </s> included. Range 3..; XLM-R: 512. */
  maxTokens: number;
  /** Characters kept per allowed token before tokenising (see clipForTokens). */
  maxCharsPerToken: number;
}

const DROPPED = /[\u0001-\u0008\u000B\u000E-\u001F\u007F\u008F\u009F]/g;
const TO_SPACE = /[\u0009\u000A\u000C\u000D\u00A0\u1680\u2000-\u200F\u2028\u2029\u202F\u205F\u2581\u3000\uFEFF\uFFFD]/g;
const PLAIN_ASCII = /^[\u0020-\u007e]*$/;

/** The `nmt_nfkc` normalisation (without whitespace collapsing). */
export function nmtNfkc(text: string): string {
  if (PLAIN_ASCII.test(text)) return text;
  const t = text.replace(DROPPED, '').replace(TO_SPACE, ' ');
  // NFKC would turn the fullwidth tilde into '~'; the precompiled map keeps it.
  return t.includes('\uFF5E') ? t.split('\uFF5E').map((p) => p.normalize('NFKC')).join('\uFF5E') : t.normalize('NFKC');
}

/** What the Viterbi search needs from the vocabulary. */
interface PieceIndex {
  /** Text of every piece that may match (normal and user-defined) → SentencePiece id. */
  pieceIds: Map<string, number>;
  scores: Float64Array;
  unkScore: number;
  /** Longest piece in UTF-16 units (a bound on the substrings worth looking up). */
  longest: number;
  /** Some piece holds ▁ past its first character. */
  innerMeta: boolean;
}

function* indexSteps(model: SentencePieceModel): Generator<void, PieceIndex> {
  const pieceIds = new Map<string, number>();
  const scores = new Float64Array(model.pieces.length);
  let minScore = Infinity;
  let longest = 1;
  let innerMeta = false;
  for (let i = 0; i < model.pieces.length; i++) {
    if (i > 0 && i % STEP === 0) yield;
    const p = model.pieces[i]!;
    scores[i] = p.score;
    if (p.type !== PIECE_TYPE.NORMAL && p.type !== PIECE_TYPE.USER_DEFINED) continue;
    if (!pieceIds.has(p.piece)) pieceIds.set(p.piece, i);
    if (p.score < minScore) minScore = p.score;
    if (p.piece.length > longest) longest = p.piece.length;
    if (p.piece.indexOf(META, 1) > 0) innerMeta = true;
  }
  return { pieceIds, scores, unkScore: (Number.isFinite(minScore) ? minScore : 0) - UNK_PENALTY, longest, innerMeta };
}

export class XlmRobertaTokenizer implements SubwordTokenizer {
  readonly padId = XLMR_IDS.pad;
  readonly maxTokens: number;
  private readonly pieceIds: Map<string, number>;
  private readonly scores: Float64Array;
  private readonly pieces: readonly SentencePiece[];
  private readonly unkSpId: number;
  private readonly unkScore: number;
  /** Longest piece in UTF-16 units (a bound on the substrings worth looking up). */
  private readonly longest: number;
  private readonly addDummyPrefix: boolean;
  private readonly removeExtraWhitespaces: boolean;
  /** Words can be segmented one by one: no piece holds ▁ past its start, and ▁ itself is a piece. */
  private readonly perWord: boolean;
  private readonly maxCharsPerToken: number;
  private readonly cache = new Map<string, number[]>();

  /** Builds the tokenizer in one go (tests, small models); see `create` for large ones. */
  constructor(model: SentencePieceModel, opts: SentencePieceOptions, index?: PieceIndex) {
    if (model.modelType !== 1) {
      throw new Error(`only Unigram SentencePiece models are supported (this one has model_type ${model.modelType})`);
    }
    if (opts.maxTokens < 3) throw new Error(`an XLM-RoBERTa model needs room for at least 3 tokens, got ${opts.maxTokens}`);
    this.maxTokens = opts.maxTokens;
    this.maxCharsPerToken = opts.maxCharsPerToken;
    this.pieces = model.pieces;
    this.unkSpId = model.unkId;
    this.addDummyPrefix = model.addDummyPrefix;
    this.removeExtraWhitespaces = model.removeExtraWhitespaces;
    const ix = index ?? runToEnd(indexSteps(model));
    this.pieceIds = ix.pieceIds;
    this.scores = ix.scores;
    this.unkScore = ix.unkScore;
    this.longest = ix.longest;
    this.perWord = !ix.innerMeta && this.pieceIds.has(META) && this.removeExtraWhitespaces;
  }

  /** Builds the tokenizer, yielding to the event loop while indexing a large vocabulary. */
  static async create(model: SentencePieceModel, opts: SentencePieceOptions): Promise<XlmRobertaTokenizer> {
    return new XlmRobertaTokenizer(model, opts, await runYielding(indexSteps(model)));
  }

  /** Hot path. */
  encode(text: string): number[] {
    let t = nmtNfkc(clipForTokens(text, this.maxTokens, this.maxCharsPerToken));
    if (this.removeExtraWhitespaces) t = t.replace(/ {2,}/g, ' ').trim();
    const out: number[] = [XLMR_IDS.bos];
    const limit = this.maxTokens - 1;
    if (this.perWord) {
      let first = true;
      for (const w of t.split(' ')) {
        if (out.length >= limit) break;
        if (w.length === 0) continue;
        this.push(first && !this.addDummyPrefix ? w : META + w, out, limit);
        first = false;
      }
    } else if (t.length > 0) {
      const spaced = t.replaceAll(' ', META);
      this.push(this.addDummyPrefix && !spaced.startsWith(META) ? META + spaced : spaced, out, limit);
    }
    out.push(XLMR_IDS.eos);
    return out;
  }

  private push(s: string, out: number[], limit: number): void {
    let ids = this.cache.get(s);
    if (!ids) {
      ids = this.viterbi(s);
      if (this.cache.size >= WORD_CACHE_SIZE) this.cache.clear();
      this.cache.set(s, ids);
    }
    for (const id of ids) {
      if (out.length >= limit) return;
      out.push(id);
    }
  }

  /** Best-scoring segmentation of `s` into fairseq ids. Hot path (once per distinct word). */
  private viterbi(s: string): number[] {
    const chars = Array.from(s);
    const n = chars.length;
    const best = new Float64Array(n + 1).fill(-Infinity);
    const from = new Int32Array(n + 1);
    const piece = new Int32Array(n + 1).fill(-1); // -1 marks an unknown character
    best[0] = 0;
    for (let start = 0; start < n; start++) {
      const base = best[start]!;
      let single = false;
      let sub = '';
      for (let end = start + 1; end <= n; end++) {
        sub += chars[end - 1];
        if (sub.length > this.longest) break;
        const id = this.pieceIds.get(sub);
        if (id === undefined) continue;
        if (end === start + 1) single = true;
        const score = base + this.scores[id]!;
        if (score > best[end]!) {
          best[end] = score;
          from[end] = start;
          piece[end] = id;
        }
      }
      if (!single && base + this.unkScore > best[start + 1]!) {
        best[start + 1] = base + this.unkScore;
        from[start + 1] = start;
        piece[start + 1] = -1;
      }
    }
    const rev: number[] = [];
    for (let end = n; end > 0; end = from[end]!) rev.push(piece[end]!);
    const ids: number[] = [];
    for (let k = rev.length - 1; k >= 0; k--) {
      const sp = rev[k]!;
      if (sp < 0 || sp === this.unkSpId) {
        if (ids[ids.length - 1] !== XLMR_IDS.unk) ids.push(XLMR_IDS.unk); // consecutive unknowns fuse
      } else {
        ids.push(sp + FAIRSEQ_OFFSET);
      }
    }
    return ids;
  }

  /** The pieces of `text` (no special tokens; unknown runs as "<unk>"), for tests and diagnostics. */
  tokenize(text: string): string[] {
    return this.encode(text)
      .slice(1, -1)
      .map((id) => (id === XLMR_IDS.unk ? '<unk>' : this.pieces[id - FAIRSEQ_OFFSET]!.piece));
  }
}
