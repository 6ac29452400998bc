/** Fathom's version, reported by `fathom --version` and `GET /debug`. */
export const VERSION = '0.1.0';
