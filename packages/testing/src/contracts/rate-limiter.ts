import { expect, layer } from "@effect/vitest"
import { RateLimiter } from "@intake/domain"
import { Clock, Effect, type Layer, TestClock } from "effect"
import { uniqueId } from "../records.js"

export interface RateLimiterContractOptions {
  /**
   * Moves the limiter's clock forward by at least `millis`. Default: TestClock.adjust, for
   * limiters that read the fiber's Clock (memory). A limiter whose clock is its store's
   * (Redis) passes a real sleep: `(ms) => TestServices.provideLive(Effect.sleep(ms))`.
   */
  readonly advance?: (millis: number) => Effect.Effect<void>
  /** The time as the limiter sees it, give or take `clockSkewMs`. Default: Clock.currentTimeMillis. */
  readonly now?: Effect.Effect<number>
  /** How far the limiter's clock may be from `now` (a store's clock; real-time sleeps). Default 0. */
  readonly clockSkewMs?: number
  /** The window of the sliding cases. Default 60 s; real-time runs use a short one (e.g. 2 s). */
  readonly windowMs?: number
}

export const rateLimiterContract = (
  name: string,
  limiterLayer: Layer.Layer<RateLimiter>,
  options: RateLimiterContractOptions = {}
) => {
  const advance = options.advance ?? ((millis: number) => TestClock.adjust(millis))
  const now = options.now ?? Clock.currentTimeMillis
  const skew = options.clockSkewMs ?? 0
  const window = options.windowMs ?? 60_000
  const step = window / 10

  /** Hits `bucket` and notes the time around the call, to bound what the limiter saw as now. */
  const timedHit = (bucket: string, limit: number) =>
    Effect.gen(function* () {
      const limiter = yield* RateLimiter
      const before = yield* now
      const decision = yield* limiter.hit(bucket, limit, window, 3_000)
      const after = yield* now
      return { decision, before: before - skew, after: after + skew }
    })

  const hits = (bucket: string, limit: number, count: number) =>
    Effect.gen(function* () {
      const limiter = yield* RateLimiter
      return yield* Effect.forEach(Array.from({ length: count }), () =>
        limiter.hit(bucket, limit, window, 3_000)
      )
    })

  /**
   * The sliding window as the times say it must answer: each admitted request kept with the
   * bounds of the time the limiter saw it. A request at t is in the window at T when
   * t > T - window. On an exact clock (the TestClock) every answer is determined; on a real
   * one (Redis's), an answer whose bounds straddle a request's leaving may go either way,
   * and every other answer must be what the times say, however late a sleep woke (a busy
   * machine moves the times, not the verdict).
   */
  const windowModel = (bucket: string, limit: number) => {
    const admitted: Array<{ readonly from: number; readonly to: number }> = []
    return (count: number) =>
      Effect.forEach(Array.from({ length: count }), () =>
        Effect.map(timedHit(bucket, limit), ({ decision, before, after }) => {
          const surely = admitted.filter((request) => request.from > after - window).length
          const maybe = admitted.filter((request) => request.to > before - window).length
          if (surely >= limit) expect(decision.allowed, "refused: the window is full").toBe(false)
          else if (maybe < limit) expect(decision.allowed, "admitted: the window has room").toBe(true)
          if (decision.allowed) {
            if (surely === maybe) expect(decision.remaining).toBe(limit - surely - 1)
            admitted.push({ from: before, to: after })
          } else expect(decision.remaining).toBe(0)
          return decision
        })
      )
  }
  /** Whether the clock is exact (the TestClock): then the cases also assert the answers by step. */
  const exact = options.advance === undefined && skew === 0

  layer(limiterLayer)(`RateLimiter contract: ${name}`, (it) => {
    it.effect("admits `limit` requests in a window, counting down remaining, and refuses the next", () =>
      Effect.gen(function* () {
        const bucket = uniqueId("bucket")
        const decisions = yield* hits(bucket, 5, 6)
        expect(decisions.map((d) => [d.allowed, d.limit, d.remaining])).toEqual([
          [true, 5, 4],
          [true, 5, 3],
          [true, 5, 2],
          [true, 5, 1],
          [true, 5, 0],
          [false, 5, 0]
        ])
        expect(decisions.slice(0, 5).every((d) => d.retryAfterSeconds === 0)).toBe(true)
        expect(decisions[5]!.retryAfterSeconds).toBeGreaterThanOrEqual(1)
      })
    )

    it.effect(
      "reset is when the oldest admitted request leaves the window; retry-after is that wait in whole seconds",
      () =>
        Effect.gen(function* () {
          const bucket = uniqueId("bucket")
          const first = yield* timedHit(bucket, 2)
          expect(first.decision.resetAt).toBeGreaterThanOrEqual(first.before + window)
          expect(first.decision.resetAt).toBeLessThanOrEqual(first.after + window)

          yield* advance(step)
          const second = yield* timedHit(bucket, 2)
          // Still the first request that leaves first.
          expect(second.decision.resetAt).toBe(first.decision.resetAt)

          const refused = yield* timedHit(bucket, 2)
          expect(refused.decision.allowed).toBe(false)
          expect(refused.decision.resetAt).toBe(first.decision.resetAt)
          const wait = (at: number) => Math.max(1, Math.ceil((refused.decision.resetAt - at) / 1000))
          expect(refused.decision.retryAfterSeconds).toBeGreaterThanOrEqual(wait(refused.after))
          expect(refused.decision.retryAfterSeconds).toBeLessThanOrEqual(wait(refused.before))
        })
    )

    it.effect("after the window slides past the oldest request, one more is admitted, and no more", () =>
      Effect.gen(function* () {
        const hits = windowModel(uniqueId("bucket"), 3)
        yield* hits(1)
        yield* advance(step)
        yield* hits(2)
        expect((yield* hits(1))[0]!.allowed).toBe(false)

        // Just before the first request leaves: still full.
        yield* advance(window - 2 * step)
        const beforeLeaving = yield* hits(1)
        if (exact) expect(beforeLeaving[0]!.allowed).toBe(false)

        // The first request has left; the two later ones have not.
        yield* advance(step)
        const firstLeft = yield* hits(2)
        if (exact)
          expect(firstLeft.map((d) => [d.allowed, d.remaining])).toEqual([
            [true, 0],
            [false, 0]
          ])

        // Now the two later ones have left too.
        yield* advance(step)
        const allLeft = yield* hits(3)
        if (exact) expect(allLeft.map((d) => d.allowed)).toEqual([true, true, false])
      })
    )

    it.effect("refused requests are not counted", () =>
      Effect.gen(function* () {
        const hits = windowModel(uniqueId("bucket"), 2)
        yield* hits(2)
        yield* advance(step)
        expect((yield* hits(3)).every((d) => !d.allowed)).toBe(true)
        // The two admitted requests left; the refused ones never counted (the model counts
        // admitted requests only, so a limiter counting refusals fails it at any speed).
        yield* advance(window - step)
        expect((yield* hits(3)).map((d) => [d.allowed, d.remaining])).toEqual([
          [true, 1],
          [true, 0],
          [false, 0]
        ])
      })
    )

    it.effect("no span of the window admits more than the limit, request after request", () =>
      Effect.gen(function* () {
        const hits = windowModel(uniqueId("bucket"), 3)
        const admittedSteps: Array<number> = []
        for (let i = 0; i < 25; i++) {
          if ((yield* hits(1))[0]!.allowed) admittedSteps.push(i)
          yield* advance(step)
        }
        // Every answer was what the times say (the model); on the exact clock, step by step.
        if (exact) expect(admittedSteps).toEqual([0, 1, 2, 10, 11, 12, 20, 21, 22])
        else expect(admittedSteps.length).toBeGreaterThanOrEqual(3)
      })
    )

    it.effect("concurrent requests never exceed the limit", () =>
      Effect.gen(function* () {
        const limiter = yield* RateLimiter
        const bucket = uniqueId("bucket")
        const decisions = yield* Effect.all(
          Array.from({ length: 20 }, () => limiter.hit(bucket, 5, window, 3_000)),
          { concurrency: "unbounded" }
        )
        expect(decisions.filter((d) => d.allowed)).toHaveLength(5)
        expect(decisions.map((d) => d.remaining).sort()).toEqual([0, 1, 2, 3, 4, ...Array(15).fill(0)].sort())
      })
    )

    it.effect("peek tells whether a hit would be admitted, and counts nothing", () =>
      Effect.gen(function* () {
        const limiter = yield* RateLimiter
        const bucket = uniqueId("bucket")
        const peek = () => limiter.peek(bucket, 2, window, 3_000)
        expect(yield* peek()).toMatchObject({ allowed: true, limit: 2, remaining: 2, retryAfterSeconds: 0 })
        for (let i = 0; i < 5; i++) yield* peek()
        yield* hits(bucket, 2, 1)
        expect(yield* peek()).toMatchObject({ allowed: true, remaining: 1 })
        yield* hits(bucket, 2, 1)
        const full = yield* peek()
        expect(full).toMatchObject({ allowed: false, remaining: 0 })
        expect(full.retryAfterSeconds).toBeGreaterThanOrEqual(1)
        // The window slides as for hits: once the two admitted requests left, it is open again.
        yield* advance(window + step)
        expect(yield* peek()).toMatchObject({ allowed: true, remaining: 2 })
        expect((yield* hits(bucket, 2, 3)).map((d) => d.allowed)).toEqual([true, true, false])
      })
    )

    it.effect("buckets are independent", () =>
      Effect.gen(function* () {
        const full = uniqueId("bucket")
        const other = uniqueId("bucket")
        yield* hits(full, 2, 3)
        expect((yield* hits(other, 2, 1)).map((d) => [d.allowed, d.remaining])).toEqual([[true, 1]])
        expect((yield* hits(full, 2, 1))[0]!.allowed).toBe(false)
      })
    )

    it.effect("an empty bucket resets at the time of its first request plus the window", () =>
      Effect.gen(function* () {
        const { decision, before, after } = yield* timedHit(uniqueId("bucket"), 10)
        expect(decision).toMatchObject({ allowed: true, limit: 10, remaining: 9, retryAfterSeconds: 0 })
        expect(decision.resetAt - window).toBeGreaterThanOrEqual(before)
        expect(decision.resetAt - window).toBeLessThanOrEqual(after)
      })
    )
  })
}
