/**
 * Join filters, joined fields in results, and sorting by a joined field.
 *
 *   orders --customer_id--> customers        orders --product_id--> products
 *
 *   search orders   filter_by=$customers(country:=NZ)        forward: order.ref ∈ matched customers
 *   search customers filter_by=$orders(total:>100)           reverse: customer.seq ∈ refs of matched orders
 *   search customers filter_by=$orders($products(price:>5))  nested: each level resolves its own relation
 *
 * `include_fields: $products(name, price, strategy: merge) as item` attaches the related
 * documents' fields to each hit: under the collection name (or alias) as an object
 * (`nest`, or an array when several relate), always an array (`nest_array`), or merged
 * into the document (`merge`).
 *
 * Each takes the request's JoinAccess (src/join/access.ts), when it has one: the collections
 * a key may reach, and the key's bounds on their documents.
 */
import { FathomError } from '../errors.js';
import { setOwn } from '../json.js';
import type { Store } from '../storage/store.js';
import type { Field, Schema } from '../schema/schema.js';
import { getSchema, resolveName } from '../collection/catalog.js';
import { isDeleted, snapshot, type LiveSegment } from '../index/manifest.js';
import { compileFilter, evalFilter, type JoinResolver } from '../query/filter-eval.js';
import type { FilterNode } from '../query/filter.js';
import { project } from '../io/project.js';
import { loadDocument, projectionWants } from '../document/stored.js';
import { firstReferrers, parseReference, refColumnId, referrers } from './refs.js';
import { fieldSortValue } from '../index/columns.js';
import { locate } from '../index/manifest.js';
import type { JoinAccess } from './access.js';

function bad(msg: string): never {
  throw new FathomError('BAD_FILTER', msg);
}

type Relation =
  | { kind: 'forward'; field: Field } // outer.field references inner
  | { kind: 'reverse'; field: Field }; // inner.field references outer

/** How `outer` and `inner` are linked. */
export function relation(store: Store, outer: Schema, inner: Schema): Relation {
  for (const f of outer.fields) {
    if (f.reference && resolveName(store, parseReference(f.reference).collection) === inner.name) return { kind: 'forward', field: f };
  }
  for (const f of inner.fields) {
    if (f.reference && resolveName(store, parseReference(f.reference).collection) === outer.name) return { kind: 'reverse', field: f };
  }
  bad(`no reference links collection \`${outer.name}\` and \`${inner.name}\``);
}

/**
 * Live seqs of `schema`'s collection matching a filter AST (with nested joins), among
 * those the key's bound on the collection lets through.
 */
function matchingSeqs(store: Store, schema: Schema, node: FilterNode, access: JoinAccess | undefined): { seqs: Set<number>; segs: LiveSegment[]; allow: Uint8Array[] } {
  const filter = compileFilter(node, schema, store, joinResolver(store, schema, access));
  const keep = access ? boundSeqs(store, schema, access) : undefined;
  const snap = snapshot(store, schema.id);
  const seqs = new Set<number>();
  const allow: Uint8Array[] = [];
  for (const seg of snap.segments) {
    const a = evalFilter(filter, seg);
    for (let o = 0; o < seg.reader.n; o++) {
      if (!a[o] || isDeleted(seg.deleted, o) || (keep && !keep.has(seg.reader.seqs[o]!))) {
        a[o] = 0;
        continue;
      }
      seqs.add(seg.reader.seqs[o]!);
    }
    allow.push(a);
  }
  return { seqs, segs: snap.segments, allow };
}

/** The seqs of `inner` the key's bound lets through, once per request; undefined: no bound. */
function boundSeqs(store: Store, inner: Schema, access: JoinAccess): Set<number> | undefined {
  const bound = access.bound(inner.name);
  if (!bound) return undefined;
  let seqs = access.boundSeqs.get(inner.name);
  if (!seqs) {
    seqs = matchingSeqs(store, inner, bound, access.checksOnly()).seqs;
    access.boundSeqs.set(inner.name, seqs);
  }
  return seqs;
}

