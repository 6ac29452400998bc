/**
 * termdict/walk.ts: which dictionary terms stand for a query token, and at what typo cost.
 *
 * Typo matching walks the sorted term table as if it were a trie, carrying one row of
 * the edit-distance table per depth (Levenshtein with adjacent transpositions counted as
 * one edit, the "optimal string alignment" distance). A branch is abandoned as soon as
 * every cell of its row exceeds the allowed typos, so only a thin slice of the
 * dictionary is visited:
 *
 *   query "lnux", 1 typo       l -> li -> lin -> linu -> linux (cost 1)  reported
 *                               \-> lo -> ... row minimum 2 > 1          pruned
 *
 * The children of a node are the runs of equal code units at that depth inside the
 * node's [lo, hi) range of the table: at depths 0 to 2 they come from the table's head
 * index (StringTable.heads), deeper by galloping search. With `prefix`, a term matches
 * when any of its prefixes is within the allowed typos.
 *
 * Most nodes have spent their whole typo budget ("spent": every cell of the row is at
 * maxCost). Below such a node a term survives only by continuing with the rest of the
 * query exactly, from one of the cells at maxCost (or after completing a transposition,
 * which costs exactly maxCost there). So the walk stops descending and looks those few
 * continuations up, one binary search each:
 *
 *   query "lnux", 1 typo, node "x" (row 1 1 2 ..): cells 0 and 1 are at 1, so only the
 *   terms "x" + "lnux" and "x" + "nux" can match; no node below "x" is visited
 *
 * Most spent nodes are at depths 2 and 3 (every two-letter start is within two edits of
 * the query's), and there the walk only records them: once it is done, each continuation
 * is looked up once for all of them in the table's tails index (spentAtDepth). And the
 * children of a node whose label is none of the query characters their row compares share
 * one row, so runs of them are skipped or recorded at once (foreignChildren).
 * (Idea after Steve Hanov's "Fast and Easy Levenshtein distance using a Trie".)
 *
 * Once a table is warm, a walk is split in two narrow ones instead (forwardBackward,
 * forwardTails; Mihov and Schulz's forward/backward dictionary): the query's start within
 * one edit less than the budget, and its end exactly, from the ends of the terms (a
 * reversed table) or at the offsets where it can sit (the tails index). Every variant
 * reports exactly the terms the plain walk reports (test/search.test.ts checks them
 * against test/edit-distance.ts).
 *
 * Hot: runs once per query token, field and segment whenever typos are allowed; the walk
 * is a module-level function over typed arrays so that it stays optimised.
 */
import { grown } from '../arrays.js';
import type { HeadIndex, StringTable } from './table.js';

export type Emit = (termIndex: number, cost: number) => void;
export type EmitRange = (lo: number, hi: number, cost: number) => void;

interface Walk {
  offsets: Uint32Array;
  chars: Uint16Array;
  q: Uint16Array;
  m: number;
  maxCost: number;
  prefix: boolean;
  maxDepth: number;
  rows: Int32Array[];
  labels: Int32Array;
  /** Scratch for a spent node's matches, [lo, hi) pairs (the branch does not recurse). */
  found: Int32Array;
  emit: Emit;
  emitRange: EmitRange;
  /** The table's head index (StringTable.heads): children at depths 0, 1 and 2 without a search. */
  h1: Int32Array;
  h2: Int32Array;
  c3: Int32Array;
  label3: Uint16Array;
  start3: Int32Array;
  /** StringTable.tails(d) for the depths whose spent nodes are looked up all at once (else null). */
  tails: (Int32Array | null)[];
  /** Per such depth, the spent nodes met, as [lo, hi) pairs in table order, and their count. */
  spent: Int32Array[];
  nSpent: Int32Array;
  /** Scratch for foreignChildren's windows of query characters, one slice per depth (it recurses). */
  window: Uint16Array;
  /** childRun's answer, [a, b). */
  run: Int32Array;
  /** Cells 0..capCol may hold at most capVal edits (more is pruned): a forward/backward half; capCol -1 for none. */
  capCol: number;
  capVal: number;
}

/** Emits every term of `table` within `maxCost` (0, 1 or 2) edits of `query` (or of a prefix of it, with `prefix`). */
export function enumerateTerms(table: StringTable, query: string, maxCost: number, prefix: boolean, emit: Emit, emitRange?: EmitRange): void {
  if (!(maxCost >= 0 && maxCost <= 2)) throw new RangeError(`typo budget ${maxCost}: 0, 1 or 2`);
  const size = table.size;
  if (size === 0) return;
  const range: EmitRange =
    emitRange ??
    ((lo, hi, cost) => {
      for (let i = lo; i < hi; i++) emit(i, cost);
    });
  if (maxCost === 0) {
    if (prefix) {
      const [lo, hi] = table.prefixRange(query);
      if (hi > lo) range(lo, hi, 0);
    } else {
      const i = table.find(query);
      if (i >= 0) emit(i, 0);
    }
    return;
  }
  const m = query.length;
  const q = new Uint16Array(m);
  for (let i = 0; i < m; i++) q[i] = query.charCodeAt(i);
  // (a table walked only a few times, as in a one-query CLI process, goes without one)
  const warm = table.warmHeads();
  if (warm && !prefix && m >= FB_MIN) forwardBackward(table, warm, q, maxCost, emit);
  else if (warm && prefix && m >= FT_MIN) forwardTails(table, warm, q, maxCost, emit, range);
  else walk(table, warm, q, maxCost, prefix, emit, range, -1, maxCost);
}

