/** @intake/client: a small Promise-based client for Intake API v1, on the global fetch. */
export {
  type Fetch,
  type FetchResponse,
  IntakeClient,
  type IntakeClientOptions,
  ListRequest,
  type OperationName,
  operations,
  type PostOptions
} from "./client.js"
export {
  IntakeConnectionError,
  IntakeError,
  IntakeUnexpectedResponse,
  WebhookVerificationError
} from "./errors.js"
export type * from "./types.js"
export { type VerifyOptions, verifyWebhook, type WebhookHeaders } from "./webhooks.js"
