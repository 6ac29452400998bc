/**
 * search/positions.ts: here are the positions of a document's query tokens, how close do
 * they sit? DocPositions gathers them per (token, field) slot; windowSpan measures the
 * smallest window holding one occurrence of each token, the proximity part of a score.
 *
 * Its cost is bounded by the positions it is given, whatever the query: a query that
 * repeats a word (`a a a a a a a a`) puts many tokens on the same positions, and the
 * smallest window with the tokens on distinct words is then an assignment problem, solved
 * here with a sliding window over an incremental bipartite matching instead of a search
 * over every combination of positions (which grew as positions^tokens).
 */
import type { PostingCursor } from '../index/segment.js';
import { SEARCH_LIMITS } from '../defaults.js';
import { current } from './budget.js';

/**
 * A document's positions per slot (token t in field f: slot t * F + f), each position p
 * kept as 2p for a word of its own and 2p + 1 for a part of a glued word (a part sits at
 * its word's position), sorted; preallocated typed arrays reused from document to document.
 */
export class DocPositions {
  readonly buf: Int32Array[];
  readonly len: Int32Array;
  private filled: number[] = [];
  /**
   * Slots [0, exact) hold every candidate's positions; slot exact + s holds slot s's
   * positions of candidates without typos only: a field is an exact match of the query
   * when its words are the query's, not typo variants of them (isExact).
   */
  readonly exact: number;
  constructor(slots: number) {
    this.exact = slots;
    this.buf = Array.from({ length: 2 * slots }, () => new Int32Array(16));
    this.len = new Int32Array(2 * slots);
  }
  reset(): void {
    for (let i = 0; i < this.filled.length; i++) this.len[this.filled[i]!] = 0;
    this.filled.length = 0;
  }
  /** Adds the cursor's positions to a slot (tagged `part`); `typoFree` (a whole word without typos): also to the slot's exact twin. */
  add(slot: number, c: PostingCursor, typoFree: boolean, part: number): void {
    const b = this.room(slot, c.tf);
    const before = this.len[slot]!;
    const n = c.positionsTagged(b, before, part);
    this.len[slot] = n;
    if (typoFree) {
      const e = this.exact + slot;
      const eb = this.room(e, n - before);
      const m = this.len[e]!;
      eb.set(b.subarray(before, n), m);
      this.len[e] = m + n - before;
      if (m > 0) eb.subarray(0, m + n - before).sort();
    }
    if (before > 0) b.subarray(0, n).sort(); // a second candidate term in the same field (rare)
  }
  /** The slot's buffer, with room for `more` positions. */
  private room(slot: number, more: number): Int32Array {
    const n = this.len[slot]!;
    if (n === 0) this.filled.push(slot);
    let b = this.buf[slot]!;
    if (n + more > b.length) {
      let cap = b.length * 2;
      while (cap < n + more) cap *= 2;
      const nb = new Int32Array(cap);
      nb.set(b.subarray(0, n));
      this.buf[slot] = b = nb;
    }
    return b;
  }
  has(slot: number, p: number): boolean {
    const b = this.buf[slot]!;
    let lo = 0;
    let hi = this.len[slot]!;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (b[mid]! < p) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.len[slot]! && b[lo] === p;
  }
}

/** Query tokens at most (a token is a bit of a 32-bit mask). */
const MAX_TOKENS = 32;
const winSlots = new Int32Array(MAX_TOKENS);
const winPtr = new Int32Array(MAX_TOKENS);

/**
 * Smallest window (last - first word position) holding one occurrence of every token in
 * `mask`, at distinct positions: one word of the document stands for one query word, so
 * `python p` does not find `python` and `p*` adjacent in a document that says only
 * `python` (two tokens at one position would make the window narrower than its tokens,
 * and proximity better than adjacent). Parts of glued words are the exception: several
 * parts of one word may stand for several query words (`unit aware` on `unit-aware`, a
 * window of 0). Windows of `cap` or more are all worth the same to the caller, and so are
 * windows of k - 1 or less (k tokens adjacent): the answer is exact between the two, at
 * most k - 1 below, at least `cap` above (Infinity when the tokens cannot sit at distinct
 * positions).
 *
 * The usual sweep (advance the token at the window's start) finds the smallest window; when
 * that one puts two tokens on one word, the smallest with distinct positions is found by
 * distinctSpan, which only documents where candidates overlap ever need.
 */
