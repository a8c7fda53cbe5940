/** @intake/client: a small Promise-based client for Intake API v1, on the global fetch. */
export {
  type Fetch,
  type FetchInit,
  type FetchResponse,
  IntakeClient,
  type IntakeClientOptions,
  ListRequest,
  type OperationName,
  operations,
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
export type * from "./types.js"
export { VERSION } from "./version.js"
export { type VerifyOptions, verifyWebhook, type WebhookHeaders } from "./webhooks.js"
