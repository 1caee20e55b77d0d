export { DEFAULT_URL, LociClient } from "./client.js";
export type { AgentOptions, LociClientOptions, RequestOptions, WriteOptions } from "./client.js";
export {
  APIError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionFailed,
  InternalServerError,
  InvalidRequest,
  LociError,
  NotFoundError,
  NotSupportedError,
  PermissionDeniedError,
  RateLimitError,
  ServiceUnavailableError,
  UnexpectedAnswer,
  ValidationError,
} from "./errors.js";
export { DEFAULT_RETRY, retryDelay } from "./retry.js";
export type { RetryPolicy } from "./retry.js";
export type * from "./types.js";
