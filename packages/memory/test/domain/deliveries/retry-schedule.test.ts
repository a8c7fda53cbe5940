import { describe, expect, it } from "@effect/vitest"
import { RetrySchedule } from "@intake/domain"
import { Either } from "effect"

const { parseDuration, parseRetrySchedule, retryAfterMillis, retryDelay } = RetrySchedule
const SECOND = 1_000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

describe("WEBHOOK_RETRY_SCHEDULE", () => {
  it("the default is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h", () => {
    expect(parseRetrySchedule(RetrySchedule.DEFAULT_RETRY_SCHEDULE)).toEqual(
      Either.right([5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR])
    )
  })

  it("takes milliseconds and days, with spaces around the commas", () => {
    expect(parseRetrySchedule("100ms, 200ms ,1s")).toEqual(Either.right([100, 200, 1_000]))
    expect(parseDuration("5d")).toEqual(Either.right(5 * 24 * HOUR))
  })

  it("refuses anything else, naming the bad part", () => {
    for (const text of ["", "5", "5 s", "-5s", "0s", "1.5h", "5w", "5s,,5m", "5s;5m"]) {
      const parsed = parseRetrySchedule(text)
      expect(Either.isLeft(parsed), text).toBe(true)
    }
    expect(parseRetrySchedule("5s,soon")).toEqual(
      Either.left('"soon" is not a duration like 250ms, 5s, 30m, 2h or 5d')
    )
  })
})

describe("the delay before the next attempt", () => {
  const schedule = [5 * SECOND, 5 * MINUTE, 30 * MINUTE]
  const base = { schedule, random: 0, responseStatus: 500, retryAfterMs: null }

  it("follows the schedule, then gives up", () => {
    expect(retryDelay({ ...base, failedAttempt: 1 })).toBe(5 * SECOND)
    expect(retryDelay({ ...base, failedAttempt: 2 })).toBe(5 * MINUTE)
    expect(retryDelay({ ...base, failedAttempt: 3 })).toBe(30 * MINUTE)
    expect(retryDelay({ ...base, failedAttempt: 4 })).toBeNull()
  })

  it("adds up to 20% of jitter, never less than the schedule", () => {
    const delays = Array.from(
      { length: 200 },
      (_, i) => retryDelay({ ...base, failedAttempt: 2, random: i / 200 })!
    )
    expect(Math.min(...delays)).toBe(5 * MINUTE)
    expect(Math.max(...delays)).toBeLessThanOrEqual(6 * MINUTE)
    expect(Math.max(...delays)).toBeGreaterThan(5.9 * MINUTE)
    expect(retryDelay({ ...base, failedAttempt: 1, random: 0.5 })).toBe(5.5 * SECOND)
  })

  it("a Retry-After on 429 or 503 pushes it later, up to twice the scheduled delay", () => {
    for (const responseStatus of [429, 503]) {
      expect(retryDelay({ ...base, responseStatus, failedAttempt: 1, retryAfterMs: 8 * SECOND })).toBe(
        8 * SECOND
      )
      expect(retryDelay({ ...base, responseStatus, failedAttempt: 1, retryAfterMs: HOUR })).toBe(10 * SECOND)
    }
  })

  it("a Retry-After never brings it earlier, and counts only on 429 and 503", () => {
    expect(retryDelay({ ...base, responseStatus: 429, failedAttempt: 2, retryAfterMs: SECOND })).toBe(
      5 * MINUTE
    )
    expect(retryDelay({ ...base, responseStatus: 500, failedAttempt: 1, retryAfterMs: 9 * SECOND })).toBe(
      5 * SECOND
    )
    expect(retryDelay({ ...base, responseStatus: null, failedAttempt: 1, retryAfterMs: 9 * SECOND })).toBe(
      5 * SECOND
    )
  })

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-11-21T10:00:00.000Z")
    expect(retryAfterMillis("120", now)).toBe(120 * SECOND)
    expect(retryAfterMillis("Sat, 21 Nov 2026 10:01:30 GMT", now)).toBe(90 * SECOND)
    expect(retryAfterMillis("Sat, 21 Nov 2026 09:00:00 GMT", now)).toBe(0)
    expect(retryAfterMillis("soon", now)).toBeNull()
    expect(retryAfterMillis("-5", now)).toBeNull()
    expect(retryAfterMillis(null, now)).toBeNull()
  })
})
