import { describe, expect, it } from "@effect/vitest"
import { retryAfterSeconds, SlidingWindowLog } from "@intake/domain"
import { FastCheck } from "effect"

const W = 60_000
const T = 1_800_000_000_000

/** A log holding requests admitted at `times` (in this order, no limit in the way). */
const logOf = (times: ReadonlyArray<number>) => {
  const log = new SlidingWindowLog()
  for (const at of times) log.hit(at, Number.MAX_SAFE_INTEGER, W)
  return log
}

/**
 * The rule written the plain way, as the reference the log must agree with: keep what is
 * still in the window, admit while fewer than `limit`, reset when the oldest leaves.
 */
const reference = (admitted: ReadonlyArray<number>, now: number, limit: number, windowMs: number) => {
  const live = admitted.filter((at) => at > now - windowMs)
  const allowed = live.length < limit
  const after = allowed ? [...live, now] : live
  const oldest = after.length === 0 ? now - windowMs : Math.min(...after)
  const resetAt = oldest + windowMs
  return {
    decision: {
      allowed,
      limit,
      remaining: Math.max(0, limit - after.length),
      resetAt,
      retryAfterSeconds: allowed ? 0 : retryAfterSeconds(resetAt, now)
    },
    admitted: after
  }
}

describe("sliding window log", () => {
  it("an empty bucket admits; reset is now plus the window", () => {
    const log = new SlidingWindowLog()
    expect(log.hit(T, 5, W)).toEqual({
      allowed: true,
      limit: 5,
      remaining: 4,
      resetAt: T + W,
      retryAfterSeconds: 0
    })
    expect(log.size).toBe(1)
    expect(log.newest).toBe(T)
  })

  it("admits the last free slot with remaining 0", () => {
    const log = logOf([T, T + 1, T + 2, T + 3])
    expect(log.hit(T + 10, 5, W)).toMatchObject({
      allowed: true,
      remaining: 0,
      resetAt: T + W,
      retryAfterSeconds: 0
    })
    expect(log.size).toBe(5)
    expect(log.newest).toBe(T + 10)
  })

  it("refuses when full, without recording the refused request", () => {
    const log = logOf([T, T + 1_000, T + 2_000])
    expect(log.hit(T + 10_000, 3, W)).toEqual({
      allowed: false,
      limit: 3,
      remaining: 0,
      resetAt: T + W,
      retryAfterSeconds: 50
    })
    expect(log.size).toBe(3)
    expect(log.newest).toBe(T + 2_000)
  })

  it("a request leaves the window exactly windowMs after it was admitted", () => {
    expect(logOf([T]).hit(T + W - 1, 1, W).allowed).toBe(false)
    const log = logOf([T])
    expect(log.hit(T + W, 1, W).allowed).toBe(true)
    expect(log.size).toBe(1)
    expect(log.newest).toBe(T + W)
  })

  it("retry-after rounds the wait up to whole seconds, and is at least 1", () => {
    expect(logOf([T]).hit(T + W - 1, 1, W).retryAfterSeconds).toBe(1)
    expect(logOf([T]).hit(T + W - 1_001, 1, W).retryAfterSeconds).toBe(2)
    expect(logOf([T]).hit(T + W - 1_000, 1, W).retryAfterSeconds).toBe(1)
    expect(logOf([T]).hit(T, 1, W).retryAfterSeconds).toBe(60)
  })

  it("drops expired timestamps, even when refusing", () => {
    const log = logOf([T - W, T - 10, T - 5])
    expect(log.hit(T, 2, W)).toMatchObject({ allowed: false, resetAt: T - 10 + W })
    expect(log.size).toBe(2)
  })

  it("a limit of 0 refuses everything and records nothing", () => {
    const log = new SlidingWindowLog()
    expect(log.hit(T, 0, W)).toEqual({
      allowed: false,
      limit: 0,
      remaining: 0,
      resetAt: T,
      retryAfterSeconds: 1
    })
    expect(log.size).toBe(0)
    expect(log.newest).toBeUndefined()
  })

  it("never admits more than the limit in any span of the window, and refuses only when that many were admitted", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.integer({ min: 1, max: 6 }),
        FastCheck.array(FastCheck.integer({ min: 0, max: 30_000 }), { minLength: 1, maxLength: 120 }),
        (limit, gaps) => {
          const log = new SlidingWindowLog()
          let now = T
          const admittedAt: Array<number> = []
          for (const gap of gaps) {
            now += gap
            const inWindowBefore = admittedAt.filter((at) => at > now - W).length
            const decision = log.hit(now, limit, W)
            if (decision.allowed !== inWindowBefore < limit) return false
            if (decision.allowed) admittedAt.push(now)
          }
          // Every half-open span [start, start + W) starting at an admitted request.
          return admittedAt.every(
            (start) => admittedAt.filter((at) => at >= start && at < start + W).length <= limit
          )
        }
      )
    )
  })

  it("decides exactly as the rule written the plain way, the clock stepping back included", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.integer({ min: 0, max: 8 }),
        // Mostly forward, sometimes back (a wall clock corrected by NTP).
        FastCheck.array(FastCheck.integer({ min: -5_000, max: 30_000 }), { minLength: 1, maxLength: 300 }),
        (limit, steps) => {
          const inPlace = new SlidingWindowLog()
          let log: ReadonlyArray<number> = []
          let now = T
          for (const step of steps) {
            now += step
            const expected = reference(log, now, limit, W)
            log = expected.admitted
            expect(inPlace.hit(now, limit, W)).toEqual(expected.decision)
            expect(inPlace.size).toBe(log.length)
          }
        }
      )
    )
  })

  it("keeps only the live window however many requests passed", () => {
    const inPlace = new SlidingWindowLog()
    for (let i = 0; i < 100_000; i++) inPlace.hit(T + i * 10, 1_000_000, W)
    // 60 s window, a hit every 10 ms: 6,000 live.
    expect(inPlace.size).toBe(6_000)
    expect(inPlace.newest).toBe(T + 99_999 * 10)
  })
})