/** The JoinResolver for filters on `outer`. */
export function joinResolver(store: Store, outer: Schema, access?: JoinAccess): JoinResolver {
  return (node) => {
    access?.check(node.collection, 'filter_by');
    let inner: Schema;
    try {
      inner = getSchema(store, node.collection);
    } catch {
      bad(`filter_by: \`$${node.collection}(...)\` names a collection that does not exist (at position ${node.pos})`);
    }
    const rel = relation(store, outer, inner);
    const matched = matchingSeqs(store, inner, node.inner, access);
    if (rel.kind === 'forward') {
      const col = refColumnId(rel.field);
      return (seg) => {
        const out = new Uint8Array(seg.reader.n);
        const c = seg.reader.numeric(col);
        if (!c) return out;
        for (let o = 0; o < seg.reader.n; o++) {
          for (let k = c.offsets[o]!; k < c.offsets[o + 1]!; k++) {
            if (matched.seqs.has(c.values[k]!)) {
              out[o] = 1;
              break;
            }
          }
        }
        return out;
      };
    }
    // reverse: the outer documents referenced by matching inner documents
    const targets = new Set<number>();
    const col = refColumnId(rel.field);
    matched.segs.forEach((seg, i) => {
      const c = seg.reader.numeric(col);
      if (!c) return;
      const a = matched.allow[i]!;
      for (let o = 0; o < seg.reader.n; o++) {
        if (!a[o]) continue;
        for (let k = c.offsets[o]!; k < c.offsets[o + 1]!; k++) targets.add(c.values[k]!);
      }
    });
    return (seg) => {
      const out = new Uint8Array(seg.reader.n);
      for (let o = 0; o < seg.reader.n; o++) if (targets.has(seg.reader.seqs[o]!)) out[o] = 1;
      return out;
    };
  };
}

// ---------------------------------------------------------------------------
// include_fields / exclude_fields with $collection(...)
// ---------------------------------------------------------------------------

export interface JoinInclude {
  collection: string;
  fields: string[];
  strategy: 'nest' | 'merge' | 'nest_array';
  alias?: string;
  exclude: boolean;
}

