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

/**
 * The vector list `[...]` as float32 (as the index stores vectors). Hot: 384 or more
 * numbers per query. JSON.parse when it is plain numbers (a hand-written float32 reader was
 * no faster: 43-55 us against 38-60 us for 384 17-digit numbers); else the precise error.
 */
function vectorList(s: string): Float32Array {
  let list: number[] | undefined;
  try {
    const v = JSON.parse(s) as unknown;
    if (Array.isArray(v) && v.every((x) => typeof x === 'number')) list = v as number[];
  } catch {
    /* fall through to the precise error */
  }
  const v = Float32Array.from(list ?? numberList(s, 'the vector'));
  for (let i = 0; i < v.length; i++) {
    if (!Number.isFinite(v[i]!)) bad(`the vector: entry ${i} is outside the float32 range`);
  }
  return v;
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
