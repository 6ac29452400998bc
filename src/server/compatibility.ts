/**
 * src/server/compatibility.ts: every route of the reference's HTTP API (Typesense 29 and
 * 30) and its state in Fathom, declared once. `npm run docs` writes docs/compatibility.md
 * from this table and the search parameter table (src/query/parameters.ts), and a test
 * holds the table to the app: every route marked served is one, every route marked absent
 * is not.
 *
 * States: `same` (as the reference documents it), `lenient` (served; what differs is in the
 * note), `refused` (answers 400 saying why), `absent` (not implemented: 404, or 405 where
 * the path serves other methods).
 */
import { REFERENCE_ONLY_PARAMETERS, SEARCH_PARAMETERS, type CompatState } from '../query/parameters.js';
import { API_VERSION } from '../version.js';

export interface ReferenceRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  /** The generation that has it: both, or only one. */
  since: 'v29' | 'v30' | 'both';
  state: CompatState;
  note?: string;
}

const r = (method: ReferenceRoute['method'], path: string, state: CompatState, note?: string, since: ReferenceRoute['since'] = 'both'): ReferenceRoute => ({
  method,
  path,
  since,
  state,
  ...(note ? { note } : {}),
});

export const REFERENCE_ROUTES: readonly ReferenceRoute[] = [
  // collections
  r('POST', '/collections', 'lenient', '`src_name` copies the schema only; a field\'s own `truncate_len` is kept and shown, tokens are cut at 100 characters whatever it says'),
  r('GET', '/collections', 'same', '`exclude_fields` leaves attributes out'),
  r('GET', '/collections/:collection', 'same'),
  r('PATCH', '/collections/:collection', 'lenient', 'applied in one transaction before answering (no schema change in progress to poll); the answer lists the added fields with their defaults rather than echoing the body'),
  r('DELETE', '/collections/:collection', 'lenient', '`compact_store` is ignored: deleted pages are reused, `POST /operations/db/compact` gives them back'),
  // documents
  r('POST', '/collections/:collection/documents', 'same', '`action`, `dirty_values`'),
  r('GET', '/collections/:collection/documents/:id', 'same', '`include_fields`, `exclude_fields`'),
  r('PATCH', '/collections/:collection/documents/:id', 'same', '`dirty_values`'),
  r('DELETE', '/collections/:collection/documents/:id', 'same', '`ignore_not_found`'),
  r('PATCH', '/collections/:collection/documents', 'same', 'update by `filter_by`'),
  r('DELETE', '/collections/:collection/documents', 'lenient', 'delete by `filter_by` (required: `id:*` deletes every document), `batch_size`, `ignore_not_found`; `truncate` is not implemented'),
  r('POST', '/collections/:collection/documents/import', 'same', '`action`, `batch_size`, `dirty_values`, `return_id`, `return_doc`, `remote_embedding_*`; error lines in the reference\'s words and key order'),
  r('GET', '/collections/:collection/documents/export', 'lenient', 'documents as the reference writes them (keys sorted, its number forms); `filter_by`, `include_fields`, `exclude_fields`; vector values are float32 (`0.1` exports as `0.10000000149011612`)'),
  r('GET', '/collections/:collection/documents/search', 'same', 'parameters below'),
  r('POST', '/multi_search', 'same', '`union`, `remove_duplicates`, conversations'),
  // rules
  r('GET', '/collections/:collection/synonyms', 'same', undefined, 'v29'),
  r('GET', '/collections/:collection/synonyms/:id', 'same', undefined, 'v29'),
  r('PUT', '/collections/:collection/synonyms/:id', 'same', 'answered with `root: ""` for multi-way synonyms', 'v29'),
  r('DELETE', '/collections/:collection/synonyms/:id', 'same', undefined, 'v29'),
  r('GET', '/collections/:collection/overrides', 'same', undefined, 'v29'),
  r('GET', '/collections/:collection/overrides/:id', 'same', undefined, 'v29'),
  r('PUT', '/collections/:collection/overrides/:id', 'lenient', '`includes` may name documents not there yet and `filter_by` is kept as written, as in the reference; `diversity`, `rule.synonyms`, `rule.stem` are refused', 'v29'),
  r('DELETE', '/collections/:collection/overrides/:id', 'same', undefined, 'v29'),
  ...(['synonym_sets', 'curation_sets'] as const).flatMap((set) => [
    r('GET', `/${set}`, 'same', undefined, 'v30'),
    r('GET', `/${set}/:name`, 'same', undefined, 'v30'),
    r('PUT', `/${set}/:name`, 'same', undefined, 'v30'),
    r('DELETE', `/${set}/:name`, 'same', undefined, 'v30'),
    r('GET', `/${set}/:name/items`, 'same', undefined, 'v30'),
    r('GET', `/${set}/:name/items/:id`, 'same', undefined, 'v30'),
    r('PUT', `/${set}/:name/items/:id`, 'same', 'answered with the reference\'s defaults filled in', 'v30'),
    r('DELETE', `/${set}/:name/items/:id`, 'same', undefined, 'v30'),
  ]),
  r('GET', '/presets', 'same'),
  r('GET', '/presets/:name', 'same'),
  r('PUT', '/presets/:name', 'same'),
  r('DELETE', '/presets/:name', 'same'),
  r('GET', '/stopwords', 'same'),
  r('GET', '/stopwords/:name', 'same'),
  r('PUT', '/stopwords/:name', 'same', 'words are stored tokenized and lower-cased'),
  r('DELETE', '/stopwords/:name', 'same'),
  r('POST', '/stemming/dictionaries/import', 'same'),
  r('GET', '/stemming/dictionaries', 'same'),
  r('GET', '/stemming/dictionaries/:id', 'same'),
  r('DELETE', '/stemming/dictionaries/:id', 'same'),
  // aliases and keys
  r('GET', '/aliases', 'same'),
  r('GET', '/aliases/:alias', 'same'),
  r('PUT', '/aliases/:alias', 'lenient', 'a missing collection is accepted (404 through the alias until it exists), unless references go through the alias (400)'),
  r('DELETE', '/aliases/:alias', 'same'),
  r('GET', '/keys', 'same'),
  r('GET', '/keys/:id', 'same'),
  r('POST', '/keys', 'same'),
  r('DELETE', '/keys/:id', 'same'),
  r('PATCH', '/keys/:id', 'absent', 'a key is changed by deleting it and creating another', 'v30'),
  // analytics
  r('GET', '/analytics/rules', 'same', 'a bare array in the v30 shape (a v1 rule with several sources or events shows its first), `rule_tag`'),
  r('GET', '/analytics/rules/:name', 'same', 'in the shape the rule was written in; v1 query rules show `limit` (1000 when not given)'),
  r('POST', '/analytics/rules', 'lenient', 'one rule or an array, either shape; `log` rules and `meta_fields` are refused (not implemented)'),
  r('PUT', '/analytics/rules/:name', 'lenient', 'either shape; a v30 PUT may change part of a rule'),
  r('DELETE', '/analytics/rules/:name', 'same'),
  r('POST', '/analytics/events', 'same', 'click, conversion and visit events of counter rules, query events of query rules; needs `--enable-search-analytics`'),
  r('GET', '/analytics/events', 'absent', 'lists the events of `log` rules, which are not implemented', 'v30'),
  r('POST', '/analytics/flush', 'same', '`{"ok": true}` also without analytics'),
  r('GET', '/analytics/status', 'lenient', 'counts of distinct pending queries and documents per rule type; the log counts are 0', 'v30'),
  r('POST', '/analytics/aggregate_events', 'absent', 'the reference\'s internal replication of aggregates', 'v30'),
  // conversations, natural-language search
  r('POST', '/conversations/models', 'same'),
  r('GET', '/conversations/models', 'same'),
  r('GET', '/conversations/models/:id', 'same'),
  r('PUT', '/conversations/models/:id', 'same'),
  r('DELETE', '/conversations/models/:id', 'same'),
  r('GET', '/conversations', 'same', 'conversation history kept by Fathom', 'v29'),
  r('GET', '/conversations/:id', 'same', undefined, 'v29'),
  r('PUT', '/conversations/:id', 'same', undefined, 'v29'),
  r('DELETE', '/conversations/:id', 'same', undefined, 'v29'),
  r('POST', '/nl_search_models', 'same'),
  r('GET', '/nl_search_models', 'same'),
  r('GET', '/nl_search_models/:id', 'same'),
  r('PUT', '/nl_search_models/:id', 'same'),
  r('DELETE', '/nl_search_models/:id', 'same'),
  r('POST', '/personalization/models', 'absent', 'personalization models are not implemented', 'v30'),
  r('GET', '/personalization/models', 'absent', undefined, 'v30'),
  r('GET', '/personalization/models/:id', 'absent', undefined, 'v30'),
  r('PUT', '/personalization/models/:id', 'absent', undefined, 'v30'),
  r('DELETE', '/personalization/models/:id', 'absent', undefined, 'v30'),
  // operations and metrics
  r('GET', '/health', 'same', '`resource_error: "OUT_OF_DISK"` on a full disk'),
  r('POST', '/health', 'absent'),
  r('GET', '/health_with_rusage', 'absent'),
  r('GET', '/debug', 'lenient', `\`version: "${API_VERSION}"\`, \`state\` 1 (leader) or 4; also \`fathom_version\`, \`disk\`, \`cluster\``),
  r('GET', '/metrics.json', 'same'),
  r('GET', '/stats.json', 'same'),
  r('GET', '/status', 'absent', 'the reference\'s Raft state; a cluster node reports its state on `/debug`'),
  r('POST', '/operations/snapshot', 'lenient', 'a new or empty `snapshot_path` becomes the snapshot; a non-empty one gets `snapshot-<time>` inside it (README, Operations)'),
  r('POST', '/operations/vote', 'lenient', 'a single node answers `{"success": false}`'),
  r('POST', '/operations/cache/clear', 'same'),
  r('POST', '/operations/db/compact', 'same'),
  r('POST', '/operations/reset_peers', 'absent', 'a cluster replicates through NATS JetStream, not Raft peers'),
  r('GET', '/operations/schema_changes', 'lenient', 'always `[]`: a schema change is applied before its PATCH answers'),
  r('POST', '/config', 'lenient', '`log-slow-requests-time-ms` (slow requests logged at warn level), `healthy-read-lag`, `healthy-write-lag`, `skip-writes` (kept, no effect); unknown settings are ignored as there'),
  r('GET', '/limits', 'absent', 'rate limiting is not implemented'),
  r('POST', '/limits', 'absent'),
  r('POST', '/proxy', 'absent', 'not implemented'),
];