/** A typo walk without prefix matching is split in two (forwardBackward) for queries this long. */
const FB_MIN = 4;
/**
 * With 2 typos allowed, q2 is the query's last 3 units (with 1, its longer half): of the
 * lengths tried on replayed 2-typo walks (2, 3, 4, half the query), 3 took the least time.
 * Forwards, q1 within one edit still fans out at the top of the trie; backwards, an exact
 * suffix of 3 leaves few nodes.
 */
const FB_SUFFIX_2 = 3;

/**
 * A typo walk without prefix matching, as two narrow walks (a forward/backward
 * dictionary, after Mihov & Schulz, "Fast approximate search in large dictionaries", 2004).
 * Split the query in q1 q2 (q2 its last FB_SUFFIX_2 units with 2 typos allowed, its longer
 * half with 1):
 *
 *   forward:   the table, q1 within one edit less than the budget, then the whole budget
 *   backward:  the reversed table, reverse(q2) exactly, then the whole budget
 *
 *   "documentaion", 2 typos: forwards "documenta" within 1 ("documentat" ... "documentation");
 *   backwards "noi" exactly ("noitatnemucod")
 *
 * The halves are columns of the edit-distance table, so each walk is the usual one with the
 * cells on its own side capped: q1's at maxCost - 1 forwards, q2's at 0 backwards. The
 * forward walk finds every term with an alignment that stays within its cap up to the end
 * of q1 (a transposition's skipped cell included: the walk must reach the row between).
 * Any other alignment within the budget has spent it all by then, so it matches q2 exactly
 * from q2's first column on, and the backward walk finds it. The top of the trie, where a
 * plain walk meets most of its nodes, is walked within one edit less, or exactly.
 *
 * Each walk's cells are never below the plain distance, and a term the forward walk misses
 * is exactly maxCost away, so a term is emitted once (by the forward walk when both find
 * it) with its exact distance.
 */
function forwardBackward(table: StringTable, warm: HeadIndex, q: Uint16Array, maxCost: number, emit: Emit): void {
  const m = q.length;
  const h = maxCost === 2 ? m - FB_SUFFIX_2 : m >> 1;
  const nf = forwardHalf(table, warm, q, maxCost, false, h, emit, NO_RANGE);
  const rev = table.reversed();
  const rq = new Uint16Array(m);
  for (let k = 0; k < m; k++) rq[k] = q[m - 1 - k]!;
  walk(
    rev.table,
    rev.table.warmHeads(),
    rq,
    maxCost,
    false,
    (r, cost) => {
      const i = rev.ids[r]!;
      if (!foundForward(nf, i)) emit(i, cost);
    },
    NO_RANGE,
    m - h,
    0,
  );
}

/**
 * The forward half of a split walk: q[0..h)'s cells capped at one edit less than the
 * budget. What it emits is recorded (noteForward); returns the count foundForward takes.
 */
function forwardHalf(table: StringTable, warm: HeadIndex, q: Uint16Array, maxCost: number, prefix: boolean, h: number, emit: Emit, range: EmitRange): number {
  let nf = 0;
  const note: Emit = (i, cost) => {
    nf = noteForward(nf, i, i + 1);
    emit(i, cost);
  };
  const noteRange: EmitRange = (lo, hi, cost) => {
    nf = noteForward(nf, lo, hi);
    range(lo, hi, cost);
  };
  walk(table, warm, q, maxCost, prefix, note, prefix ? noteRange : NO_RANGE, h - 1, maxCost - 1);
  return nf;
}

/** Records that the forward half of a split walk emitted [lo, hi), in SCRATCH.forward; returns the new count of numbers there. */
function noteForward(n: number, lo: number, hi: number): number {
  if (n + 2 > SCRATCH.forward.length) SCRATCH.forward = grown(SCRATCH.forward, SCRATCH.forward.length * 2);
  SCRATCH.forward[n] = lo;
  SCRATCH.forward[n + 1] = hi;
  return n + 2;
}

/** Did the forward half emit entry x (one of the first n numbers of SCRATCH.forward's ranges)? A few dozen ranges: scanned. */
function foundForward(n: number, x: number): boolean {
  const forward = SCRATCH.forward;
  for (let r = 0; r < n; r += 2) if (forward[r]! <= x && x < forward[r + 1]!) return true;
  return false;
}

