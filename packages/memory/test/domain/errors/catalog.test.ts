import { describe, expect, it } from "@effect/vitest"
import {
  type ApiError,
  AuthenticationRequired,
  apiErrorClasses,
  Conflict,
  errorCatalog,
  FeatureNotAvailable,
  IdempotencyConflict,
  InsufficientScopes,
  InternalError,
  invalid,
  isApiError,
  notFound,
  PlanLimitExceeded,
  RateLimitExceeded,
  StorageUnavailable,
  WorkspaceArchived
} from "@intake/domain"
import { Schema } from "effect"

/** One error of each code, as the use cases raise them. */
const oneOfEach: ReadonlyArray<ApiError> = [
  invalid([{ path: "data.email", message: "must be an email address" }], { unknownKeys: ["extra"] }),
  new AuthenticationRequired({ message: "no key" }),
  new InsufficientScopes({ message: "scope", required: ["manage:webhooks"], granted: ["read:submissions"] }),
  new FeatureNotAvailable({ message: "plan", feature: "api_access" }),
  new WorkspaceArchived({ message: "archived" }),
  notFound("webhook"),
  new Conflict({ message: "state" }),
  new IdempotencyConflict({ message: "key" }),
  new RateLimitExceeded({ message: "slow down", retryAfterSeconds: 12 }),
  new PlanLimitExceeded({ message: "limit", resource: "submissions", current: 100, max: 100 }),
  new InternalError({ message: "unexpected" })
]

describe("the error catalog", () => {
  it("has one class per code, in the catalog's order", () => {
    expect(apiErrorClasses.map((errorClass) => errorClass.prototype.code)).toEqual(Object.keys(errorCatalog))
    expect(oneOfEach.map((error) => error.code)).toEqual(Object.keys(errorCatalog))
  })

  it("gives each error the tag and status of its entry, and details of its declared shape", () => {
    for (const error of oneOfEach) {
      const entry: (typeof errorCatalog)[keyof typeof errorCatalog] = errorCatalog[error.code]
      expect([error._tag, error.httpStatus]).toEqual([entry.tag, entry.status])
      if ("details" in entry) {
        const declared = Schema.Struct(entry.details)
        expect(Schema.encodeUnknownSync(declared)(error.details)).toEqual(error.details)
      } else expect(error.details).toBeUndefined()
    }
  })

  it("snake-cases the details a client reads", () => {
    expect(new RateLimitExceeded({ message: "m", retryAfterSeconds: 3 }).details).toEqual({ retry_after: 3 })
    const many = invalid(
      Array.from({ length: 101 }, (_, i) => ({ path: `f${i}`, message: "bad" })),
      { status: 422 }
    )
    expect([many.httpStatus, many.details.issue_count, many.details.issues.length]).toEqual([422, 101, 100])
  })

  it("tells catalog errors from the rest", () => {
    expect(oneOfEach.every(isApiError)).toBe(true)
    expect(isApiError(new StorageUnavailable({ operation: "read" }))).toBe(false)
    expect(isApiError(new Error("plain"))).toBe(false)
  })
})
