/**
 * search/hits.ts: the page's hits as the response shows them: the stored document (bounded
 * by a scoped key, projected, joined), highlights, and text_match_info or the vector and
 * fusion scores.
 */
import type { Store } from '../storage/store.js';
import type { Schema } from '../schema/schema.js';
import { fieldTokenizer } from '../collection/catalog.js';
import { project } from '../io/project.js';
import { loadDocument, projectionWants } from '../document/stored.js';
import { termLookup } from '../tokenizer/tokenizer.js';
import type { SearchPlan } from '../query/plan.js';
import { boundDocument, keyProjection } from '../query/scope.js';
import type { CandidateTable } from './candidates.js';
import { NO_EXTRA, type Extra } from './collectors.js';
import { highlightDocument, type HighlightField } from './highlight.js';
import { textMatchInfo } from './score.js';
import type { Hit } from './topk.js';

export interface SearchHit {
  document: Record<string, unknown>;
  highlight: Record<string, unknown>;
  highlights: Record<string, unknown>[];
  text_match?: number;
  text_match_info?: Record<string, unknown>;
  [k: string]: unknown;
}

/** The fields to highlight and the terms that matched in each (the first round's candidates). */
export function highlightFields(plan: SearchPlan, candidates: CandidateTable | undefined): HighlightField[] {
  if (!candidates) return [];
  const { schema, params, fields, words } = plan;
  const names = params.highlight_fields ?? fields.map((f) => f.field.name);
  const full = new Set(params.highlight_full_fields ?? []);
  const out: HighlightField[] = [];
  for (const name of names) {
    const fi = fields.findIndex((f) => f.field.name === name);
    const field = fi >= 0 ? fields[fi]!.field : schema.field(name);
    if (!field || field.kind !== 'text') continue;
    const terms = new Set<string>();
    const parts = new Set<string>();
    if (fi >= 0) for (const perField of candidates) for (const c of perField[fi]!) (c.part ? parts : terms).add(c.term);
    else for (const t of words.tokens) terms.add(t);
    out.push({ name, tokenizer: fieldTokenizer(schema, field), terms: termLookup(terms, parts), full: full.has(name), isArray: field.isArray });
  }
  return out;
}

/** One hit of the page. `keywordless`: no text was matched (wildcard or vector search), so no highlights. */
export function hydrate(store: Store, schema: Schema, plan: SearchPlan, h: Hit, hfields: HighlightField[], keywordless: boolean): SearchHit {
  const { params } = plan;
  const bound = keyProjection(plan.scope);
  const loaded = loadDocument(store, schema, h.seq, projectionWants(params.include_fields, params.exclude_fields)) ?? {};
  // a field the key hides is gone before highlighting, so no snippet can show it
  const doc = boundDocument(loaded, bound);
  const { highlight, highlights } = keywordless
    ? { highlight: {}, highlights: [] }
    : highlightDocument(doc, hfields, {
        startTag: params.highlight_start_tag,
        endTag: params.highlight_end_tag,
        affix: params.highlight_affix_num_tokens,
        snippetThreshold: params.snippet_threshold,
      });
  let projected = project(doc, { include: params.include_fields, exclude: params.exclude_fields });
  if (plan.decorate) projected = plan.decorate(projected, h.seq);
  const out: SearchHit = {
    document: projected,
    highlight,
    // enable_highlight_v1=false: the v1 list is left out
    highlights: params.enable_highlight_v1 ? highlights : [],
  };
  if (!params.enable_highlight_v1) delete (out as Partial<SearchHit>).highlights;
  const extra = (h.info ?? NO_EXTRA) as Extra;
  if (extra.vectorDistance !== undefined) out.vector_distance = extra.vectorDistance;
  if (extra.fusion !== undefined) out.hybrid_search_info = { rank_fusion_score: extra.fusion };
  const keywordScore = extra.fusion !== undefined ? extra.keyword : keywordless ? undefined : h.score;
  if (keywordScore !== undefined && keywordScore > 0) Object.assign(out, textMatchInfo(keywordScore, plan.words.tokens.length));
  // a document a curation rule or pinned_hits placed (src/curation/pins.ts)
  if ((h.info as { curated?: boolean } | undefined)?.curated) out.curated = true;
  return out;
}

/**
 * facet_return_parent: the object holding `value` at `field`'s path (`address.city` ->
 * the `address` object; in an array of objects, the element holding the value), in the
 * stored document of `seq`, bounded by the scoped key as hits are. Undefined when the
 * value sits at the top level or the path holds no object.
 */
export function facetParent(store: Store, schema: Schema, plan: SearchPlan, seq: number, path: string, value: string): Record<string, unknown> | undefined {
  const loaded = loadDocument(store, schema, seq);
  if (!loaded) return undefined;
  const doc = boundDocument(loaded, keyProjection(plan.scope));
  const keys = path.split('.');
  if (keys.length < 2) return undefined;
  const leaf = keys[keys.length - 1]!;
  const holds = (v: unknown): boolean => (Array.isArray(v) ? v.some(holds) : v !== null && v !== undefined && typeof v !== 'object' && String(v) === value);
  const walk = (node: unknown, depth: number): Record<string, unknown> | undefined => {
    if (Array.isArray(node)) {
      for (const el of node) {
        const found = walk(el, depth);
        if (found) return found;
      }
      return undefined;
    }
    if (node === null || typeof node !== 'object') return undefined;
    const obj = node as Record<string, unknown>;
    if (depth === keys.length - 1) return holds(obj[leaf]) ? obj : undefined;
    return walk(obj[keys[depth]!], depth + 1);
  };
  return walk(doc[keys[0]!], 1);
}
