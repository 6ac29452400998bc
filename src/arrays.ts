/** Typed-array helpers shared by the index, the tokenizer and the query parsers. */

/** A copy of `a` with room for `n` elements (the rest zero). */
export function grown<A extends Int32Array | Uint16Array | Float32Array>(a: A, n: number): A {
  const b = new (a.constructor as new (n: number) => A)(n);
  b.set(a);
  return b;
}