export function windowSpan(pos: DocPositions, mask: number, f: number, T: number, F: number, cap = Infinity): number {
  let k = 0;
  for (let t = 0; t < T; t++) if (mask & (1 << t)) winSlots[k++] = t * F + f;
  for (let i = 0; i < k; i++) winPtr[i] = 0;
  let best = Infinity;
  let bestShared = Infinity;
  let moves = 0;
  for (;;) {
    moves++;
    let minI = 0;
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < k; i++) {
      const v = pos.buf[winSlots[i]!]![winPtr[i]!]!;
      if (v < min) {
        min = v;
        minI = i;
      }
      if (v > max) max = v;
    }
    const span = (max >> 1) - (min >> 1);
    if (span < best) {
      if (distinctAt(pos, k)) best = span;
      else if (span < bestShared) bestShared = span;
    }
    if (best <= k - 1) break;
    winPtr[minI]!++;
    if (winPtr[minI]! >= pos.len[winSlots[minI]!]!) break;
  }
  current().work += moves * k;
  if (bestShared >= best || bestShared >= cap) return best;
  return distinctSpan(pos, k, Math.min(best, cap));
}

/** Do the window's current positions (winPtr) differ pairwise (parts of one word may share)? */
function distinctAt(pos: DocPositions, k: number): boolean {
  for (let i = 1; i < k; i++) {
    const v = pos.buf[winSlots[i]!]![winPtr[i]!]!;
    if ((v & 1) === 1) continue;
    for (let j = 0; j < i; j++) if (pos.buf[winSlots[j]!]![winPtr[j]!]! === v) return false;
  }
  return true;
}

// distinctSpan's scratch, grown on demand and reused: it runs once per scored document.
let evValue = new Int32Array(256); // the event's position (2p or 2p + 1)
let evGroup = new Int32Array(256); // the group it belongs to
let evId = new Int32Array(256); // dense id of its position (events of one position share it)
let owner = new Int32Array(256); // per position id: the group using it, or -1
let seenAt = new Int32Array(256); // per position id: the augmenting search that last visited it
let sortKeys = new Float64Array(256);
let groupEvents = new Int32Array(256); // per group, its events in order (offsets in groupStart)
const groupStart = new Int32Array(MAX_TOKENS + 1);
const groupLo = new Int32Array(MAX_TOKENS); // the group's first event in the window (index into groupEvents)
const groupHi = new Int32Array(MAX_TOKENS); // one past its last
const demand = new Int32Array(MAX_TOKENS); // tokens in the group
const assigned = new Int32Array(MAX_TOKENS); // of them, those given a distinct word
const parts = new Int32Array(MAX_TOKENS); // parts of glued words in the window: they satisfy the whole group
const groupOf = new Int32Array(MAX_TOKENS);
let stamp = 0;
/** Steps of the running distinctSpan (words looked at by its searches), bounded by SEARCH_LIMITS.proximitySteps. */
let steps = 0;

function grow(n: number): void {
  if (n <= evValue.length) return;
  let cap = evValue.length;
  while (cap < n) cap *= 2;
  evValue = new Int32Array(cap);
  evGroup = new Int32Array(cap);
  evId = new Int32Array(cap);
  owner = new Int32Array(cap);
  seenAt = new Int32Array(cap);
  sortKeys = new Float64Array(cap);
  groupEvents = new Int32Array(cap);
}

/**
 * The smallest window below `bound` holding every token at distinct positions, else `bound`.
 *
 * Tokens with identical position lists (a repeated query word) form one group that needs
 * that many distinct words. Positions are visited in order as events; the window [L, R]
 * grows to the right and shrinks from the left, keeping a maximum matching of groups to
 * distinct whole words (a part of a glued word satisfies its whole group, as parts may be
 * shared). Adding or removing one event changes the matching by at most one augmenting
 * path, found by a depth-first search over the window's events.
 *
 *   positions   3   5   5   8   9        tokens: a, a, a*      groups: {a, a} needs 2, {a*} needs 1
 *   a           x   x       x            window [3, 8]: a->3, a->5, a*->8 ... span 5
 *   a*              x   x       x        window [5, 9]: a->5, a->8, a*->9 ... span 4
 *
 * Each event enters and leaves the window once, and each change costs one search over the
 * window's events, which never spans `bound` words: at most events x window-events steps,
 * and never more than SEARCH_LIMITS.proximitySteps (the best window found by then stands).
 * (Credit: the augmenting-path matching is Hopcroft and Karp's bipartite matching, one path
 * at a time; the window is the classic two-pointer minimum window.)
 */
