/**
 * CLIP's text tokenizer: byte-level BPE over lower-cased text, words ending in `</w>`.
 *
 * The vocabulary file is OpenAI's merges list (`bpe_simple_vocab_16e6.txt`: an optional
 * `#version` header, then one merge a line, "a b"). The vocabulary is derived from it, as
 * CLIP's own tokenizer does: the 256 byte symbols (in the byte-to-unicode table's order),
 * the same with `</w>`, one entry per merge used, then `<|startoftext|>` and
 * `<|endoftext|>`. A vocabulary of `vocabSize` entries uses its first vocabSize - 514
 * merges (49408 for OpenAI's models: 48894 of the file's 262,143).
 *
 * Text is NFC-normalised, whitespace collapsed, lower-cased, split into words, numbers
 * (one digit each) and runs of other symbols, each turned into bytes and merged by rank.
 * A sequence is `<|startoftext|> tokens <|endoftext|>`, at most `contextLength` long
 * (tokens beyond it are dropped).
 */

/** Byte value to the printable character CLIP uses for it (GPT-2's byte-to-unicode table), and the table's order. */
function byteTable(): { chars: string[]; order: number[] } {
  const bs: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n++);
    }
  }
  const chars = new Array<string>(256);
  bs.forEach((b, i) => (chars[b] = String.fromCharCode(cs[i]!)));
  return { chars, order: bs };
}

const BYTES = byteTable();
const WORD = /<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+/giu;

export interface ClipTokenizerOptions {
  /** Entries in the vocabulary (default 49408); the merges used are the first vocabSize - 514. */
  vocabSize: number;
  /** Longest sequence, start and end tokens included (default 77). */
  contextLength: number;
}

export class ClipTokenizer {
  readonly bosId: number;
  readonly eosId: number;
  readonly contextLength: number;
  private readonly ids = new Map<string, number>();
  /** "left right" -> rank */
  private readonly ranks = new Map<string, number>();
  private readonly cache = new Map<string, number[]>();

  /**
   * @param mergesText the merges file's text
   * Throws an Error naming the line of a malformed merge.
   */
  constructor(mergesText: string, opts: ClipTokenizerOptions) {
    const lines = mergesText.split('\n');
    let first = 0;
    if (lines[0]?.startsWith('#version')) first = 1;
    const wanted = opts.vocabSize - 514;
    if (!(wanted >= 0)) throw new Error(`a CLIP vocabulary needs at least 514 entries, got vocab_size ${opts.vocabSize}`);
    const merges: Array<[string, string]> = [];
    for (let i = first; i < lines.length && merges.length < wanted; i++) {
      const line = lines[i]!.replace(/\r$/, '');
      if (line === '') continue;
      const parts = line.split(' ');
      if (parts.length !== 2 || !parts[0] || !parts[1]) throw new Error(`line ${i + 1} is not a merge ("a b"): ${JSON.stringify(line.slice(0, 40))}`);
      merges.push([parts[0], parts[1]]);
    }
    if (merges.length === 0) throw new Error('the merges file holds no merges');
    let id = 0;
    for (const b of BYTES.order) this.ids.set(BYTES.chars[b]!, id++);
    for (const b of BYTES.order) this.ids.set(BYTES.chars[b]! + '</w>', id++);
    merges.forEach(([a, b], rank) => {
      this.ranks.set(`${a} ${b}`, rank);
      this.ids.set(a + b, id++);
    });
    this.bosId = id++;
    this.eosId = id++;
    this.ids.set('<|startoftext|>', this.bosId);
    this.ids.set('<|endoftext|>', this.eosId);
    this.contextLength = opts.contextLength;
  }

  /** Number of ids (the text tower's embedding rows it needs). */
  get size(): number {
    return this.eosId + 1;
  }

  /** The BPE symbols of one pre-tokenised word (already byte-mapped). */
  private bpe(word: string): number[] {
    const hit = this.cache.get(word);
    if (hit) return hit;
    const chars = Array.from(word);
    let parts = chars.map((c, i) => (i === chars.length - 1 ? c + '</w>' : c));
    while (parts.length > 1) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i < parts.length - 1; i++) {
        const r = this.ranks.get(`${parts[i]} ${parts[i + 1]}`);
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          best = i;
        }
      }
      if (best < 0) break;
      const a = parts[best]!;
      const b = parts[best + 1]!;
      // merge every occurrence of the pair, left to right
      const next: string[] = [];
      for (let i = 0; i < parts.length; ) {
        if (i < parts.length - 1 && parts[i] === a && parts[i + 1] === b) {
          next.push(a + b);
          i += 2;
        } else next.push(parts[i++]!);
      }
      parts = next;
    }
    const ids = parts.map((p) => this.ids.get(p)!);
    if (this.cache.size < 50_000) this.cache.set(word, ids);
    return ids;
  }

  /** Token ids of a text without the start and end tokens (and not truncated). */
  tokens(text: string): number[] {
    const clean = text.normalize('NFC').replace(/\s+/g, ' ').trim().toLowerCase();
    const out: number[] = [];
    for (const m of clean.matchAll(WORD)) {
      const w = m[0];
      if (w === '<|startoftext|>' || w === '<|endoftext|>') {
        out.push(this.ids.get(w)!);
        continue;
      }
      let mapped = '';
      for (const byte of Buffer.from(w, 'utf8')) mapped += BYTES.chars[byte]!;
      for (const id of this.bpe(mapped)) out.push(id);
    }
    return out;
  }

  /** The sequence fed to the text tower: start, tokens (cut to fit), end. */
  encode(text: string): number[] {
    const t = this.tokens(text);
    const room = Math.max(0, this.contextLength - 2);
    return [this.bosId, ...(t.length > room ? t.slice(0, room) : t), this.eosId];
  }
}
