/**
 * `include_fields` / `exclude_fields`: which parts of a document a response carries.
 * Names are comma-separated; dotted names reach into nested objects.
 */
import { isPlainObject } from '../json.js';

export interface Projection {
  include?: string[];
  exclude?: string[];
}

function pick(src: Record<string, unknown>, path: string[], dst: Record<string, unknown>) {
  const [head, ...rest] = path;
  if (head === undefined || !(head in src)) return;
  const v = src[head];
  if (rest.length === 0) {
    dst[head] = v;
    return;
  }
  if (isPlainObject(v)) {
    const sub = (isPlainObject(dst[head]) ? dst[head] : (dst[head] = {})) as Record<string, unknown>;
    pick(v, rest, sub);
  } else if (Array.isArray(v)) {
    const arr = (Array.isArray(dst[head]) ? dst[head] : (dst[head] = v.map(() => ({})))) as Record<string, unknown>[];
    v.forEach((el, i) => {
      if (isPlainObject(el)) pick(el, rest, arr[i]!);
    });
  }
}

function drop(obj: Record<string, unknown>, path: string[]) {
  const [head, ...rest] = path;
  if (head === undefined || !(head in obj)) return;
  if (rest.length === 0) {
    delete obj[head];
    return;
  }
  const v = obj[head];
  if (isPlainObject(v)) {
    const copy = { ...v };
    obj[head] = copy;
    drop(copy, rest);
  } else if (Array.isArray(v)) {
    obj[head] = v.map((el) => {
      if (!isPlainObject(el)) return el;
      const copy = { ...el };
      drop(copy, rest);
      return copy;
    });
  }
}

function splitPath(doc: Record<string, unknown>, name: string): string[] {
  return name in doc ? [name] : name.split('.');
}

/** Applies a projection; returns the document itself when there is nothing to do. */
export function project(doc: Record<string, unknown>, p: Projection): Record<string, unknown> {
  let out = doc;
  // joined-field entries ($collection(...)) alone do not restrict the main document's fields
  if (p.include && p.include.some((n) => !n.startsWith('$'))) {
    out = {};
    for (const name of p.include) {
      if (name.startsWith('$')) continue; // joined fields are added by the join step
      pick(doc, splitPath(doc, name), out);
    }
  }
  if (p.exclude && p.exclude.length > 0) {
    if (out === doc) out = { ...doc };
    for (const name of p.exclude) {
      if (name.startsWith('$')) continue;
      drop(out, splitPath(out, name));
    }
  }
  return out;
}
