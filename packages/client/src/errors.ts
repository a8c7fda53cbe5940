import type { ApiError, ErrorCode } from "./types.js"

/**
 * An error answer of the API, typed by code: `error.code` narrows `error.details`
 * (`if (e.error.code === "validation_failed") e.error.details.issues`).
 */
export class IntakeError extends Error {
  override readonly name = "IntakeError"
  constructor(
    /** The HTTP status (400, 401, 403, 404, 409, 422, 429 or 500). */
    readonly status: number,
    /** The envelope's `error`: code, message and, for some codes, typed details. */
    readonly error: ApiError,
    /** X-Request-Id of the answer: quote it when reporting a problem. */
    readonly requestId: string | null
  ) {
    super(error.message)
  }

  get code(): ErrorCode {
    return this.error.code
  }
}

/** The API could not be reached (connection refused or reset, DNS, timeout) even after the retries. */
export class IntakeConnectionError extends Error {
  override readonly name: string = "IntakeConnectionError"
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options)
  }
}

/** No answer within `timeoutMs` (each attempt has its own), even after the retries. */
export class IntakeTimeoutError extends IntakeConnectionError {
  override readonly name = "IntakeTimeoutError"
  constructor(
    message: string,
    /** The time each attempt had, in milliseconds. */
    readonly timeoutMs: number
  ) {
    super(message)
  }
}

/** An answer that is not the API's envelope (a proxy's error page, for instance). */
export class IntakeUnexpectedResponse extends Error {
  override readonly name = "IntakeUnexpectedResponse"
  constructor(
    readonly status: number,
    readonly body: string
  ) {
    super(`Unexpected answer ${status} (not the API's JSON envelope)`)
  }
}

/** A webhook delivery that did not verify: forged, altered, stale, or not one at all. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError"
}
