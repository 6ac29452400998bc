/**
 * `filter_by` parser.
 *
 *   expr      := and ('||' and)*
 *   and       := unary ('&&' unary)*
 *   unary     := '(' expr ')' | '$' name '(' expr ')' | condition
 *   condition := field ':' [op] operand
 *   op        := '=' | '!=' | '>' | '>=' | '<' | '<=' | '!'
 *   operand   := '*' | '[' item (',' item)* ']' | value
 *   item      := value | value '..' value
 *   value     := '`' any text '`' | '(' text ')' | bare text up to && || ) ] ,
 *
 * Errors name the position (0-based character offset) where parsing failed. Nesting is
 * bounded (INPUT_LIMITS.maxFilterDepth).
 */
import { INPUT_LIMITS, SEARCH_LIMITS } from '../defaults.js';
import { FathomError } from '../errors.js';

export type FilterOp = 'match' | 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'exists';

export interface FilterValue {
  /** A single value, or a range lo..hi. */
  value?: string;
  /** The value was written in parentheses, `(48.85, 2.34, 5 km)`: a geo shape (src/geo/filter.ts). */
  paren?: boolean;
  lo?: string;
  hi?: string;
}

export type FilterNode =
  | { kind: 'and'; children: FilterNode[] }
  | { kind: 'or'; children: FilterNode[] }
  | { kind: 'cond'; field: string; op: FilterOp; values: FilterValue[]; list: boolean; negated: boolean; pos: number }
  | { kind: 'join'; collection: string; inner: FilterNode; pos: number };

function err(pos: number, msg: string): never {
  throw new FathomError('BAD_FILTER', `filter_by: ${msg} at position ${pos}`);
}

