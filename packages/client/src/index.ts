/** @intake/client: a small Promise-based client for Intake API v1, on the global fetch. */
export {
  IntakeClient,
  type IntakeClientOptions,
  type PostOptions,
  type RequestOptions,
  type RetryInfo,
  type RetryReason
} from "./client.js"
export {
  IntakeConnectionError,
  IntakeError,
  IntakeTimeoutError,
  IntakeUnexpectedResponse,
  WebhookVerificationError
} from "./errors.js"
export { ListRequest } from "./list-request.js"
export { type OperationName, operations } from "./operations.js"
export type { Fetch, FetchInit, FetchResponse } from "./transport.js"
export type * from "./types.js"
export { VERSION } from "./version.js"
export { type VerifyOptions, verifyWebhook, type WebhookHeaders } from "./webhooks.js"
