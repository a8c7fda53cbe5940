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
  MAX_ECHOED_NAME_LENGTH,
  MAX_ISSUE_MESSAGE_LENGTH,
  notFound,
  PlanLimitExceeded,
  RateLimitExceeded,
  StorageUnavailable,
  WorkspaceArchived,
  withIssues
} from "@intake/domain"
import { FastCheck, Schema } from "effect"

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

describe("validation failures are bounded whatever the request", () => {
  /** The error body as the HTTP layer writes it, in UTF-8 bytes. */
  const bodyBytes = (error: ApiError) =>
    new TextEncoder().encode(
      JSON.stringify({
        success: false,
        error: { code: error.code, message: error.message, details: error.details }
      })
    ).length

  // Names as a request may send them: long, full of characters JSON writes as six bytes.
  const hostileText = FastCheck.oneof(
    FastCheck.fullUnicodeString({ maxLength: 50 }),
    FastCheck.tuple(
      FastCheck.constantFrom("\u0001", '"', "é", "😀", "\ud800", "k"),
      FastCheck.integer({ min: 1, max: 5_000 })
    ).map(([unit, times]) => unit.repeat(times))
  )
  const issue = FastCheck.record({ path: hostileText, message: hostileText })

  it("under 64 KB, names and messages cut, the first issue always listed and the totals kept", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(issue, { minLength: 1, maxLength: 250 }),
        FastCheck.array(hostileText, { maxLength: 250 }),
        FastCheck.array(issue, { maxLength: 20 }),
        (issues, unknownKeys, more) => {
          const failure = invalid(issues, { unknownKeys })
          for (const error of [failure, withIssues(failure, more)]) {
            expect(bodyBytes(error)).toBeLessThan(64 * 1024)
            expect(error.issues.length).toBeGreaterThan(0)
            for (const listed of error.issues) {
              expect(listed.path.length).toBeLessThanOrEqual(MAX_ECHOED_NAME_LENGTH)
              expect(listed.message.length).toBeLessThanOrEqual(MAX_ISSUE_MESSAGE_LENGTH)
            }
          }
          // A cut name is the start of the one sent: the answer still says where.
          const first = failure.issues[0]!.path
          expect(first === issues[0]!.path || issues[0]!.path.startsWith(first.slice(0, -1))).toBe(true)
          expect(failure.details.issue_count ?? failure.issues.length).toBe(issues.length)
          expect(failure.details.unknown_key_count ?? failure.details.unknown_keys!.length).toBe(
            unknownKeys.length
          )
          for (const key of failure.details.unknown_keys!)
            expect(key.length).toBeLessThanOrEqual(MAX_ECHOED_NAME_LENGTH)
        }
      ),
      { numRuns: 200 }
    )
  })
})
