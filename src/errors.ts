/**
 * The error catalogue: every error Fathom reports has a stable code and an HTTP status.
 *
 * Codes never change meaning once released; messages may be reworded. The CLI prints
 * `error: <message>` and exits non-zero; the HTTP API answers `{"message": ...}` with
 * the status below.
 */

export const ERROR_CODES = {
  BAD_REQUEST: 400,
  BAD_SCHEMA: 400,
  BAD_DOCUMENT: 400,
  BAD_PARAMETER: 400,
  BAD_FILTER: 400,
  BAD_SORT: 400,
  BAD_JSON: 400,
  /** An LLM provider failed, timed out or answered something unusable (the reference answers 400). */
  LLM_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  COLLECTION_NOT_FOUND: 404,
  DOCUMENT_NOT_FOUND: 404,
  KEY_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  COLLECTION_EXISTS: 409,
  DOCUMENT_EXISTS: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNPROCESSABLE: 422,
  DATA_DIR: 500,
  INTERNAL: 500,
  SERVICE_UNAVAILABLE: 503,
  /** A stored credential is encrypted and the secrets key it needs was not given (or is another). */
  SECRETS_KEY: 503,
  /** A write failed because the disk holding the data directory is full. */
  NO_SPACE: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class FathomError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'FathomError';
    this.code = code;
    this.status = ERROR_CODES[code];
  }
}

export function fail(code: ErrorCode, message: string): never {
  throw new FathomError(code, message);
}

export function isFathomError(e: unknown): e is FathomError {
  return e instanceof FathomError;
}

/** A message safe to show a user for any thrown value. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