const STATE_WORDS: Record<CompatState, string> = { same: 'same', lenient: 'lenient', refused: 'refused', absent: 'absent' };

function cell(s: string | undefined): string {
  return (s ?? '').replace(/\|/g, '\\|');
}

/** docs/compatibility.md, as `npm run docs` writes it. */
export function compatibilityMarkdown(): string {
  const routes = REFERENCE_ROUTES.map((x) => `| \`${x.method}\` | \`${x.path}\` | ${x.since === 'both' ? '29, 30' : x.since.slice(1)} | ${STATE_WORDS[x.state]} | ${cell(x.note)} |`);
  const params = [
    ...SEARCH_PARAMETERS.map((p) => ({ name: p.name, state: p.compat?.state ?? 'same', note: p.compat?.note ?? p.doc })),
    ...REFERENCE_ONLY_PARAMETERS.map((p) => ({ name: p.name, state: p.state, note: p.note })),
  ].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const paramRows = params.map((p) => `| \`${p.name}\` | ${STATE_WORDS[p.state]} | ${cell(p.note)} |`);
  const count = (s: CompatState) => REFERENCE_ROUTES.filter((x) => x.state === s).length;
  return [
    '<!-- generated by npm run docs from src/server/compatibility.ts and src/query/parameters.ts: edit those, not this file -->',
    '# Compatibility with the Typesense API',
    '',
    `Fathom serves the HTTP API of Typesense so that the official clients work unchanged. \`GET /debug\` reports \`version: "${API_VERSION}"\`:`,
    'clients choose v29 or v30 code paths by its major number, and every route takes and answers both generations\' shapes',
    '(per-collection synonyms and overrides beside synonym and curation sets, v1 analytics rules beside v30\'s), so a client of',
    'either generation works.',
    '',
    'States: **same**: as the reference documents it; **lenient**: served, and what differs is in the note (where the reference',
    'is lenient, Fathom is lenient the same way); **refused**: a 400 that says why; **absent**: not implemented (404, or 405 where',
    'the path serves other methods). A trailing slash names the same resource (`POST /collections/c/documents/` creates).',
    '',
    `## Routes (${REFERENCE_ROUTES.length}: ${count('same')} same, ${count('lenient')} lenient, ${count('absent')} absent)`,
    '',
    '| method | path | Typesense | state | notes |',
    '|---|---|---|---|---|',
    ...routes,
    '',
    `## Search parameters (${params.length})`,
    '',
    'For `GET .../documents/search` and each search of `POST /multi_search`. A parameter the reference does not have either is',
    'ignored, as the reference ignores it.',
    '',
    '| parameter | state | notes |',
    '|---|---|---|',
    ...paramRows,
    '',
    '## Shapes',
    '',
    '- Collections: every field shows `truncate_len` (100) and `stem_dictionary` (`""`), every collection `synonym_sets` and',
    '  `curation_sets` (`[]`), as the reference shows them; a schema copied from an answer is taken back.',
    '- Stopword sets answer `{id, stopwords, locale}`; a deleted one `{id}`.',
    '- Import error lines carry the reference\'s texts for a missing field, a wrong type, a duplicate id and bad JSON (the',
    '  parser\'s message, `[json.exception.parse_error.101] ...`), and its keys in its order (`code, document, error, success`).',
    '  Other failures (geopoints, images, nested objects) keep Fathom\'s own, more precise messages.',
    '- Export writes each document as the reference writes it: keys sorted by code point (`id` among them), no spaces,',
    '  integers exact, other numbers in its float form (`3.0`, `1e-05`). The digits of a float are the shortest that read back',
    '  the same, where the reference\'s Grisu2 very rarely writes one digit more.',
    '- Curation items answer `remove_matched_tokens`, `filter_curated_hits` and `stop_processing` with their defaults, synonyms',
    '  `root: ""` when multi-way.',
    '',
  ].join('\n');
}
