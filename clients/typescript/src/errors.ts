// Errors of the client, one class per error status, each carrying the server's error envelope:
//
// LociError                        base of everything the client throws
// ├── InvalidRequest               a value the client cannot send (a header with a control character)
// ├── ConnectionFailed             no answer after the retries (refused, dropped, timed out)
// ├── UnexpectedAnswer             a success answer whose body is not JSON, or a redirect: .status
// └── APIError                     the server answered an error: .status, .envelope
//     ├── BadRequestError          400 bad_request
//     ├── AuthenticationError      401 unauthorized
//     ├── PermissionDeniedError    403 forbidden (the key lacks a scope)
//     ├── NotFoundError            404 not_found
//     ├── ConflictError            409 conflict (an Idempotency-Key reused with another body)
//     ├── ValidationError          422 validation_error (envelope.details.field names the field)
//     ├── RateLimitError           429 rate_limited (after the retries)
//     ├── InternalServerError      500 internal_error
//     ├── NotSupportedError        501 not_supported
//     └── ServiceUnavailableError  503 unavailable (after the retries)
import type { ErrorBody } from "./types.js";

export class LociError extends Error {
  override name = "LociError";
}

/** A value the client refuses to send, before any request: a header value (agent, idempotencyKey,
 * `after`, API key) with a control character or a lone surrogate. */
export class InvalidRequest extends LociError {
  override name = "InvalidRequest";
}

export class ConnectionFailed extends LociError {
  override name = "ConnectionFailed";
}

export class UnexpectedAnswer extends LociError {
  override name = "UnexpectedAnswer";
  readonly status: number;
  readonly requestId: string | null;

  constructor(message: string, status: number, requestId: string | null, options?: ErrorOptions) {
    super(message, options);
    this.status = status;
    this.requestId = requestId;
  }
}

export class APIError extends LociError {
  override name = "APIError";
  readonly status: number;
  readonly envelope: ErrorBody;

  constructor(status: number, envelope: ErrorBody) {
    super(`${status} ${envelope.error}: ${envelope.message}`);
    this.status = status;
    this.envelope = envelope;
  }

  /** The envelope's code: `not_found`, `validation_error`, ... */
  get code(): string {
    return this.envelope.error;
  }

  get requestId(): string {
    return this.envelope.request_id;
  }

  get details(): Record<string, unknown> {
    return this.envelope.details ?? {};
  }
}

export class BadRequestError extends APIError {
  override name = "BadRequestError";
}
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
}
export class PermissionDeniedError extends APIError {
  override name = "PermissionDeniedError";
}
export class NotFoundError extends APIError {
  override name = "NotFoundError";
}
export class ConflictError extends APIError {
  override name = "ConflictError";
}
export class ValidationError extends APIError {
  override name = "ValidationError";
}
export class RateLimitError extends APIError {
  override name = "RateLimitError";
}
export class InternalServerError extends APIError {
  override name = "InternalServerError";
}
export class NotSupportedError extends APIError {
  override name = "NotSupportedError";
}
export class ServiceUnavailableError extends APIError {
  override name = "ServiceUnavailableError";
}

const BY_STATUS: Record<number, new (status: number, envelope: ErrorBody) => APIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  422: ValidationError,
  429: RateLimitError,
  500: InternalServerError,
  501: NotSupportedError,
  503: ServiceUnavailableError,
};

function isEnvelope(value: unknown): value is ErrorBody {
  const v = value as Partial<ErrorBody> | null;
  return typeof v === "object" && v !== null && typeof v.error === "string" && typeof v.message === "string";
}

/** The typed error of an error answer; a body that is not the envelope is kept as its message. */
export function errorFor(status: number, body: string, requestId: string | null): APIError {
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = null;
  }
  const envelope: ErrorBody = isEnvelope(parsed)
    ? parsed
    : { error: `http_${status}`, message: body.slice(0, 1000), request_id: requestId ?? "", details: {} };
  const Kind = BY_STATUS[status] ?? APIError;
  return new Kind(status, envelope);
}
