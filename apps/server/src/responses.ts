/**
 * The one response path: every answer that leaves the server is built here, in the
 * envelope, with the request id and (on /v1) the rate-limit headers.
 */
import { HttpServerResponse } from "@effect/platform"
import type { ApiError, RateLimitDecision } from "@intake/domain"
import { InternalError, isApiError, notFound, RateLimitExceeded } from "@intake/domain"
import { Cause, Data, Effect, Option } from "effect"

export const errorBody = (error: ApiError) => {
  const details = error.details
  return {
    success: false as const,
    error: { code: error.code, message: error.message, ...(details === undefined ? {} : { details }) }
  }
}

export const json = (body: unknown, status: number) => HttpServerResponse.unsafeJson(body, { status })

export const errorResponse = (error: ApiError) => {
  const response = json(errorBody(error), error.httpStatus)
  return error instanceof RateLimitExceeded
    ? HttpServerResponse.setHeader(response, "retry-after", String(error.retryAfterSeconds))
    : response
}

export const routeNotFound = () => errorResponse(notFound("route"))

const internal = new InternalError({ message: "An unexpected error occurred." })

/**
 * A request that had not answered when its time (REQUEST_TIMEOUT) ran out: most likely a
 * database that went silent, so it answers like any storage fault.
 */
export class DeadlineExceeded extends Data.TaggedError("DeadlineExceeded")<{
  readonly requestId: string
  readonly method: string
  /** The matched route's pattern when the request got that far, never the raw path. */
  readonly route: string | null
  readonly timeoutMs: number
}> {}

/**
 * Any failure or defect to an answer. Catalog errors answer as themselves; anything else
 * (a storage fault, a defect, a deadline exceeded) is logged and answers a sanitized 500.
 */
export const causeToResponse = (cause: Cause.Cause<unknown>) => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && isApiError(failure.value)) return Effect.succeed(errorResponse(failure.value))
  if (Option.isSome(failure) && failure.value instanceof DeadlineExceeded) {
    const { requestId, method, route, timeoutMs } = failure.value
    // Ids only: what the request carried (its key, its body) stays out of the log.
    const line = { message: "request exceeded its deadline", requestId, method, route, timeoutMs }
    return Effect.as(Effect.logError(line), errorResponse(internal))
  }
  return Effect.as(Effect.logError("request failed", cause), errorResponse(internal))
}

export const rateLimited = (decision: RateLimitDecision) =>
  errorResponse(
    new RateLimitExceeded({
      message: `Rate limit of ${decision.limit} requests per minute exceeded.`,
      retryAfterSeconds: decision.retryAfterSeconds
    })
  )

/** X-RateLimit-* and the IETF draft fields, from the decision that admitted or refused the request. */
export const withRateLimitHeaders = (
  response: HttpServerResponse.HttpServerResponse,
  decision: RateLimitDecision,
  now: number
) => {
  const secondsToReset = Math.max(0, Math.ceil((decision.resetAt - now) / 1000))
  return HttpServerResponse.setHeaders(response, {
    "x-ratelimit-limit": String(decision.limit),
    "x-ratelimit-remaining": String(decision.remaining),
    "x-ratelimit-reset": String(decision.resetAt),
    "ratelimit-policy": `"default";q=${decision.limit};w=60`,
    ratelimit: `"default";r=${decision.remaining};t=${secondsToReset}`
  })
}
