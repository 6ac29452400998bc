/** Fathom's version, reported by `fathom --version` and `GET /debug`. */
export const VERSION = '0.1.0';

/**
 * The Typesense API generation Fathom implements, reported as `version` by `GET /debug`:
 * clients (and the typesense client's own test suite) choose features by its major
 * number. v30: synonym and curation sets, the flat analytics rule shape and its query
 * events, `truncate_len`, GET /analytics/status. Every route also takes and answers v29's
 * shapes (per-collection synonyms and overrides, v1 analytics rules), so a client of
 * either generation works (docs/compatibility.md lists what differs).
 */
export const API_VERSION = 'v30.0';
