import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { makeMemoryRateLimiter } from "../src/rate-limiter.js"

describe("MemoryRateLimiter memory", () => {
  it.effect(
    "buckets whose requests all left the window are dropped, so many clients do not grow it forever",
    () =>
      Effect.gen(function* () {
        const { limiter, bucketCount } = makeMemoryRateLimiter()
        yield* Effect.forEach(
          Array.from({ length: 1_000 }, (_, i) => `ip:${i}`),
          (bucket) => limiter.hit(bucket, 100, 60_000, 3_000)
        )
        expect(bucketCount()).toBe(1_000)
        yield* TestClock.adjust(59_999)
        yield* limiter.hit("ip:late", 100, 60_000, 3_000)
        expect(bucketCount()).toBe(1_001)
        yield* TestClock.adjust(60_000)
        yield* limiter.hit("ip:new", 100, 60_000, 3_000)
        // Only the bucket just hit remains: every other one's requests have left the window.
        expect(bucketCount()).toBe(1)
      })
  )

  it.effect("a bucket keeps only the requests still in its window", () =>
    Effect.gen(function* () {
      const { limiter } = makeMemoryRateLimiter()
      for (let i = 0; i < 5; i++) {
        yield* limiter.hit("key:a", 3, 1_000, 3_000)
        yield* TestClock.adjust(400)
      }
      // At 2000 ms the requests of 1200 and 1600 are in the window: one slot left.
      expect(yield* limiter.hit("key:a", 3, 1_000, 3_000)).toMatchObject({
        allowed: true,
        remaining: 0,
        resetAt: 2_200
      })
    })
  )
})
