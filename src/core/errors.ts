// One error type for the whole process. Services throw AppError with a stable
// machine code; the HTTP layer and the SMTP listeners map that code to a status
// or a reply through the tables below, so no caller needs instanceof ladders.

export type ErrorCode =
  | 'bad_request'
  | 'invalid_json'
  | 'validation_error'
  | 'invalid_cursor'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'idempotency_conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'headers_too_large'
  | 'invalid_state'
  | 'domain_not_verified'
  | 'already_exists'
  | 'domain_in_use'
  | 'last_active_domain'
  | 'dkim_rotation_in_progress'
  | 'tag_in_use'
  | 'template_in_use'
  | 'template_invalid'
  | 'template_variables_invalid'
  | 'template_render_failed'
  | 'template_not_published'
  | 'broadcast_not_editable'
  | 'broadcast_incomplete'
  | 'broadcast_audience_empty'
  | 'broadcast_not_sending'
  | 'broadcast_not_paused'
  | 'broadcast_not_cancellable'
  | 'rate_limit_exceeded'
  | 'daily_quota_exceeded'
  | 'monthly_quota_exceeded'
  | 'storage_full'
  | 'store_unavailable'
  | 'internal_error';

export const HTTP_STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  invalid_json: 400,
  validation_error: 422,
  invalid_cursor: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  idempotency_conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  invalid_state: 422,
  domain_not_verified: 422,
  already_exists: 422,
  domain_in_use: 422,
  last_active_domain: 422,
  dkim_rotation_in_progress: 422,
  tag_in_use: 422,
  template_in_use: 422,
  template_invalid: 422,
  template_variables_invalid: 422,
  template_render_failed: 422,
  template_not_published: 422,
  broadcast_not_editable: 422,
  broadcast_incomplete: 422,
  broadcast_audience_empty: 422,
  broadcast_not_sending: 422,
  broadcast_not_paused: 422,
  broadcast_not_cancellable: 422,
  rate_limit_exceeded: 429,
  daily_quota_exceeded: 429,
  monthly_quota_exceeded: 429,
  storage_full: 503,
  store_unavailable: 503,
  internal_error: 500,
};

/** SMTP replies for the same conditions, used by the submission listener. */
export const SMTP_REPLY: Partial<Record<ErrorCode, { code: number; enhanced: string }>> = {
  // A key revoked during the session: 535 answers AUTH alone, so the transaction fails (RFC 4954 section 6).
  unauthorized: { code: 554, enhanced: '5.7.8' },
  forbidden: { code: 550, enhanced: '5.7.1' },
  validation_error: { code: 550, enhanced: '5.6.0' },
  domain_not_verified: { code: 550, enhanced: '5.7.1' },
  rate_limit_exceeded: { code: 451, enhanced: '4.7.0' },
  daily_quota_exceeded: { code: 452, enhanced: '4.3.1' },
  // As the API's 429: the client keeps the message and tries again, in which time the plan may be raised.
  monthly_quota_exceeded: { code: 452, enhanced: '4.3.1' },
  payload_too_large: { code: 552, enhanced: '5.3.4' },
};

export interface AppErrorOptions {
  /** The request field the error is about, as a dotted path (`to.0`, `limit`). */
  param?: string;
  /** Overrides the status of the code (400 instead of 422 where the spec asks). */
  status?: number;
  headers?: Record<string, string>;
  /** Extra machine-readable fields merged into the error object. */
  details?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param?: string;
  readonly headers: Record<string, string>;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = options.status ?? HTTP_STATUS[code];
    this.param = options.param;
    this.headers = options.headers ?? {};
    this.details = options.details;
  }
}

export function notFound(what: string, id: string): AppError {
  return new AppError('not_found', `No ${what} with id '${id}'.`);
}
