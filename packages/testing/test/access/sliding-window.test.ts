import { describe, expect, it } from "@effect/vitest"
import { SlidingWindowLog, slideWindow } from "@intake/domain"
import { FastCheck } from "effect"

const W = 60_000
const T = 1_800_000_000_000

describe("sliding window log", () => {
  it("an empty bucket admits; reset is now plus the window", () => {
    const { decision, admitted } = slideWindow([], T, 5, W)
    expect(decision).toEqual({ allowed: true, limit: 5, remaining: 4, resetAt: T + W, retryAfterSeconds: 0 })
    expect(admitted).toEqual([T])
  })

  it("admits the last free slot with remaining 0", () => {
    const { decision, admitted } = slideWindow([T, T + 1, T + 2, T + 3], T + 10, 5, W)
    expect(decision).toMatchObject({ allowed: true, remaining: 0, resetAt: T + W, retryAfterSeconds: 0 })
    expect(admitted).toEqual([T, T + 1, T + 2, T + 3, T + 10])
  })

  it("refuses when full, without recording the refused request", () => {
    const full = [T, T + 1_000, T + 2_000]
    const { decision, admitted } = slideWindow(full, T + 10_000, 3, W)
    expect(decision).toEqual({
      allowed: false,
      limit: 3,
      remaining: 0,
      resetAt: T + W,
      retryAfterSeconds: 50
    })
    expect(admitted).toEqual(full)
  })

  it("a request leaves the window exactly windowMs after it was admitted", () => {
    expect(slideWindow([T], T + W - 1, 1, W).decision.allowed).toBe(false)
    const { decision, admitted } = slideWindow([T], T + W, 1, W)
    expect(decision.allowed).toBe(true)
    expect(admitted).toEqual([T + W])
  })

  it("retry-after rounds the wait up to whole seconds, and is at least 1", () => {
    expect(slideWindow([T], T + W - 1, 1, W).decision.retryAfterSeconds).toBe(1)
    expect(slideWindow([T], T + W - 1_001, 1, W).decision.retryAfterSeconds).toBe(2)
    expect(slideWindow([T], T + W - 1_000, 1, W).decision.retryAfterSeconds).toBe(1)
    expect(slideWindow([T], T, 1, W).decision.retryAfterSeconds).toBe(60)
  })

  it("drops expired timestamps, even when refusing", () => {
    const { admitted } = slideWindow([T - W, T - 10, T - 5], T, 2, W)
    expect(admitted).toEqual([T - 10, T - 5])
  })

  it("a limit of 0 refuses everything and records nothing", () => {
    const { decision, admitted } = slideWindow([], T, 0, W)
    expect(decision).toEqual({ allowed: false, limit: 0, remaining: 0, resetAt: T, retryAfterSeconds: 1 })
    expect(admitted).toEqual([])
  })

  it("never admits more than the limit in any span of the window, and refuses only when that many were admitted", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.integer({ min: 1, max: 6 }),
        FastCheck.array(FastCheck.integer({ min: 0, max: 30_000 }), { minLength: 1, maxLength: 120 }),
        (limit, gaps) => {
          let log: ReadonlyArray<number> = []
          let now = T
          const admittedAt: Array<number> = []
          for (const gap of gaps) {
            now += gap
            const inWindowBefore = admittedAt.filter((at) => at > now - W).length
            const { decision, admitted } = slideWindow(log, now, limit, W)
            if (decision.allowed !== inWindowBefore < limit) return false
            if (decision.allowed) admittedAt.push(now)
            log = admitted
          }
          // Every half-open span [start, start + W) starting at an admitted request.
          return admittedAt.every(
            (start) => admittedAt.filter((at) => at >= start && at < start + W).length <= limit
          )
        }
      )
    )
  })

  it("SlidingWindowLog decides exactly as slideWindow, the clock stepping back included", () => {
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
            const reference = slideWindow(log, now, limit, W)
            log = reference.admitted
            const decision = inPlace.hit(now, limit, W)
            expect(decision).toEqual(reference.decision)
            expect(inPlace.size).toBe(log.length)
          }
        }
      )
    )
  })

  it("SlidingWindowLog keeps only the live window however many requests passed", () => {
    const inPlace = new SlidingWindowLog()
    for (let i = 0; i < 100_000; i++) inPlace.hit(T + i * 10, 1_000_000, W)
    // 60 s window, a hit every 10 ms: 6,000 live.
    expect(inPlace.size).toBe(6_000)
    expect(inPlace.newest).toBe(T + 99_999 * 10)
  })
})
