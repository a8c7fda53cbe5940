/**
 * The one response path: every answer that leaves the server is built here, in the
 * envelope, with the request id and (on /v1) the rate-limit headers.
 */
import type { ApiError, RateLimitDecision } from "@intake/domain"
import { InternalError, isApiError, notFound, RateLimitExceeded } from "@intake/domain"
import { Cause, Effect, Option } from "effect"

export const errorBody = (error: ApiError) => {
  const details = error.details
  return {
    success: false as const,
    error: { code: error.code, message: error.message, ...(details === undefined ? {} : { details }) }
  }
}

/**
 * An answer as the server writes it: status, headers (lower-case names) and the whole
 * body, sent in one write (server.ts).
 */
export interface Reply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | Uint8Array
}

const JSON_HEADERS: Readonly<Record<string, string>> = { "content-type": "application/json" }

export const json = (body: unknown, status: number): Reply => ({
  status,
  headers: JSON_HEADERS,
  body: JSON.stringify(body)
})

/** A JSON body that is already serialized (a document built once). */
export const jsonText = (body: string, status: number): Reply => ({ status, headers: JSON_HEADERS, body })

const SUCCESS_OPENING = Buffer.from('{"success":true,"data":')
const SUCCESS_CLOSING = 0x7d // }

/**
 * The success envelope around data already written as JSON (a page of submissions): what
 * `json` writes for `{ success: true, data }`, as bytes. Written as a string, a page's text
 * was copied whole twice more on its way out (around the envelope, then after node's HTTP
 * head, before the socket had it); as bytes, node writes its head and then these
 * (docs/performance.md, Lists).
 */
export const successJsonText = (dataJson: string, status: number): Reply => {
  const dataLength = Buffer.byteLength(dataJson)
  const body = Buffer.allocUnsafe(SUCCESS_OPENING.length + dataLength + 1)
  SUCCESS_OPENING.copy(body, 0)
  body.write(dataJson, SUCCESS_OPENING.length, dataLength, "utf8")
  body[body.length - 1] = SUCCESS_CLOSING
  return { status, headers: JSON_HEADERS, body }
}

export const withHeaders = (reply: Reply, headers: Readonly<Record<string, string>>): Reply => ({
  status: reply.status,
  headers: { ...reply.headers, ...headers },
  body: reply.body
})

export const withHeader = (reply: Reply, name: string, value: string): Reply =>
  withHeaders(reply, { [name]: value })

export const errorResponse = (error: ApiError) => {
  const response = json(errorBody(error), error.httpStatus)
  return error instanceof RateLimitExceeded
    ? withHeader(response, "retry-after", String(error.retryAfterSeconds))
    : response
}

export const routeNotFound = () => errorResponse(notFound("route"))

const internal = new InternalError({ message: "An unexpected error occurred." })

/** The sanitized 500: never a stack, a SQL text or a driver message. */
export const internalErrorResponse = () => errorResponse(internal)

/**
 * Any failure or defect to an answer. Catalog errors answer as themselves; anything else
 * (a storage fault, a defect) is logged, with the request's id, and answers the sanitized 500.
 */
export const causeToResponse = (cause: Cause.Cause<unknown>) => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && isApiError(failure.value)) return Effect.succeed(errorResponse(failure.value))
  return Effect.as(Effect.logError("request failed", cause), errorResponse(internal))
}

export const rateLimited = (decision: RateLimitDecision) =>
  errorResponse(
    new RateLimitExceeded({
      message: `Rate limit of ${decision.limit} requests per minute exceeded.`,
      retryAfterSeconds: decision.retryAfterSeconds
    })
  )

/** How long a client shed by an overloaded server is asked to wait (docs/rules.md, Overload). */
export const OVERLOAD_RETRY_AFTER_SECONDS = 1

const overload = new RateLimitExceeded({
  message: `The server is busy; retry after ${OVERLOAD_RETRY_AFTER_SECONDS} second.`,
  retryAfterSeconds: OVERLOAD_RETRY_AFTER_SECONDS
})

/** The answer to a request shed by an overloaded server: 429 rate_limit_exceeded with Retry-After. */
export const overloaded = () => errorResponse(overload)

/** X-RateLimit-* and the IETF draft fields, from the decision that admitted or refused the request. */
export const withRateLimitHeaders = (response: Reply, decision: RateLimitDecision, now: number) => {
  const secondsToReset = Math.max(0, Math.ceil((decision.resetAt - now) / 1000))
  return withHeaders(response, {
    "x-ratelimit-limit": String(decision.limit),
    "x-ratelimit-remaining": String(decision.remaining),
    "x-ratelimit-reset": String(decision.resetAt),
    "ratelimit-policy": `"default";q=${decision.limit};w=60`,
    ratelimit: `"default";r=${decision.remaining};t=${secondsToReset}`
  })
}