const INCLUDE_RE = /^\$([^(\s]+)\s*\((.*)\)\s*(?:as\s+(\S+))?$/s;

export function parseJoinIncludes(include: string[] | undefined, exclude: string[] | undefined): JoinInclude[] {
  const out: JoinInclude[] = [];
  const add = (spec: string, ex: boolean) => {
    const m = INCLUDE_RE.exec(spec.trim());
    if (!m) throw new FathomError('BAD_PARAMETER', `\`${spec}\` must look like \`$collection(field, ...)\` optionally followed by \`as alias\``);
    let strategy: JoinInclude['strategy'] = 'nest';
    const fields: string[] = [];
    for (const part of m[2]!.split(',').map((s) => s.trim()).filter(Boolean)) {
      const sm = /^strategy\s*:\s*(\S+)$/.exec(part);
      if (sm) {
        if (!['nest', 'merge', 'nest_array'].includes(sm[1]!)) throw new FathomError('BAD_PARAMETER', `join strategy must be nest, merge or nest_array, got \`${sm[1]}\``);
        strategy = sm[1] as JoinInclude['strategy'];
      } else fields.push(part);
    }
    out.push({ collection: m[1]!, fields, strategy, ...(m[3] ? { alias: m[3] } : {}), exclude: ex });
  };
  for (const s of include ?? []) if (s.startsWith('$')) add(s, false);
  for (const s of exclude ?? []) if (s.startsWith('$')) add(s, true);
  return out;
}

/**
 * Seqs of the `inner` documents related to outer document `seq` (those the key's bound lets
 * through). `rel`: their relation, when the caller has it.
 */
function related(store: Store, outer: Schema, inner: Schema, seq: number, access: JoinAccess | undefined, rel = relation(store, outer, inner)): number[] {
  let out: number[];
  if (rel.kind === 'forward') {
    const rec = store.aux.get(['ref', outer.id, seq]) as Record<number, number | number[] | null> | undefined;
    const v = rec?.[rel.field.id];
    if (v === undefined || v === null) return [];
    out = Array.isArray(v) ? v : [v];
  } else {
    out = referrers(store, outer.id, seq)
      .filter((r) => r.collId === inner.id && r.fieldId === rel.field.id)
      .map((r) => r.seq);
  }
  const keep = access ? boundSeqs(store, inner, access) : undefined;
  return keep ? out.filter((s) => keep.has(s)) : out;
}

/** Throws 401 unless the key may reach every collection `includes` shows (exclusions show nothing). */
export function checkJoinIncludes(includes: JoinInclude[], access: JoinAccess | undefined): void {
  if (access) for (const inc of includes) if (!inc.exclude) access.check(inc.collection, 'include_fields');
}

/** Adds joined documents to `doc` (a hit, a fetched document or an exported one). */
export function decorateWithJoins(store: Store, outer: Schema, includes: JoinInclude[], doc: Record<string, unknown>, seq: number, access?: JoinAccess): Record<string, unknown> {
  if (includes.length === 0) return doc;
  const out = { ...doc };
  const excludes = new Map<string, string[]>();
  for (const inc of includes) if (inc.exclude) excludes.set(inc.collection, inc.fields);
  for (const inc of includes) {
    if (inc.exclude) continue;
    access?.check(inc.collection, 'include_fields');
    let inner: Schema;
    try {
      inner = getSchema(store, inc.collection);
    } catch {
      throw new FathomError('BAD_PARAMETER', `include_fields: \`$${inc.collection}(...)\` names a collection that does not exist`);
    }
    const star = inc.fields.length === 0 || inc.fields.includes('*');
    const docs = related(store, outer, inner, seq, access)
      .map((s) => loadDocument(store, inner, s, projectionWants(star ? undefined : inc.fields, excludes.get(inc.collection))))
      .filter((d): d is Record<string, unknown> => !!d)
      .map((d) => project(d, { include: star ? undefined : inc.fields, exclude: excludes.get(inc.collection) }));
    if (inc.strategy === 'merge') {
      for (const d of docs) for (const [k, v] of Object.entries(d)) if (k !== 'id' || star) setOwn(out, k, v);
      continue;
    }
    const key = inc.alias ?? inc.collection;
    // (a collection or a field may be named `__proto__`)
    if (inc.strategy === 'nest_array') setOwn(out, key, docs);
    else if (docs.length === 1) setOwn(out, key, docs[0]);
    else if (docs.length > 1) setOwn(out, key, docs);
  }
  return out;
}

/** Documents whose referrers a join sort reads one by one before it reads them all at once. */
const BULK_REFERRERS_AFTER = 256;

/** Sort values for `$collection(field:dir)`: the related document's value (first related one). */
export function joinSortValue(store: Store, outer: Schema, collection: string, fieldName: string, access?: JoinAccess): (seq: number) => number | string {
  access?.check(collection, 'sort_by');
  const inner = getSchema(store, collection);
  const field = inner.field(fieldName);
  if (!field) throw new FathomError('BAD_SORT', `sort_by: no field named \`${fieldName}\` in collection \`${inner.name}\``);
  if (!field.sort) throw new FathomError('BAD_SORT', `sort_by: field \`${fieldName}\` of \`${inner.name}\` is not sortable`);
  const snap = snapshot(store, inner.id);
  // (the relation once per search: finding it reads the schemas and aliases)
  const how = relation(store, outer, inner);
  // a sort that reads many documents' referrers reads them all in one pass instead (when no key bounds them)
  const bulk = how.kind === 'reverse' && !(access && boundSeqs(store, inner, access));
  let asked = 0;
  let firsts: Map<number, number> | undefined;
  return (seq) => {
    if (bulk && !firsts && ++asked > BULK_REFERRERS_AFTER) firsts = firstReferrers(store, outer.id, inner.id, how.field.id);
    const first = firsts ? firsts.get(seq) : related(store, outer, inner, seq, access, how)[0];
    if (first === undefined) return NaN;
    const at = locate(snap, first);
    if (!at) return NaN;
    return fieldSortValue(at.seg, field, at.ord);
  };
}