function distinctSpan(pos: DocPositions, k: number, bound: number): number {
  // group tokens whose lists are identical
  let G = 0;
  let total = 0;
  for (let i = 0; i < k; i++) {
    const si = winSlots[i]!;
    let g = -1;
    for (let j = 0; j < i && g < 0; j++) if (sameList(pos, si, winSlots[j]!)) g = groupOf[j]!;
    if (g < 0) {
      g = G++;
      demand[g] = 0;
      total += pos.len[si]!;
    }
    groupOf[i] = g;
    demand[g]!++;
  }
  if (G === 1 && demand[0] === 1) return bound;
  grow(total);
  // events: every group's positions, in position order (ties by group)
  let n = 0;
  let added = 0;
  for (let i = 0; i < k; i++) {
    const g = groupOf[i]!;
    if (added & (1 << g)) continue;
    added |= 1 << g;
    const si = winSlots[i]!;
    const b = pos.buf[si]!;
    for (let x = 0; x < pos.len[si]!; x++) sortKeys[n++] = b[x]! * MAX_TOKENS + g;
  }
  const keys = sortKeys.subarray(0, n).sort();
  let id = -1;
  let last = NaN;
  groupStart.fill(0, 0, G + 1);
  for (let e = 0; e < n; e++) {
    const key = keys[e]!;
    const v = Math.floor(key / MAX_TOKENS);
    const g = key - v * MAX_TOKENS;
    evValue[e] = v;
    evGroup[e] = g;
    if (v !== last) {
      id++;
      last = v;
      owner[id] = -1;
      seenAt[id] = 0;
    }
    evId[e] = id;
    groupStart[g + 1]!++;
  }
  for (let g = 0; g < G; g++) groupStart[g + 1]! += groupStart[g]!;
  for (let g = 0; g < G; g++) {
    groupLo[g] = groupHi[g] = groupStart[g]!;
    assigned[g] = 0;
    parts[g] = 0;
  }
  for (let e = 0; e < n; e++) groupEvents[groupHi[evGroup[e]!]!++] = e;
  for (let g = 0; g < G; g++) groupHi[g] = groupStart[g]!;
  stamp = 0;

  let best = bound;
  let unsatisfied = G;
  let L = 0;
  steps = 0;
  for (let R = 0; R < n && steps < SEARCH_LIMITS.proximitySteps; R++) {
    // a window as wide as the best one so far cannot improve on it: shrink it first
    const wR = evValue[R]! >> 1;
    while (L < R && wR - (evValue[L]! >> 1) >= best) unsatisfied += leave(L++);
    const g = evGroup[R]!;
    groupHi[g]!++;
    if ((evValue[R]! & 1) === 1 && parts[g]!++ === 0 && assigned[g]! < demand[g]!) unsatisfied--;
    if (unsatisfied > 0) unsatisfied -= fill(G);
    while (unsatisfied === 0) {
      const span = wR - (evValue[L]! >> 1);
      if (span < best) best = span;
      if (best === 0) break;
      unsatisfied += leave(L++);
      if (unsatisfied > 0) unsatisfied -= fill(G);
    }
  }
  current().work += n + steps;
  return best;
}

function satisfied(g: number): boolean {
  return parts[g]! > 0 || assigned[g]! >= demand[g]!;
}

/** Takes event e out of the window; returns how many groups it left unsatisfied (0 or 1). */
function leave(e: number): number {
  const g = evGroup[e]!;
  const was = satisfied(g);
  groupLo[g]!++;
  if ((evValue[e]! & 1) === 1) parts[g]!--;
  else if (owner[evId[e]!] === g) {
    owner[evId[e]!] = -1;
    assigned[g]!--;
  }
  return was && !satisfied(g) ? 1 : 0;
}

/** Augments every unsatisfied group while it can; returns how many became satisfied. */
function fill(G: number): number {
  let done = 0;
  for (let g = 0; g < G; g++) {
    while (!satisfied(g) && augment(g)) if (satisfied(g)) done++;
  }
  return done;
}

/** Gives group g one more distinct word in the window, moving others' words along an augmenting path. */
function augment(g: number): boolean {
  stamp++;
  return tryGroup(g);
}

function tryGroup(g: number): boolean {
  steps += groupHi[g]! - groupLo[g]!;
  for (let x = groupLo[g]!; x < groupHi[g]!; x++) {
    const e = groupEvents[x]!;
    if ((evValue[e]! & 1) === 1) continue;
    const id = evId[e]!;
    if (seenAt[id] === stamp) continue;
    seenAt[id] = stamp;
    const h = owner[id]!;
    if (h === g) continue;
    // a word held by a group that parts already satisfy, or whose holder can move: take it
    if (h < 0 || parts[h]! > 0 || tryGroup(h)) {
      if (h >= 0) assigned[h]!--;
      owner[id] = g;
      assigned[g]!++;
      return true;
    }
  }
  return false;
}

function sameList(pos: DocPositions, a: number, b: number): boolean {
  const n = pos.len[a]!;
  if (pos.len[b] !== n) return false;
  const x = pos.buf[a]!;
  const y = pos.buf[b]!;
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return false;
  return true;
}