/** A prefix walk is split (forwardTails) for queries this long; the part looked up exactly is the last FT_SUFFIX units. */
const FT_MIN = 6;
const FT_SUFFIX = 4;

/**
 * A typo walk with prefix matching, split as forwardBackward splits one without. A term
 * matches when one of its prefixes p is within the budget of the query, so there is no end
 * to walk back from; instead, with q = q1 q2 (q2 its last FT_SUFFIX units):
 *
 *   forward:  the walk, q1's cells capped at one edit less than the budget
 *   the rest: alignments that spent the whole budget by the end of q1, then match q2
 *             exactly, so p = p1 q2 with p1 within the budget of q1: the terms holding q2
 *             at an offset |q1| - budget .. |q1| + budget, from the tails index at each
 *             offset (StringTable.tails), each checked with the plain distance and emitted
 *             unless the forward walk did
 *
 * Split this way, replayed prefix walks of 1 and 2 typos both take less time than whole
 * walks; of the lengths of q2 tried (3 to 6 units), 4 gains the most. The tails index
 * costs 4 bytes per entry per offset, built the first time an offset is needed.
 */
function forwardTails(table: StringTable, warm: HeadIndex, q: Uint16Array, maxCost: number, emit: Emit, range: EmitRange): void {
  const m = q.length;
  const h = m - FT_SUFFIX; // q1 = q[0..h), q2 = q[h..m)
  const nf = forwardHalf(table, warm, q, maxCost, true, h, emit, range);
  const { offsets, chars } = table;
  const lead = q[h]!;
  let nc = 0;
  for (let o = Math.max(0, h - maxCost); o <= h + maxCost; o++) {
    const tails = table.tails(o);
    for (let at = firstTail(offsets, chars, tails, o, lead, q, h + 1, m); at < tails.length; at++) {
      const x = tails[at]!;
      if (continuationCompare(offsets, chars, x, o, lead, q, h + 1, m) !== 0) break;
      if (!foundForward(nf, x)) nc = addCandidate(nc, x);
    }
  }
  // (a term can hold q2 at two offsets: emitted once)
  emitCandidates(offsets, chars, nc, q, maxCost, true, emit);
}

/** The first of `tails` (StringTable.tails(at)) whose entry is >= lead + q[r..m) from unit `at` on. */
function firstTail(offsets: Uint32Array, chars: Uint16Array, tails: Int32Array, at: number, lead: number, q: Uint16Array, r: number, m: number): number {
  let lo = 0;
  let up = tails.length;
  while (lo < up) {
    const mid = (lo + up) >>> 1;
    if (continuationCompare(offsets, chars, tails[mid]!, at, lead, q, r, m) < 0) lo = mid + 1;
    else up = mid;
  }
  return lo;
}

/** Appends entry x to the candidates in SCRATCH.cands; returns their new count. */
function addCandidate(nc: number, x: number): number {
  if (nc === SCRATCH.cands.length) SCRATCH.cands = grown(SCRATCH.cands, nc * 2);
  SCRATCH.cands[nc] = x;
  return nc + 1;
}

/** Emits the first nc candidates of SCRATCH.cands, each once, that are within maxCost by the plain distance. */
function emitCandidates(offsets: Uint32Array, chars: Uint16Array, nc: number, q: Uint16Array, maxCost: number, prefix: boolean, emit: Emit): void {
  if (nc === 0) return;
  const cands = SCRATCH.cands.subarray(0, nc).sort();
  for (let c = 0; c < nc; c++) {
    const x = cands[c]!;
    if (c > 0 && cands[c - 1] === x) continue;
    const cost = boundedDistance(chars, offsets[x]!, offsets[x + 1]!, q, q.length, maxCost, prefix);
    if (cost <= maxCost) emit(x, cost);
  }
}

const NO_RANGE: EmitRange = () => {
  throw new Error('a walk without prefix matching emits no ranges');
};

/** May cell k of a row hold v edits: within the budget, and within capVal up to column capCol (a split walk's half)? */
function mayHold(k: number, v: number, maxCost: number, capCol: number, capVal: number): boolean {
  return v <= maxCost && !(k <= capCol && v > capVal);
}

