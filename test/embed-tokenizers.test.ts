/**
 * The subword tokenizers of local embedding models, checked against token ids computed by hand
 * from the fixture vocabularies (fixtures/make-tiny-bert.mjs lists them with their ids).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { parseVocabTxt, looksUncased, WordPieceTokenizer } from '../src/embed/tokenizers/wordpiece.js';
import { parseSentencePieceModel, parseSentencePieceModelAsync, PIECE_TYPE, XlmRobertaTokenizer } from '../src/embed/tokenizers/sentencepiece.js';
import { ROOT, rng, tmpDir } from './helpers.js';

const FIXTURES = path.join(ROOT, 'fixtures', 'models');
const bertVocab = parseVocabTxt(fs.readFileSync(path.join(FIXTURES, 'tiny-bert', 'vocab.txt'), 'utf8'));
const spModel = parseSentencePieceModel(fs.readFileSync(path.join(FIXTURES, 'tiny-xlmr', 'sentencepiece.bpe.model')));
const opts = { maxTokens: 16, maxCharsPerToken: 32 };
const bert = new WordPieceTokenizer(bertVocab, opts);
const xlmr = new XlmRobertaTokenizer(spModel, opts);

// Fixture ids: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3; . 5 , 6 ! 7; letters a=13 … z=38; the=39 quick=40
// brown=41 fox=42 jump=43 ##s=44 ##ed=45 over=47 lazy=48 dog=49 hello=50 world=51 un=52 ##aff=53
// ##able=54 cafe=59 中=60 文=61; ##a=62 … ##z=87.
describe('the WordPiece tokenizer (model_type bert)', () => {
  it('reads vocab.txt with one token per line, the id being the line number', () => {
    expect(bertVocab[0]).toBe('[PAD]');
    expect(bertVocab[50]).toBe('hello');
    expect(bertVocab.length).toBe(104);
  });

  it('wraps a text in [CLS] … [SEP] and splits punctuation off words', () => {
    expect(bert.encode('Hello, world!')).toEqual([2, 50, 6, 51, 7, 3]);
  });

  it('splits an unknown word into the longest known pieces, continuing with ##', () => {
    expect(bert.tokenize('unaffable')).toEqual(['un', '##aff', '##able']);
    expect(bert.encode('unaffable')).toEqual([2, 52, 53, 54, 3]);
    expect(bert.encode('jumped xyz')).toEqual([2, 43, 45, 36, 86, 87, 3]);
  });

  it('lower-cases and strips accents for an uncased vocabulary', () => {
    expect(looksUncased(bertVocab)).toBe(true);
    expect(bert.encode('CAFÉ')).toEqual([2, 59, 3]);
  });

  it('puts every CJK ideograph in a token of its own', () => {
    expect(bert.tokenize('中文')).toEqual(['中', '文']);
    expect(bert.encode('cafe中文')).toEqual([2, 59, 60, 61, 3]);
    expect(bert.encode('\u{20000}\u{20001}')).toEqual([2, 1, 1, 3]); // astral ideographs too: two [UNK], not one word
  });

  it('gives [UNK] for characters the vocabulary cannot spell and for words over 100 characters', () => {
    expect(bert.encode('#')).toEqual([2, 1, 3]);
    expect(bert.encode('a'.repeat(101))).toEqual([2, 1, 3]);
  });

  it('drops control characters and treats any whitespace as a separator', () => {
    expect(bert.encode('hello\u0000\tworld\u200b')).toEqual([2, 50, 51, 3]);
  });

  it('treats a literal [SEP] in the text as ordinary text, not as a special token', () => {
    // '[' and ']' are not in the fixture vocabulary; "sep" is spelled s ##e ##p.
    expect(bert.encode('[SEP]')).toEqual([2, 1, 31, 66, 77, 1, 3]);
  });

  it('truncates a long text to max length, keeping [CLS] first and [SEP] last', () => {
    const ids = bert.encode('the quick brown fox jumps over the lazy dog '.repeat(5));
    expect(ids).toHaveLength(16);
    expect(ids[0]).toBe(2);
    expect(ids[15]).toBe(3);
    expect(ids.slice(1, 8)).toEqual([39, 40, 41, 42, 43, 44, 47]);
  });

  it('gives the well-known bert-base-uncased ids for a vocabulary laid out like it', () => {
    // bert-base-uncased has 30522 tokens; these are the published ids of the ones used here.
    const known: Record<number, string> = { 0: '[PAD]', 100: '[UNK]', 101: '[CLS]', 102: '[SEP]', 103: '[MASK]', 999: '!', 1010: ',', 1012: '.', 1996: 'the', 2088: 'world', 7592: 'hello' };
    const vocab = Array.from({ length: 30522 }, (_, i) => known[i] ?? `[unused${i}]`);
    const t = new WordPieceTokenizer(vocab, { maxTokens: 512 });
    expect(t.encode('Hello, world!')).toEqual([101, 7592, 1010, 2088, 999, 102]);
    expect(t.encode('The world.')).toEqual([101, 1996, 2088, 1012, 102]);
    expect(t.padId).toBe(0);
  });

  it('keeps case for a cased vocabulary, unless config.json says do_lower_case', () => {
    const vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'Hello', 'hello'];
    expect(looksUncased(vocab)).toBe(false);
    expect(new WordPieceTokenizer(vocab, opts).encode('Hello')).toEqual([2, 4, 3]);
    expect(new WordPieceTokenizer(vocab, { ...opts, lowercase: true }).encode('Hello')).toEqual([2, 5, 3]);
  });

  it('refuses a vocabulary without [CLS], [SEP] or [UNK]', () => {
    expect(() => new WordPieceTokenizer(['[PAD]', 'a'], opts)).toThrow(/no `\[CLS\]` token/);
  });
});

// SentencePiece ids: <unk>=0 <s>=1 </s>=2 ▁=3 ▁the=4 ▁hello=5 ▁world=6 ▁red=7 ▁run=8 ning=9
// ▁shoe=10 s=11 ▁a=12 bc=13 ▁ab=14 c=15 … ▁café=22 ▁中文=25. XLM-R ids are these + 1, with
// <s>=0 <pad>=1 </s>=2 <unk>=3.
describe('the SentencePiece tokenizer (model_type xlm_roberta)', () => {
  it('parses the pieces, scores and types of the .model protobuf', () => {
    expect(spModel.pieces.length).toBe(47);
    expect(spModel.pieces[5]).toEqual({ piece: '\u2581hello', score: -2.5, type: PIECE_TYPE.NORMAL });
    expect(spModel.pieces[1]!.type).toBe(PIECE_TYPE.CONTROL);
    expect(spModel).toMatchObject({ modelType: 1, unkId: 0, bosId: 1, eosId: 2, padId: -1, normalizerName: 'nmt_nfkc' });
  });

  it('marks word starts with ▁ and maps pieces to fairseq ids inside <s> … </s>', () => {
    expect(xlmr.tokenize('hello world')).toEqual(['\u2581hello', '\u2581world']);
    expect(xlmr.encode('hello world')).toEqual([0, 6, 7, 2]);
  });

  it('chooses the segmentation with the best total score, not the longest first piece', () => {
    // ▁a + bc scores -2; ▁ab + c scores -6.
    expect(xlmr.tokenize('abc')).toEqual(['\u2581a', 'bc']);
    expect(xlmr.encode('running shoes')).toEqual([0, 9, 10, 11, 12, 2]);
  });

  it('gives <unk> (id 3) for characters no piece covers', () => {
    expect(xlmr.encode('#')).toEqual([0, 4, 3, 2]);
  });

  it('collapses and trims whitespace, and applies NFKC', () => {
    expect(xlmr.encode('  hello \n  world ')).toEqual([0, 6, 7, 2]);
    expect(xlmr.encode('cafe\u0301 中文')).toEqual([0, 23, 26, 2]);
  });

  it('never matches control pieces against text', () => {
    expect(xlmr.tokenize('<s>')).not.toContain('<s>');
  });

  it('truncates a long text to max length, keeping <s> first and </s> last', () => {
    const ids = xlmr.encode('hello world '.repeat(20));
    expect(ids).toHaveLength(16);
    expect(ids[0]).toBe(0);
    expect(ids[15]).toBe(2);
  });

  it('loads a 250,002-piece vocabulary (XLM-R size) without holding the event loop for long', async () => {
    // A ModelProto of 250,002 pieces { piece, score }, written by hand.
    const bytes: number[] = [];
    const varint = (out: number[], v: number) => {
      do {
        out.push((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>>= 7;
      } while (v > 0);
    };
    for (let i = 0; i < 250_002; i++) {
      const text = Buffer.from(i < 3 ? ['<unk>', '<s>', '</s>'][i]! : `\u2581w${i.toString(36)}`, 'utf8');
      const piece = [0x0a, text.length, ...text, 0x15, ...new Uint8Array(new Float32Array([-Math.log(i + 2)]).buffer)];
      if (i < 3) piece.push(0x18, i === 0 ? 2 : 3);
      bytes.push(0x0a);
      varint(bytes, piece.length);
      bytes.push(...piece);
    }
    // Count how often other work gets a turn while the vocabulary loads (a wall-clock bound
    // would depend on the machine's load; the number of turns does not).
    let turns = 0;
    let running = true;
    const other = () => {
      turns++;
      if (running) setImmediate(other);
    };
    setImmediate(other);
    const model = await parseSentencePieceModelAsync(Uint8Array.from(bytes));
    const t = await XlmRobertaTokenizer.create(model, opts);
    running = false;
    expect(model.pieces).toHaveLength(250_002);
    expect(t.encode('w10')).toEqual([0, 37, 2]); // piece 36 is "▁w10" (36 in base 36)
    expect(turns).toBeGreaterThanOrEqual(2 * Math.floor(250_002 / 10_000)); // a turn every 10,000 pieces, parsing and indexing
  });

  it('rejects a file that is not a SentencePiece model', () => {
    expect(() => parseSentencePieceModel(new Uint8Array([0x0a, 0xff]))).toThrow();
    expect(() => parseSentencePieceModel(new Uint8Array([]))).toThrow(/no pieces/);
  });
});

// ---------------------------------------------------------------------------
// Oracle: the same pipelines assembled from @huggingface/tokenizers' components
// ---------------------------------------------------------------------------

const pick = <T>(rand: () => number, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

function bertOracle(vocab: string[], lowercase: boolean): (text: string) => number[] {
  const t = new Tokenizer(
    {
      normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase },
      pre_tokenizer: { type: 'BertPreTokenizer' },
      model: { type: 'WordPiece', vocab: Object.fromEntries(vocab.map((v, i) => [v, i])), unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100 },
      post_processor: null,
      decoder: null,
      added_tokens: [],
    },
    {},
  );
  const id = (tok: string) => vocab.indexOf(tok);
  return (text) => [id('[CLS]'), ...t.tokenize(text).map(id), id('[SEP]')];
}

function sentencePieceOracle(pieces: Array<{ piece: string; score: number; type: number }>, unkId: number): (text: string) => number[] {
  // Only normal pieces may match: the others get a name the normaliser makes impossible.
  const vocab = pieces.map((p, i) => [p.type === PIECE_TYPE.NORMAL ? p.piece : `\u0001${i}`, p.score] as [string, number]);
  const t = new Tokenizer(
    {
      normalizer: {
        type: 'Sequence',
        normalizers: [
          { type: 'Precompiled', precompiled_charsmap: null },
          { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
          { type: 'Strip', strip_left: true, strip_right: true },
        ],
      },
      pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always' },
      model: { type: 'Unigram', vocab, unk_id: unkId },
      post_processor: null,
      decoder: null,
      added_tokens: [],
    },
    {},
  );
  const ids = new Map(vocab.map(([p], i) => [p, i]));
  return (text) => {
    const out = [0];
    for (const tok of t.tokenize(text)) {
      const sp = ids.get(tok);
      out.push(sp === undefined || sp === unkId ? 3 : sp + 1);
    }
    out.push(2);
    return out;
  };
}

describe('the tokenizers agree with @huggingface/tokenizers', () => {
  const noise = ['\u0000', '\u0007', '\u200b', '\u00a0', '\ufffd', '😀', '\u0301', 'Ａ', '\t', '\n', '  ', '#', '…', '«', '»', '¿', '中', '文', 'ß', 'İ', 'Ω'];
  const separators = [' ', ' ', ' ', '  ', '\t', '\n', ', ', '. ', '!', '-', '(', ')', "'", '\u00a0', '\u3000'];

  it('on 500 generated texts for WordPiece, uncased and cased', () => {
    const words = ['the', 'The', 'quick', 'fox', 'jumps', 'jumped', 'running', 'hello', 'HELLO', 'world', 'unaffable', 'café', 'CAFÉ', 'naïve', 'xyz', 'a', 'dog', 'search', 'zzzzzzzz', 'x'.repeat(120), '42', 'crimson', 'sneakers'];
    const cased = [...bertVocab, 'The', 'HELLO', 'Café', '##É'];
    for (const [vocab, lowercase] of [[bertVocab, true], [cased, false]] as const) {
      const mine = new WordPieceTokenizer(vocab, { maxTokens: 100_000, lowercase });
      const oracle = bertOracle([...vocab], lowercase);
      const rand = rng(lowercase ? 1 : 2);
      for (let n = 0; n < 500; n++) {
        let text = '';
        const len = 1 + Math.floor(rand() * 12);
        for (let k = 0; k < len; k++) {
          text += rand() < 0.15 ? pick(rand, noise) : pick(rand, words);
          if (rand() < 0.3) text += pick(rand, noise);
          text += pick(rand, separators);
        }
        expect(mine.encode(text), JSON.stringify(text)).toEqual(oracle(text));
      }
    }
  });

  it('on 500 generated texts for a random SentencePiece Unigram model', () => {
    const rand = rng(3);
    const alphabet = ['a', 'b', 'c', 'd', 'e', 'é', '中', 'x'];
    const pieces: Array<{ piece: string; score: number; type: number }> = [
      { piece: '<unk>', score: 0, type: PIECE_TYPE.UNKNOWN },
      { piece: '<s>', score: 0, type: PIECE_TYPE.CONTROL },
      { piece: '</s>', score: 0, type: PIECE_TYPE.CONTROL },
      { piece: '\u2581', score: -2 - rand(), type: PIECE_TYPE.NORMAL },
    ];
    const seen = new Set(pieces.map((p) => p.piece));
    for (const c of alphabet.slice(0, 6)) {
      pieces.push({ piece: c, score: -5 - rand() * 3, type: PIECE_TYPE.NORMAL }); // 'x' and '中' stay unknown
      seen.add(c);
    }
    while (pieces.length < 200) {
      let p = rand() < 0.5 ? '\u2581' : '';
      const len = 1 + Math.floor(rand() * 5);
      for (let k = 0; k < len; k++) p += pick(rand, alphabet.slice(0, 6));
      if (seen.has(p)) continue;
      seen.add(p);
      pieces.push({ piece: p, score: -1 - rand() * 10, type: PIECE_TYPE.NORMAL });
    }
    const model = { ...spModel, pieces, unkId: 0 };
    const mine = new XlmRobertaTokenizer(model, { maxTokens: 100_000, maxCharsPerToken: 32 });
    const oracle = sentencePieceOracle(pieces, 0);
    for (let n = 0; n < 500; n++) {
      let text = '';
      const len = 1 + Math.floor(rand() * 40);
      for (let k = 0; k < len; k++) text += rand() < 0.2 ? pick(rand, [' ', '  ', '\t', '\u00a0', '\n', '\u0007', 'Ａ', 'ﬁ']) : pick(rand, alphabet);
      expect(mine.encode(text), JSON.stringify(text)).toEqual(oracle(text));
    }
  });
});

describe('the fixture generator', () => {
  it('reproduces the committed fixture models byte for byte', () => {
    const out = tmpDir('fathom-fixtures-');
    execFileSync(process.execPath, [path.join(ROOT, 'fixtures', 'make-tiny-bert.mjs'), out], { cwd: ROOT });
    for (const model of ['tiny-bert', 'tiny-xlmr']) {
      for (const f of fs.readdirSync(path.join(FIXTURES, model))) {
        expect(fs.readFileSync(path.join(out, model, f)).equals(fs.readFileSync(path.join(FIXTURES, model, f))), `${model}/${f}`).toBe(true);
      }
    }
  });
});
