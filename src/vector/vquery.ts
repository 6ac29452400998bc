/**
 * `vector_query` parser:
 *
 *   field:([0.1, 0.2, ...], k: 10, ef: 40, alpha: 0.3, distance_threshold: 0.6,
 *          flat_search_cutoff: 20, id: doc-7, queries: [red shoe, "sneaker"],
 *          query_weights: [0.7, 0.3])
 *
 * The vector may be empty (`field:([], id: x)` for the neighbours of a stored document,
 * or `field:([])` to carry options while `q` is embedded). Errors name the problem.
 */
import { FathomError } from '../errors.js';
import { grown } from '../arrays.js';
import { isJsonSpace } from '../json.js';

export interface VectorQuery {
  field: string;
  /** The query vector (float32, as the index stores vectors); empty when absent. */
  vector: Float32Array;
  k?: number;
  ef?: number;
  alpha?: number;
  distanceThreshold?: number;
  flatSearchCutoff?: number;
  id?: string;
  queries?: string[];
  queryWeights?: number[];
}

function bad(msg: string): never {
  throw new FathomError('BAD_PARAMETER', `vector_query: ${msg}`);
}

function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote = '';
  let cur = '';
  for (const ch of s) {
    if (quote) {
      if (ch === quote) quote = '';
      cur += ch;
      continue;
    }
    if (ch === '"' || ch === '`') quote = ch;
    else if (ch === '[' || ch === '(') depth++;
    else if (ch === ']' || ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

function unquote(s: string): string {
  const t = s.trim();
  if ((t.startsWith('"') && t.endsWith('"')) || (t.startsWith('`') && t.endsWith('`'))) return t.slice(1, -1);
  return t;
}

function numberList(s: string, what: string): number[] {
  const t = s.trim();
  if (!t.startsWith('[') || !t.endsWith(']')) bad(`${what} must be a list in square brackets`);
  const inner = t.slice(1, -1).trim();
  if (!inner) return [];
  return inner.split(',').map((x) => {
    const n = Number(x.trim());
    if (x.trim() === '' || !Number.isFinite(n)) bad(`${what}: \`${x.trim()}\` is not a number`);
    return n;
  });
}

let lastSrc: string | undefined;
let lastQuery: VectorQuery | undefined;

/**
 * Parses a vector query, remembering the last one: a search reads its `vector_query` twice
 * (for embeddings, then to plan) and a client paging through results sends it again. One
 * entry, compared as a string, because a keyed cache would hash kilobytes of text per query.
 * The result is shared and must not be modified.
 */
export function parseVectorQuery(src: string): VectorQuery {
  if (src === lastSrc) return lastQuery!;
  const q = parse(src);
  lastSrc = src;
  lastQuery = q;
  return q;
}

/** 10^0 .. 10^22: the powers of ten a double holds exactly. */
const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));

/**
 * The vector list `[...]` as float32 (as the index stores vectors), each entry exactly
 * `Math.fround(Number(text))`. Hot: 384 or more numbers per query, and JSON.parse converts
 * each 17-digit number exactly (V8's decimal conversion) where a float32 needs far less
 * precision, so readFloat32List reads them in less time. Falls back to the general path
 * (and its precise errors) on anything outside the plain grammar.
 */
function vectorList(s: string): Float32Array {
  const v = readFloat32List(s) ?? Float32Array.from(numberList(s, 'the vector'));
  for (let i = 0; i < v.length; i++) {
    if (!Number.isFinite(v[i]!)) bad(`the vector: entry ${i} is outside the float32 range`);
  }
  return v;
}

/** Scratch for readFloat32List: the text's bytes and the numbers read (grown as needed, up to 2 MiB of text). */
let textBytes = Buffer.allocUnsafe(1 << 14);
let numbers = new Float32Array(1024);

/**
 * `[n, n, ...]` of plain decimals (`-?digits[.digits][e[+-]digits]`) as float32, or
 * undefined for anything else. Hot path of a vector query: it reads the text's bytes from a
 * Buffer, because reading a byte costs a fraction of what `charCodeAt` costs here, and a
 * 384-dimension query is thousands of characters.
 *
 * Each number keeps its first 15 significant digits as an integer D (exact in a double) and
 * a power of ten p, and x = D * 10^p (or D / 10^-p) is one correctly rounded operation
 * while |p| <= 22. x is within 1e-14 (truncated digits) + 2^-53 of the decimal, and so is
 * Number(text). Rounding to float32 is monotonic, so when x * (1 - 1e-13) and
 * x * (1 + 1e-13) round to the same float32, that is `fround(Number(text))` exactly; when
 * they do not (a float32 midpoint within ~1e-13, a few in a million of arbitrary decimals
 * and never for float32 values as clients print them), Number(text) decides. Idea from
 * Clinger's fast path ("How to read floating point numbers accurately", 1990).
 */