/** One walk of `table` (see enumerateTerms), its cells 0..capCol capped at capVal edits. */
function walk(table: StringTable, warm: HeadIndex | null, q: Uint16Array, maxCost: number, prefix: boolean, emit: Emit, range: EmitRange, capCol: number, capVal: number): void {
  const m = q.length;
  const size = table.size;
  if (size === 0) return;
  const maxDepth = prefix ? 1 << 30 : m + maxCost;
  const depthCap = prefix ? 64 : maxDepth + 1;
  // (rows are reused from walk to walk: a row's cells outside its band are never read,
  // except cell m, which childRow sets "too far" when outside the band)
  const rows = scratchRows(depthCap + 2, m + 1);
  for (let j = 0; j <= m; j++) rows[0]![j] = mayHold(j, j, maxCost, capCol, capVal) ? j : maxCost + 1;
  const heads = warm ?? NO_HEADS;
  // (with the head index warm, so are the tails: spent nodes at depths 2 and 3 are then
  // looked up all at once; a cold table walks as before)
  const tails: (Int32Array | null)[] = new Array<Int32Array | null>(TAILS_BELOW).fill(null);
  if (warm && maxCost === 2) for (let d = 2; d < TAILS_BELOW; d++) tails[d] = table.tails(d);
  const w: Walk = {
    offsets: table.offsets,
    chars: table.chars,
    q,
    m,
    maxCost,
    prefix,
    maxDepth: Math.min(maxDepth, depthCap),
    rows,
    labels: SCRATCH.labels.length >= depthCap + 2 ? SCRATCH.labels : (SCRATCH.labels = new Int32Array(depthCap + 2)),
    found: SCRATCH.found,
    emit,
    emitRange: range,
    h1: heads.h1,
    h2: heads.h2,
    c3: heads.c3,
    label3: heads.label3,
    start3: heads.start3,
    tails,
    spent: SCRATCH.spent,
    nSpent: SCRATCH.nSpent.fill(0),
    window: SCRATCH.window.length >= (depthCap + 2) * WINDOW ? SCRATCH.window : (SCRATCH.window = new Uint16Array((depthCap + 2) * WINDOW)),
    run: SCRATCH.run,
    capCol,
    capVal,
  };
  visit(w, 0, size, 0, prefix ? m : 1 << 30);
  for (let d = 0; d < tails.length; d++) if (w.nSpent[d]! > 0) spentAtDepth(w, d);
}

/** Spent nodes at depths 2 up to this (exclusive) are looked up through StringTable.tails. */
const TAILS_BELOW = 4;

/** Room for a window of query characters (foreignChildren), for any typo budget up to 2. */
const WINDOW = 6;

/**
 * Scratch reused by every walk (walks run one at a time, and never inside one another).
 * Hot: a query walks each token once per field and segment, and a prefix walk needs dozens
 * of rows: they are allocated once, not for every walk.
 */
const SCRATCH = {
  rows: [] as Int32Array[],
  labels: new Int32Array(80),
  found: new Int32Array(4 * (2 * 2 + 1)),
  spent: Array.from({ length: TAILS_BELOW }, () => new Int32Array(1024)),
  nSpent: new Int32Array(TAILS_BELOW),
  window: new Uint16Array(80 * WINDOW),
  /** spentAtDepth's candidates, and boundedDistance's three rows. */
  cands: new Int32Array(256),
  run: new Int32Array(2),
  dist: [0, 1, 2].map(() => new Int32Array(64)),
  /** forwardBackward's forward finds. */
  forward: new Int32Array(64),
};

/** `n` rows of at least `width` cells, from SCRATCH. */
function scratchRows(n: number, width: number): Int32Array[] {
  const rows = SCRATCH.rows;
  if (rows.length > 0 && rows[0]!.length < width) rows.length = 0;
  while (rows.length < n) rows.push(new Int32Array(Math.max(width, 32)));
  return rows;
}

/**
 * All the terms below the spent nodes met at `depth`, at once. Each is some node's label
 * P, then one of the continuations the node-by-node lookup (`exhausted`) would try:
 *
 *   q[k-1..m)            k in the row's band: a cell at maxCost, then the rest exactly
 *   q[k-2] + q[k..m)     a transposition completed by the next character
 *
 * The tails index (StringTable.tails) lists the terms by what follows their first `depth`
 * units, so each continuation is one binary search over the whole table, not one per
 * node: a 2-typo walk of the Debian `name` dictionary met ~720 spent nodes at depth 2 and
 * made ~2,200 such searches there. A term found so is kept when it lies below a spent node
 * of this walk (the others were walked into, or pruned), and is checked with the plain
 * distance before it is emitted: a superset, then exact.
 */
function spentAtDepth(w: Walk, depth: number): void {
  const { offsets, chars, q, m, maxCost, prefix } = w;
  const tails = w.tails[depth]!;
  const spent = w.spent[depth]!;
  const ns = w.nSpent[depth]!;
  const kLo = bandLo(depth + 1, maxCost);
  const kHi = bandHi(depth + 1, maxCost, m);
  let nc = 0;
  for (let k = kLo; k <= kHi; k++) {
    for (let tr = 0; tr < 2; tr++) {
      if (tr === 1 && k < 2) continue;
      const lead = tr === 0 ? q[k - 1]! : q[k - 2]!;
      const want = depth + 1 + m - k;
      for (let at = firstTail(offsets, chars, tails, depth, lead, q, k, m); at < tails.length; at++) {
        const x = tails[at]!;
        if (continuationCompare(offsets, chars, x, depth, lead, q, k, m) !== 0) break;
        // (equal tails sort before longer ones: without prefix matching, the rest are too long)
        if (!prefix && offsets[x + 1]! - offsets[x]! !== want) break;
        if (inSpent(spent, ns, x)) nc = addCandidate(nc, x);
      }
    }
  }
  emitCandidates(offsets, chars, nc, q, maxCost, prefix, w.emit);
}

