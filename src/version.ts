/** Fathom's version, reported by `fathom --version` and `GET /debug`. */
export const VERSION = '0.1.0';

/**
 * The Typesense API generation Fathom implements, reported as `version` by `GET /debug`:
 * clients (and the typesense client's own test suite) choose features by its major
 * number. v29: conversations and natural-language search models, union search, geo
 * search; v30's synonym and curation sets and its analytics rule shape are not Fathom's.
 */
export const API_VERSION = 'v29.0';