function readFloat32List(s: string): Float32Array | undefined {
  if (textBytes.length < s.length && s.length <= 1 << 20) textBytes = Buffer.allocUnsafe(s.length * 2);
  // a text longer than 1 MiB gets a buffer of its own rather than one kept for good
  const b = textBytes.length >= s.length ? textBytes : Buffer.allocUnsafe(s.length);
  const n = b.write(s, 0, 'utf8');
  // anything but ASCII writes more bytes than characters (or is cut short): not plain numbers
  if (n !== s.length) return undefined;
  let i = 1;
  while (i < n && isJsonSpace(b[i]!)) i++;
  if (b[i] === 93) return i === n - 1 ? new Float32Array(0) : undefined;
  let k = 0;
  for (;;) {
    const start = i;
    let c = b[i]!;
    const neg = c === 45;
    if (neg) c = b[++i]!;
    let d = 0;
    let nd = 0;
    let p = 0;
    let digits = false;
    // (the integer and fraction digits in two loops of the same shape: one loop with a flag
    // for the '.' was slower)
    while (c >= 48 && c <= 57) {
      digits = true;
      if (nd < 15) {
        if (d !== 0 || c !== 48) {
          d = d * 10 + (c - 48);
          nd++;
        }
      } else p++;
      c = b[++i]!;
    }
    if (c === 46) {
      c = b[++i]!;
      while (c >= 48 && c <= 57) {
        digits = true;
        if (nd < 15) {
          if (d !== 0 || c !== 48) {
            d = d * 10 + (c - 48);
            nd++;
          }
          p--;
        }
        c = b[++i]!;
      }
    }
    if (!digits) return undefined;
    if (c === 101 || c === 69) {
      c = b[++i]!;
      const eneg = c === 45;
      if (eneg || c === 43) c = b[++i]!;
      if (!(c >= 48 && c <= 57)) return undefined;
      let e = 0;
      while (c >= 48 && c <= 57) {
        if (e < 10000) e = e * 10 + (c - 48);
        c = b[++i]!;
      }
      p += eneg ? -e : e;
    }
    let f: number;
    if (d === 0) f = 0;
    else if (p > 22 || p < -22) f = Math.fround(Number(b.toString('latin1', start + (neg ? 1 : 0), i)));
    else {
      const x = p >= 0 ? d * POW10[p]! : d / POW10[-p]!;
      f = Math.fround(x);
      if (Math.fround(x * (1 - 1e-13)) !== Math.fround(x * (1 + 1e-13))) f = Math.fround(Number(b.toString('latin1', start + (neg ? 1 : 0), i)));
    }
    if (k === numbers.length) numbers = grown(numbers, k * 2);
    numbers[k++] = neg ? -f : f;
    while (isJsonSpace(c)) c = b[++i]!;
    if (c === 44) {
      i++;
      while (i < n && isJsonSpace(b[i]!)) i++;
      continue;
    }
    return c === 93 && i === n - 1 ? numbers.slice(0, k) : undefined;
  }
}

function parse(src: string): VectorQuery {
  const s = src.trim();
  const open = s.indexOf('(');
  if (open < 0 || !s.endsWith(')')) bad('expected `<field>:([...], ...)`');
  const head = s.slice(0, open).trim();
  if (!head.endsWith(':')) bad('expected `:` between the field name and `(`');
  const field = head.slice(0, -1).trim();
  if (!field) bad('missing the field name');
  const inner = s.slice(open + 1, -1).trim();
  if (!inner.startsWith('[')) bad('the first element inside the parentheses must be the vector, e.g. `[0.1, 0.2]` or `[]`');
  const close = inner.indexOf(']');
  if (close < 0) bad('the vector is missing its closing `]`');
  const q: VectorQuery = { field, vector: vectorList(inner.slice(0, close + 1)) };
  const rest = inner.slice(close + 1).trim();
  if (rest && !rest.startsWith(',')) bad(`expected \`,\` after the vector, got \`${rest.slice(0, 20)}\``);
  const parts = rest ? splitTop(rest.slice(1)) : [];
  for (const p of parts) {
    const colon = p.indexOf(':');
    if (colon < 0) bad(`expected \`name: value\`, got \`${p}\``);
    const key = p.slice(0, colon).trim();
    const val = p.slice(colon + 1).trim();
    const num = (min: number, int: boolean) => {
      const n = Number(val);
      if (val === '' || !Number.isFinite(n) || (int && !Number.isInteger(n)) || n < min) {
        bad(`\`${key}\` must be ${int ? 'an integer' : 'a number'} of at least ${min}, got \`${val}\``);
      }
      return n;
    };
    switch (key) {
      case 'k':
        q.k = num(1, true);
        break;
      case 'ef':
        q.ef = num(1, true);
        break;
      case 'alpha':
        q.alpha = num(0, false);
        if (q.alpha > 1) bad('`alpha` must be between 0 and 1');
        break;
      case 'distance_threshold':
        q.distanceThreshold = num(0, false);
        break;
      case 'flat_search_cutoff':
        q.flatSearchCutoff = num(0, true);
        break;
      case 'id':
        q.id = unquote(val);
        if (!q.id) bad('`id` needs a document id');
        break;
      case 'queries': {
        if (!val.startsWith('[') || !val.endsWith(']')) bad('`queries` must be a list in square brackets');
        q.queries = splitTop(val.slice(1, -1)).map(unquote).filter(Boolean);
        if (q.queries.length === 0) bad('`queries` must not be empty');
        break;
      }
      case 'query_weights':
        q.queryWeights = numberList(val, '`query_weights`');
        break;
      default:
        bad(`unknown option \`${key}\` (expected k, ef, alpha, distance_threshold, flat_search_cutoff, id, queries, query_weights)`);
    }
  }
  if (q.queryWeights && (!q.queries || q.queryWeights.length !== q.queries.length)) bad('`query_weights` needs one weight per entry of `queries`');
  if (q.id !== undefined && q.vector.length > 0) bad('give either a vector or `id`, not both');
  return q;
}