/** Is entry x inside one of the n [lo, hi) ranges of `spent` (sorted, disjoint)? */
function inSpent(spent: Int32Array, n: number, x: number): boolean {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (spent[mid * 2 + 1]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && spent[lo * 2]! <= x;
}

/**
 * The OSA distance between the term chars[a..b) and q (with `prefix`, between q and the
 * term's closest prefix), or maxCost + 1 once it must exceed maxCost.
 */
function boundedDistance(chars: Uint16Array, a: number, b: number, q: Uint16Array, m: number, maxCost: number, prefix: boolean): number {
  const rows = SCRATCH.dist;
  if (rows[0]!.length <= m) for (let r = 0; r < 3; r++) rows[r] = new Int32Array(m + 1);
  let pp = rows[0]!;
  let p = rows[1]!;
  let c = rows[2]!;
  for (let j = 0; j <= m; j++) p[j] = j;
  let best = p[m]!;
  let prevMin = 0;
  for (let i = 1; i <= b - a; i++) {
    const ch = chars[a + i - 1]!;
    const pch = i > 1 ? chars[a + i - 2]! : -1;
    c[0] = i;
    let rowMin = i;
    for (let j = 1; j <= m; j++) {
      const qj = q[j - 1]!;
      let v = p[j - 1]! + (qj === ch ? 0 : 1);
      if (p[j]! + 1 < v) v = p[j]! + 1;
      if (c[j - 1]! + 1 < v) v = c[j - 1]! + 1;
      if (i > 1 && j > 1 && qj === pch && q[j - 2] === ch && pp[j - 2]! + 1 < v) v = pp[j - 2]! + 1;
      c[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (c[m]! < best) best = c[m]!;
    // (a later row's cells come from this one or, by a transposition, the one before)
    if (rowMin > maxCost && prevMin > maxCost) break;
    prevMin = rowMin;
    const t = pp;
    pp = p;
    p = c;
    c = t;
  }
  if (!prefix) best = p[m]!;
  return best <= maxCost ? best : maxCost + 1;
}

const NO_HEAD = new Int32Array(0);
const NO_HEADS: HeadIndex = { h1: NO_HEAD, h2: NO_HEAD, c3: NO_HEAD, label3: new Uint16Array(0), start3: NO_HEAD };

/** End of the run of terms in [i, hi) whose code unit at `depth` equals `ch` (galloping, then binary search). */
function runEnd(offsets: Uint32Array, chars: Uint16Array, i: number, hi: number, depth: number, ch: number): number {
  let bound = 1;
  while (i + bound < hi && chars[offsets[i + bound]! + depth] === ch) bound *= 2;
  let a = i + (bound >> 1) + 1; // every index before `a` is known to be in the run
  let b = i + bound < hi ? i + bound : hi; // `b` is known to be past it (or the end)
  while (a < b) {
    const mid = (a + b) >>> 1;
    if (chars[offsets[mid]! + depth] === ch) a = mid + 1;
    else b = mid;
  }
  return a;
}

function visit(w: Walk, lo: number, hi: number, depth: number, best: number): void {
  const { offsets, chars, q, m, maxCost, prefix } = w;
  const prev = w.rows[depth]!;
  let i = lo;
  if (i < hi && offsets[i + 1]! - offsets[i]! === depth) {
    const c = prefix ? (best < prev[m]! ? best : prev[m]!) : prev[m]!;
    if (c <= maxCost) w.emit(i, c);
    i++;
  }
  if (depth >= w.maxDepth || i >= hi) return;
  // At depths 0 and 1 a child's run (for an ASCII character) comes from the head index.
  // (An empty head stands for "none": every lookup then takes the search.)
  const head = depth === 0 ? w.h1 : depth === 1 && w.labels[0]! < 128 ? w.h2 : NO_HEAD;
  const hb = depth === 1 ? w.labels[0]! * 129 : 0;
  const headed = head.length > 0;
  // At depth 2 (below two ASCII characters) the children are the node's triples, kid..kidEnd.
  let kid = 0;
  let kidEnd = 0;
  if (depth === 2 && w.c3.length > 0 && w.labels[0]! < 128 && w.labels[1]! < 128) {
    const slot = w.labels[0]! * 129 + w.labels[1]!;
    kid = w.c3[slot]!;
    kidEnd = w.c3[slot + 1]!;
    if (kid === kidEnd) return;
  }
  // Spent: most nodes below the first levels are like this. (isSpent's test, written out:
  // visit is too large for V8 to inline it, and through the call the walks took longer.)
  const kLo = bandLo(depth + 1, maxCost);
  const kHi = bandHi(depth + 1, maxCost, m);
  if (depth >= maxCost && !(prefix && best <= maxCost) && rowFloor(prev, kLo - 1, kHi) >= maxCost) {
    if (depth < w.tails.length && w.tails[depth] !== null) {
      // looked up with the other spent nodes of this depth once the walk is done
      addSpent(w, depth, lo, hi);
      return;
    }
    // Continuations: a lead character, then q[r..m) exactly. A cell at maxCost continues
    // only by matching q from there on; a transposition completed by the child costs
    // exactly maxCost too (its parent cell is at least maxCost - 1), then the same.
    const found = w.found;
    let nf = 0;
    for (let k = kLo; k <= kHi; k++) if (prev[k - 1]! <= maxCost) nf = exhausted(w, i, hi, depth, head, hb, kid, kidEnd, q[k - 1]!, k, nf);
    if (depth > 0) {
      const pprev = w.rows[depth - 1]!;
      const pch = w.labels[depth - 1]!;
      for (let k = kLo > 2 ? kLo : 2; k <= kHi; k++) if (q[k - 1] === pch && pprev[k - 2]! + 1 <= maxCost) nf = exhausted(w, i, hi, depth, head, hb, kid, kidEnd, q[k - 2]!, k, nf);
    }
    // Each term once. Exact finds never repeat: continuations of one length differ in their
    // lead, as a transposition's lead q[k-2] equal to q[k-1] would have left a cell below
    // maxCost. Prefix ranges can nest ("ab" holds "abc"): keep the outermost.
    for (let x = 0; x < nf; x += 2) {
      if (!prefix) {
        w.emit(found[x]!, maxCost);
        continue;
      }
      const a = found[x]!;
      const b = found[x + 1]!;
      let covered = false;
      for (let y = 0; y < nf && !covered; y += 2) {
        if (y === x) continue;
        const c = found[y]!;
        const e = found[y + 1]!;
        covered = c <= a && b <= e && (c < a || e > b || y < x);
      }
      if (!covered) w.emitRange(a, b, maxCost);
    }
    return;
  }
  if (hi - i >= FOREIGN_MIN && foreignChildren(w, i, hi, depth, best, head, hb, kid, kidEnd)) return;
  if (kid < kidEnd) {
    const { label3, start3 } = w;
    for (let x = kid; x < kidEnd; x++) child(w, start3[x]!, x + 1 < kidEnd ? start3[x + 1]! : hi, depth, label3[x]!, best);
    return;
  }
  while (i < hi) {
    const ch = chars[offsets[i]! + depth]!;
    const j = headed && ch < 128 ? head[hb + ch + 1]! : runEnd(offsets, chars, i, hi, depth, ch);
    child(w, i, j, depth, ch, best);
    i = j;
  }
}

/** Below this many entries a node's children are simply visited one by one. */
const FOREIGN_MIN = 12;

/** Records the spent node [lo, hi) at `depth` for spentAtDepth. */
function addSpent(w: Walk, depth: number, lo: number, hi: number): void {
  const n = w.nSpent[depth]!;
  let spent = w.spent[depth]!;
  if (n * 2 + 2 > spent.length) spent = w.spent[depth] = grown(spent, spent.length * 2);
  spent[n * 2] = lo;
  spent[n * 2 + 1] = hi;
  w.nSpent[depth] = n + 1;
}

/**
 * Children whose label is foreign to the query: a label that equals none of the query's
 * characters the child's row compares it with (q[kLo-1 .. kHi-1]) gets the same row
 * whatever it is. (A transposition also compares it with q[kLo-2], but only for the
 * band's first cell, which it cannot bring within the budget: that cell of the row two
 * up is at least maxCost.) That row is computed once; when it is pruned (every cell over the
 * budget), or spent with the tails index at the child's depth, none of the foreign
 * children needs a visit: only the few children labelled with a window character are
 * visited, and the runs between them are recorded as spent (or skipped, when pruned).
 *
 *   query "python", node "z" (depth 1): window p y t h; the children "za" .. "zz" other
 *   than "zh", "zp", "zt", "zy" share one row (2 2 2 3 ...): spent, so those ~20 children
 *   are one or a few ranges for spentAtDepth instead of ~20 visits
 *
 * Returns false (nothing done) when the foreign row would need its children walked.
 */
function foreignChildren(w: Walk, i: number, hi: number, depth: number, best: number, head: Int32Array, hb: number, kid: number, kidEnd: number): boolean {
  const { q, m, maxCost, prefix } = w;
  const rowMin = childRow(w, depth, -1);
  const cur = w.rows[depth + 1]!;
  const nb = prefix ? (best < cur[m]! ? best : cur[m]!) : best;
  if (prefix && nb <= maxCost) return false;
  const cd = depth + 1;
  // (spent: with a tails index at the child's depth, and no foreign child's own term within the budget)
  const spentForeign = rowMin <= maxCost;
  if (spentForeign && !(cd < w.tails.length && w.tails[cd] !== null && cur[m]! > maxCost && isSpent(w, cur, cd, nb, bandLo(cd + 1, maxCost), bandHi(cd + 1, maxCost, m)))) return false;
  // the window's characters, sorted and distinct: at most 2 x maxCost + 1 of them, put in
  // order by insertion in this depth's slot of w.window (hot: ~150 calls a search, and the
  // typed-array subarray + sort used here before allocated two array views per call)
  const kLo = bandLo(cd, maxCost);
  const kHi = bandHi(cd, maxCost, m);
  const labels = w.window;
  const base = depth * WINDOW;
  let end = base;
  for (let k = kLo - 1; k < kHi; k++) {
    const ch = q[k]!;
    let p = end++;
    while (p > base && labels[p - 1]! > ch) {
      labels[p] = labels[p - 1]!;
      p--;
    }
    labels[p] = ch;
  }
  let at = i; // start of the entries not yet accounted for
  for (let x = base; x < end; x++) {
    const ch = labels[x]!;
    if (x > base && labels[x - 1] === ch) continue;
    // the child labelled ch: [a, b)
    if (!childRun(w, at, hi, depth, head, hb, kid, kidEnd, ch, true)) continue;
    const a = w.run[0]!;
    const b = w.run[1]!;
    if (spentForeign && a > at) addSpent(w, cd, at, a);
    child(w, a, b, depth, ch, best);
    at = b;
  }
  if (spentForeign && hi > at) addSpent(w, cd, at, hi);
  return true;
}

/**
 * The child labelled `ch` of the node [i, hi) at `depth`, into w.run as [a, b); false when
 * there is none. At depths 0 to 2 from the head index (head/hb, or the triples kid..kidEnd);
 * deeper by binary search when `search`, else the whole node (the caller searches it).
 */
function childRun(w: Walk, i: number, hi: number, depth: number, head: Int32Array, hb: number, kid: number, kidEnd: number, ch: number, search: boolean): boolean {
  let a = i;
  let b = hi;
  if (head.length > 0 && ch < 128) {
    a = head[hb + ch]!;
    b = head[hb + ch + 1]!;
  } else if (kid < kidEnd) {
    const label3 = w.label3;
    let y = kid;
    while (y < kidEnd && label3[y]! < ch) y++;
    if (y === kidEnd || label3[y] !== ch) return false;
    a = w.start3[y]!;
    b = y + 1 < kidEnd ? w.start3[y + 1]! : hi;
  } else if (search) {
    const { offsets, chars } = w;
    let up = hi;
    while (a < up) {
      const mid = (a + up) >>> 1;
      if (chars[offsets[mid]! + depth]! < ch) a = mid + 1;
      else up = mid;
    }
    b = a < hi && chars[offsets[a]! + depth] === ch ? runEnd(offsets, chars, a, hi, depth, ch) : a;
  }
  w.run[0] = a;
  w.run[1] = b;
  return a < b;
}

/**
 * The terms below a spent node (every cell at maxCost) that continue with `lead` and then
 * exactly q[r..m): one binary search instead of a walk, since no deeper row could differ.
 * Appends the match to w.found as [lo, hi) (prefix: every term starting so; otherwise the
 * one equal term, as [index, index + 1)); returns the new count.
 */
function exhausted(w: Walk, i: number, hi: number, depth: number, head: Int32Array, hb: number, kid: number, kidEnd: number, lead: number, r: number, nf: number): number {
  const { offsets, chars, q, m } = w;
  // (at depths 0 to 2 the head index narrows the search to the lead's run first: childRun's
  // first two cases, written out: through the call, the walks took longer)
  let a = i;
  let b = hi;
  if (head.length > 0 && lead < 128) {
    a = head[hb + lead]!;
    b = head[hb + lead + 1]!;
    if (a >= b) return nf;
  } else if (kid < kidEnd) {
    const label3 = w.label3;
    let x = kid;
    while (x < kidEnd && label3[x]! < lead) x++;
    if (x === kidEnd || label3[x] !== lead) return nf;
    a = w.start3[x]!;
    b = x + 1 < kidEnd ? w.start3[x + 1]! : hi;
  }
  // first entry of [a, b) that is >= lead + q[r..m) from `depth` on (starting with it counts as equal)
  let lo = a;
  let up = b;
  while (lo < up) {
    const mid = (lo + up) >>> 1;
    if (continuationCompare(offsets, chars, mid, depth, lead, q, r, m) < 0) lo = mid + 1;
    else up = mid;
  }
  if (lo >= b || continuationCompare(offsets, chars, lo, depth, lead, q, r, m) !== 0) return nf;
  let end: number;
  if (w.prefix) {
    up = b;
    let x = lo + 1;
    while (x < up) {
      const mid = (x + up) >>> 1;
      if (continuationCompare(offsets, chars, mid, depth, lead, q, r, m) === 0) x = mid + 1;
      else up = mid;
    }
    end = x;
  } else {
    if (offsets[lo + 1]! - offsets[lo]! !== depth + 1 + m - r) return nf;
    end = lo + 1;
  }
  w.found[nf] = lo;
  w.found[nf + 1] = end;
  return nf + 2;
}

/** Compares entry x's code units from `at` with lead + q[r..m): < 0, 0 when the entry starts with it, > 0. */
function continuationCompare(offsets: Uint32Array, chars: Uint16Array, x: number, at: number, lead: number, q: Uint16Array, r: number, m: number): number {
  let p = offsets[x]! + at;
  const end = offsets[x + 1]!;
  if (p >= end) return -1;
  const d0 = chars[p]! - lead;
  if (d0 !== 0) return d0;
  p++;
  for (let k = r; k < m; k++, p++) {
    if (p >= end) return -1;
    const d = chars[p]! - q[k]!;
    if (d !== 0) return d;
  }
  return 0;
}

/** First and last cells (1..m) of the band row `d` computes: |k - d| <= maxCost; the rest exceed maxCost anyway. */
function bandLo(d: number, maxCost: number): number {
  return d - maxCost > 1 ? d - maxCost : 1;
}

function bandHi(d: number, maxCost: number, m: number): number {
  return d + maxCost < m ? d + maxCost : m;
}

/**
 * Spent: the node at `depth` with this row (its children's band kLo..kHi) (and best prefix cost `best`) has every cell
 * its children read at the whole typo budget, so only exact continuations of the query
 * survive below (see the header). Never with prefix matching already satisfied: then
 * every child is emitted.
 */
function isSpent(w: Walk, row: Int32Array, depth: number, best: number, kLo: number, kHi: number): boolean {
  const { maxCost } = w;
  return depth >= maxCost && !(w.prefix && best <= maxCost) && rowFloor(row, kLo - 1, kHi) >= maxCost;
}

/** Smallest cell of row[a..b]. */
function rowFloor(row: Int32Array, a: number, b: number): number {
  let min = row[a]!;
  for (let k = a + 1; k <= b; k++) if (row[k]! < min) min = row[k]!;
  return min;
}

/** The child [i, j) of a node at `depth`, labelled `ch`: its row of the table, then deeper. */
function child(w: Walk, i: number, j: number, depth: number, ch: number, best: number): void {
  const { m, maxCost, prefix } = w;
  const rowMin = childRow(w, depth, ch);
  const cur = w.rows[depth + 1]!;
  w.labels[depth] = ch;
  const nb = prefix ? (best < cur[m]! ? best : cur[m]!) : best;
  if (rowMin <= maxCost) {
    if (prefix && nb === 0) w.emitRange(i, j, 0);
    else visit(w, i, j, depth + 1, nb);
  } else if (prefix && nb <= maxCost) {
    w.emitRange(i, j, nb);
  }
}

/** Fills the row of a child labelled `ch` (-1: a label equal to no query character) below the node at `depth`; returns its smallest cell. */
function childRow(w: Walk, depth: number, ch: number): number {
  const { q, m, maxCost, capCol, capVal } = w;
  const prev = w.rows[depth]!;
  const cur = w.rows[depth + 1]!;
  const pprev = depth > 0 ? w.rows[depth - 1]! : null;
  const pch = depth > 0 ? w.labels[depth - 1]! : -1;
  // Row d = depth + 1 only needs cells |k - d| <= maxCost; the rest exceed maxCost anyway.
  const d = depth + 1;
  // (bandLo and bandHi, written out: this is the walk's hottest loop)
  const kLo = d - maxCost > 1 ? d - maxCost : 1;
  const kHi = d + maxCost < m ? d + maxCost : m;
  const far = maxCost + 1;
  cur[0] = mayHold(0, d, maxCost, capCol, capVal) ? d : far;
  if (kLo > 1) cur[kLo - 1] = far;
  if (kHi < m) cur[kHi + 1] = far;
  if (m < kLo - 1 || m > kHi + 1) cur[m] = far;
  let rowMin = cur[0]!;
  for (let k = kLo; k <= kHi; k++) {
    const qk = q[k - 1]!;
    let v = prev[k - 1]! + (qk === ch ? 0 : 1);
    const del = prev[k]! + 1;
    if (del < v) v = del;
    const ins = cur[k - 1]! + 1;
    if (ins < v) v = ins;
    if (pprev !== null && k > 1 && qk === pch && q[k - 2] === ch) {
      const t = pprev[k - 2]! + 1;
      if (t < v) v = t;
    }
    // (mayHold, written out: the walk's hottest line)
    if (v > far || (k <= capCol && v > capVal)) v = far;
    cur[k] = v;
    if (v < rowMin) rowMin = v;
  }
  return rowMin;
}