export function parseFilter(src: string): FilterNode {
  let i = 0;
  const n = src.length;
  const ws = () => {
    while (i < n && /\s/.test(src[i]!)) i++;
  };
  const peek = (s: string) => src.startsWith(s, i);

  const parseOr = (): FilterNode => {
    const children = [parseAnd()];
    ws();
    while (peek('||')) {
      i += 2;
      children.push(parseAnd());
      ws();
    }
    return children.length === 1 ? children[0]! : { kind: 'or', children };
  };

  const parseAnd = (): FilterNode => {
    const children = [parseUnary()];
    ws();
    while (peek('&&')) {
      i += 2;
      children.push(parseUnary());
      ws();
    }
    return children.length === 1 ? children[0]! : { kind: 'and', children };
  };

  // nesting of ( and $c( so far: bounded, so no filter can exhaust the stack
  let depth = 0;
  const deeper = () => {
    if (++depth > INPUT_LIMITS.maxFilterDepth) err(i, `parentheses and join clauses nest deeper than ${INPUT_LIMITS.maxFilterDepth} levels`);
  };

  const parseUnary = (): FilterNode => {
    ws();
    if (i >= n) err(i, 'expected a condition but the expression ended');
    if (src[i] === '(') {
      const open = i;
      deeper();
      i++;
      const inner = parseOr();
      depth--;
      ws();
      if (src[i] !== ')') err(i, `expected \`)\` to close the \`(\` at position ${open}`);
      i++;
      return inner;
    }
    if (src[i] === '$') {
      const start = i;
      i++;
      const m = /^[^\s()]+/.exec(src.slice(i));
      if (!m) err(i, 'expected a collection name after `$`');
      const collection = m[0];
      i += collection.length;
      ws();
      if (src[i] !== '(') err(i, `expected \`(\` after \`$${collection}\``);
      deeper();
      i++;
      const inner = parseOr();
      depth--;
      ws();
      if (src[i] !== ')') err(i, `expected \`)\` to close \`$${collection}(\``);
      i++;
      return { kind: 'join', collection, inner, pos: start };
    }
    return parseCondition();
  };

  const parseCondition = (): FilterNode => {
    const start = i;
    let field = '';
    if (src[i] === '`') {
      const end = src.indexOf('`', i + 1);
      if (end < 0) err(i, 'unclosed backquote in field name');
      field = src.slice(i + 1, end);
      i = end + 1;
    } else {
      while (i < n && src[i] !== ':' && !peek('&&') && !peek('||') && src[i] !== ')' && src[i] !== '(') i++;
      field = src.slice(start, i).trim();
    }
    ws();
    if (src[i] !== ':') {
      if (!field) err(start, 'expected a field name');
      err(i, `expected \`:\` after field \`${field}\``);
    }
    if (!field) err(start, 'expected a field name before `:`');
    i++;
    ws();
    const opStart = i;
    let op: FilterOp = 'match';
    let negated = false;
    if (peek('!=')) {
      op = 'ne';
      i += 2;
    } else if (peek('>=')) {
      op = 'gte';
      i += 2;
    } else if (peek('<=')) {
      op = 'lte';
      i += 2;
    } else if (peek('=')) {
      op = 'eq';
      i += 1;
    } else if (peek('>')) {
      op = 'gt';
      i += 1;
    } else if (peek('<')) {
      op = 'lt';
      i += 1;
    } else if (peek('!')) {
      negated = true;
      i += 1;
    }
    ws();
    if (op === 'ne') {
      negated = true;
    }
    if (src[i] === '[') {
      const open = i;
      i++;
      const values: FilterValue[] = [];
      for (;;) {
        ws();
        if (src[i] === ']') {
          if (values.length === 0) err(i, 'empty list `[]`');
          i++;
          break;
        }
        const itemStart = i;
        const v = readValue(true);
        ws();
        if (peek('..')) {
          i += 2;
          ws();
          const hi = readValue(true);
          if (hi === '') err(i, 'expected the upper bound of a range after `..`');
          if (v === '') err(itemStart, 'expected the lower bound of a range before `..`');
          values.push({ lo: v, hi });
        } else {
          if (v === '') err(itemStart, 'expected a value in the list');
          values.push(lastParen ? { value: v, paren: true } : { value: v });
        }
        ws();
        if (src[i] === ',') {
          i++;
          continue;
        }
        if (src[i] === ']') {
          i++;
          break;
        }
        if (i >= n) err(i, `expected \`]\` to close the list opened at position ${open}`);
        err(i, 'expected `,` or `]` in the list');
      }
      if (negated && op === 'ne') op = 'eq';
      else if (negated && op === 'match') op = 'eq';
      return { kind: 'cond', field, op, values, list: true, negated, pos: start };
    }
    const valStart = i;
    const v = readValue(false);
    if (v === '') err(valStart, `expected a value after \`${field}:${src.slice(opStart, valStart).trim()}\``);
    if (v === '*' && op === 'match' && !negated) return { kind: 'cond', field, op: 'exists', values: [], list: false, negated: false, pos: start };
    if (negated && op === 'ne') op = 'eq';
    else if (negated && op === 'match') op = 'eq';
    return { kind: 'cond', field, op, values: [lastParen ? { value: v, paren: true } : { value: v }], list: false, negated, pos: start };
  };

  /** Whether the last value read was parenthesised. */
  let lastParen = false;

  /** Reads a backquoted, parenthesised or bare value. Bare values end at && || ) and, in lists, at , ] or `..`. */
  const readValue = (inList: boolean): string => {
    ws();
    lastParen = false;
    if (src[i] === '(') {
      // a geo shape: everything up to the matching `)`, kept with its parentheses
      const open = i;
      const close = src.indexOf(')', i + 1);
      if (close < 0) err(open, 'expected `)` to close the `(` of this value');
      const inner = src.slice(i + 1, close);
      if (inner.includes('(')) err(open, 'unexpected `(` inside a parenthesised value');
      i = close + 1;
      lastParen = true;
      return src.slice(open, i);
    }
    if (src[i] === '`') {
      const end = src.indexOf('`', i + 1);
      if (end < 0) err(i, 'unclosed backquote');
      const v = src.slice(i + 1, end);
      i = end + 1;
      return v;
    }
    const start = i;
    while (i < n) {
      if (peek('&&') || peek('||') || src[i] === ')') break;
      if (inList && (src[i] === ',' || src[i] === ']' || peek('..'))) break;
      if (src[i] === '(') err(i, 'unexpected `(` in a value; wrap values that contain parentheses in backquotes');
      i++;
    }
    return src.slice(start, i).trim();
  };

  ws();
  if (i >= n) err(0, 'the expression is empty');
  const node = parseOr();
  ws();
  if (i < n) {
    if (src[i] === ')') err(i, 'unexpected `)` without a matching `(`');
    err(i, `unexpected \`${src[i]}\``);
  }
  const ops = operations(node);
  if (ops > SEARCH_LIMITS.maxFilterOperations) {
    throw new FathomError('BAD_FILTER', `filter_by: ${ops} operations (conditions, \`&&\` and \`||\`), more than the ${SEARCH_LIMITS.maxFilterOperations} allowed; list values in one condition instead (\`field:=[a, b, c]\`)`);
  }
  return node;
}

/**
 * A filter's operations as the reference counts them: each condition and each `&&` / `||`;
 * a join is one, and its inner filter is counted apart (the larger count stands).
 */
function operations(node: FilterNode): number {
  let inner = 0;
  const walk = (n: FilterNode): number => {
    switch (n.kind) {
      case 'cond':
        return 1;
      case 'join':
        inner = Math.max(inner, operations(n.inner));
        return 1;
      default: {
        let sum = n.children.length - 1;
        for (const c of n.children) sum += walk(c);
        return sum;
      }
    }
  };
  return Math.max(walk(node), inner);
}
