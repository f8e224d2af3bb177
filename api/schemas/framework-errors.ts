/**
 * Answers of the framework around the routes, not domain refusals: each has one code and one
 * status, sent as ErrorResponse. `api/plugins/errors.ts` answers them, and
 * `api/plugins/documented-responses.ts` lists each on every route it can reach, from this table.
 */
export const frameworkStatusByCode = {
  /** A path parameter that is not valid percent-encoded UTF-8 (the router cannot decode it). */
  MALFORMED_URL: 400,
  /** The body is over the app's body limit. */
  PAYLOAD_TOO_LARGE: 413,
  /** A path parameter over the router's maximum length. */
  URI_TOO_LONG: 414,
  /** A body that is not `application/json`. */
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** Anything unexpected: the body carries the request id, the log has the rest. */
  INTERNAL: 500,
  /** Before any route, on the connection: HTTP the server cannot parse. */
  MALFORMED_REQUEST: 400,
  /** Before any route: the request did not arrive within the server's request timeout. */
  REQUEST_TIMEOUT: 408,
  /** Before any route: the request line and headers over the server's limit (16 KiB). */
  HEADERS_TOO_LARGE: 431,
} as const;
export type FrameworkErrorCode = keyof typeof frameworkStatusByCode;
