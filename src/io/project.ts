/**
 * `include_fields` / `exclude_fields`: which parts of a document a response carries.
 * Names are comma-separated; dotted names reach into nested objects. Only a document's own
 * keys are read or written: a name such as `constructor` or `__proto__` is a field's.
 */
import { isPlainObject, ownValue, setOwn } from '../json.js';

export interface Projection {
  include?: string[];
  exclude?: string[];
}

function pick(src: Record<string, unknown>, path: string[], dst: Record<string, unknown>) {
  const [head, ...rest] = path;
  if (head === undefined || !Object.hasOwn(src, head)) return;
  const v = src[head];
  if (rest.length === 0) {
    setOwn(dst, head, v);
    return;
  }
  const had = ownValue(dst, head);
  if (isPlainObject(v)) {
    let sub = had;
    if (!isPlainObject(sub)) setOwn(dst, head, (sub = {}));
    pick(v, rest, sub as Record<string, unknown>);
  } else if (Array.isArray(v)) {
    let arr = had;
    if (!Array.isArray(arr)) setOwn(dst, head, (arr = v.map(() => ({}))));
    v.forEach((el, i) => {
      if (isPlainObject(el)) pick(el, rest, (arr as Record<string, unknown>[])[i]!);
    });
  }
}

function drop(obj: Record<string, unknown>, path: string[]) {
  const [head, ...rest] = path;
  if (head === undefined || !Object.hasOwn(obj, head)) return;
  if (rest.length === 0) {
    delete obj[head];
    return;
  }
  const v = obj[head];
  if (isPlainObject(v)) {
    const copy = { ...v };
    setOwn(obj, head, copy);
    drop(copy, rest);
  } else if (Array.isArray(v)) {
    setOwn(obj, head, v.map((el) => {
      if (!isPlainObject(el)) return el;
      const copy = { ...el };
      drop(copy, rest);
      return copy;
    }));
  }
}

function splitPath(doc: Record<string, unknown>, name: string): string[] {
  return Object.hasOwn(doc, name) ? [name] : name.split('.');
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
