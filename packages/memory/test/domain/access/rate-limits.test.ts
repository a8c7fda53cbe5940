import { describe, expect, it } from "@effect/vitest"
import { Access, OPERATOR_AUTH_FAILURES_PER_MINUTE, type Principal, Provisioning } from "@intake/domain"
import {
  accessTestLayer,
  authenticate,
  ControlledRateLimiter,
  captureLogs,
  LimiterControl,
  provisionApiKey
} from "@intake/testing"
import { Effect, Either, Fiber, Option, Redacted, TestClock } from "effect"

const principalOf = (options: Parameters<typeof provisionApiKey>[0] = {}) =>
  Effect.flatMap(provisionApiKey(options), ({ authorization }) => authenticate(authorization))

const limitKeyTimes = (principal: Principal, times: number) =>
  Effect.flatMap(Access, (access) =>
    Effect.forEach(Array.from({ length: times }), () => access.limitKey(principal))
  )

describe("Access.limitKey", () => {
  it.effect("a pro key gets 100 requests per minute; the 101st is refused until the oldest leaves", () =>
    Effect.gen(function* () {
      const principal = yield* principalOf({ plan: "pro" })
      const first = yield* limitKeyTimes(principal, 1)
      yield* TestClock.adjust(30_000)
      const rest = yield* limitKeyTimes(principal, 99)
      expect([...first, ...rest].every((d) => d.allowed && d.limit === 100)).toBe(true)
      expect(rest[98]!.remaining).toBe(0)

      const refused = (yield* limitKeyTimes(principal, 1))[0]!
      expect(refused).toEqual({
        allowed: false,
        limit: 100,
        remaining: 0,
        resetAt: 60_000,
        retryAfterSeconds: 30
      })

      yield* TestClock.adjust(30_000)
      expect((yield* limitKeyTimes(principal, 2)).map((d) => d.allowed)).toEqual([true, false])
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("a business key gets 500; the workspace override replaces the plan's, at once", () =>
    Effect.gen(function* () {
      const provisioning = yield* Provisioning
      const { authorization, workspace } = yield* provisionApiKey({ plan: "business" })
      const business = yield* authenticate(authorization)
      expect((yield* limitKeyTimes(business, 1))[0]!.limit).toBe(500)

      yield* provisioning.updateWorkspace(workspace.id, { rateLimitPerMinute: 3 })
      const overridden = yield* authenticate(authorization)
      // One request is already in the window.
      expect((yield* limitKeyTimes(overridden, 3)).map((d) => [d.allowed, d.limit])).toEqual([
        [true, 3],
        [true, 3],
        [false, 3]
      ])

      yield* provisioning.updateWorkspace(workspace.id, { rateLimitPerMinute: null })
      const back = yield* authenticate(authorization)
      expect((yield* limitKeyTimes(back, 1))[0]).toMatchObject({ allowed: true, limit: 500, remaining: 496 })
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("each key has its own window", () =>
    Effect.gen(function* () {
      const crowded = yield* principalOf({ workspace: { name: "A" } })
      const quiet = yield* principalOf({ workspace: { name: "B" } })
      yield* limitKeyTimes(crowded, 100)
      expect((yield* limitKeyTimes(crowded, 1))[0]!.allowed).toBe(false)
      expect((yield* limitKeyTimes(quiet, 1))[0]).toMatchObject({ allowed: true, remaining: 99 })
    }).pipe(Effect.provide(accessTestLayer()))
  )
})

describe("Access.limitAnonymous", () => {
  it.effect("100 requests per client IP per minute; other IPs are not affected", () =>
    Effect.gen(function* () {
      const access = yield* Access
      const decisions = yield* Effect.forEach(Array.from({ length: 101 }), () =>
        access.limitAnonymous("203.0.113.7")
      )
      expect(decisions.filter((d) => d.allowed)).toHaveLength(100)
      expect(decisions[100]).toMatchObject({ allowed: false, limit: 100, retryAfterSeconds: 60 })
      expect(yield* access.limitAnonymous("198.51.100.1")).toMatchObject({ allowed: true, remaining: 99 })
    }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("peekAnonymous tells an address's window as it stands and counts nothing", () =>
    Effect.gen(function* () {
      const access = yield* Access
      expect(yield* access.peekAnonymous("203.0.113.7")).toMatchObject({
        allowed: true,
        limit: 100,
        remaining: 100
      })
      yield* Effect.forEach(Array.from({ length: 3 }), () => access.limitAnonymous("203.0.113.7"))
      const peeks = yield* Effect.forEach(Array.from({ length: 5 }), () =>
        access.peekAnonymous("203.0.113.7")
      )
      expect(peeks.map((d) => d.remaining)).toEqual([97, 97, 97, 97, 97])
      expect(yield* access.limitAnonymous("203.0.113.7")).toMatchObject({ remaining: 96 })
    }).pipe(Effect.provide(accessTestLayer()))
  )
})

describe("rate limits fail open", () => {
  it.effect(
    "a failing limiter lets the request through, is left alone for the cool-down, then asked again",
    () =>
      Effect.gen(function* () {
        const control = yield* LimiterControl
        const access = yield* Access
        const principal = yield* principalOf()
        expect(yield* access.limiterFailingOpen).toBe(false)
        yield* control.setMode("fail")

        const during = yield* access.limitKey(principal)
        expect(during).toMatchObject({ allowed: true, limit: 100, retryAfterSeconds: 0 })
        expect(yield* control.calls).toBe(1)
        // What /readyz reports, and the count of requests let through (the metrics).
        expect(yield* access.limiterFailingOpen).toBe(true)
        expect(yield* access.limiterFailedOpen).toBe(1)

        // Within the cool-down the limiter is not asked, even though it works again.
        yield* control.setMode("answer")
        yield* TestClock.adjust(4_999)
        expect((yield* access.limitKey(principal)).allowed).toBe(true)
        expect((yield* access.limitAnonymous("203.0.113.7")).allowed).toBe(true)
        expect(yield* control.calls).toBe(1)
        expect(yield* access.limiterFailingOpen).toBe(true)
        expect(yield* access.limiterFailedOpen).toBe(3)

        // Afterwards it is asked and answers for real.
        yield* TestClock.adjust(1)
        expect(yield* access.limitKey(principal)).toMatchObject({ allowed: true, remaining: 99 })
        expect(yield* control.calls).toBe(2)
        expect(yield* access.limiterFailingOpen).toBe(false)
        // Enforced again: the count stays.
        expect(yield* access.limiterFailedOpen).toBe(3)
      }).pipe(Effect.provide(accessTestLayer({ rateLimiter: ControlledRateLimiter })))
  )

  it.effect(
    "a limiter that does not answer within 3 s lets the request through, and is not waited on again",
    () =>
      Effect.gen(function* () {
        const control = yield* LimiterControl
        const access = yield* Access
        const principal = yield* principalOf()
        yield* control.setMode("hang")

        const waiting = yield* Effect.fork(access.limitKey(principal))
        yield* TestClock.adjust(2_999)
        expect(Option.isNone(yield* Fiber.poll(waiting))).toBe(true)
        yield* TestClock.adjust(1)
        expect(yield* Fiber.join(waiting)).toMatchObject({ allowed: true, limit: 100 })

        // The cool-down answers at once, without asking the hanging limiter.
        expect((yield* access.limitKey(principal)).allowed).toBe(true)
        expect(yield* control.calls).toBe(1)

        // Still hanging after the cool-down: another 3 s wait, then open again.
        yield* TestClock.adjust(5_000)
        const again = yield* Effect.fork(access.limitKey(principal))
        yield* TestClock.adjust(3_000)
        expect((yield* Fiber.join(again)).allowed).toBe(true)
        expect(yield* control.calls).toBe(2)

        // Recovered: the limiter answers and counts again.
        yield* control.setMode("answer")
        yield* TestClock.adjust(5_000)
        expect(yield* access.limitKey(principal)).toMatchObject({ allowed: true, remaining: 99 })
      }).pipe(Effect.provide(accessTestLayer({ rateLimiter: ControlledRateLimiter })))
  )

  it.effect(
    "after the cool-down one request at a time asks a hanging limiter; the others fail open without waiting",
    () =>
      Effect.gen(function* () {
        const control = yield* LimiterControl
        const access = yield* Access
        const principal = yield* principalOf()
        yield* control.setMode("hang")
        // The first request finds out, waiting its 3 s; the cool-down follows.
        const first = yield* Effect.fork(access.limitKey(principal))
        yield* TestClock.adjust(3_000)
        yield* Fiber.join(first)
        yield* TestClock.adjust(5_000)

        // The cool-down is over: one request probes (and waits), the next twenty answer at once.
        const probe = yield* Effect.fork(access.limitKey(principal))
        yield* TestClock.adjust(1)
        const others = yield* Effect.fork(
          Effect.all(
            Array.from({ length: 20 }, () => access.limitAnonymous("203.0.113.7")),
            { concurrency: "unbounded" }
          )
        )
        yield* TestClock.adjust(1)
        const answered = yield* Fiber.poll(others)
        expect(Option.isSome(answered)).toBe(true)
        expect(yield* control.calls).toBe(2)
        expect(Option.isNone(yield* Fiber.poll(probe))).toBe(true)

        // The probe gives up after its 3 s: another cool-down, then one probe again.
        yield* TestClock.adjust(2_998)
        expect((yield* Fiber.join(probe)).allowed).toBe(true)
        yield* TestClock.adjust(5_000)
        yield* control.setMode("answer")
        expect(yield* access.limitKey(principal)).toMatchObject({ allowed: true, remaining: 99 })
        expect(yield* control.calls).toBe(3)
        // Answering again: every request asks it, limits enforced.
        expect(yield* access.limitKey(principal)).toMatchObject({ allowed: true, remaining: 98 })
        expect(yield* control.calls).toBe(4)
      }).pipe(Effect.provide(accessTestLayer({ rateLimiter: ControlledRateLimiter })))
  )

  it.effect("a probe cut off (its client went away) lets the next request probe", () =>
    Effect.gen(function* () {
      const control = yield* LimiterControl
      const access = yield* Access
      yield* control.setMode("fail")
      yield* access.limitAnonymous("203.0.113.7")
      yield* TestClock.adjust(5_000)
      yield* control.setMode("hang")
      const probe = yield* Effect.fork(access.limitAnonymous("203.0.113.7"))
      yield* TestClock.adjust(1_000)
      yield* Fiber.interrupt(probe)
      yield* control.setMode("answer")
      expect(yield* access.limitAnonymous("203.0.113.7")).toMatchObject({ allowed: true, remaining: 99 })
      expect(yield* control.calls).toBe(3)
    }).pipe(Effect.provide(accessTestLayer({ rateLimiter: ControlledRateLimiter })))
  )

  it.effect("a hanging limiter is cut after 3 s also inside an uninterruptible request", () =>
    Effect.gen(function* () {
      const control = yield* LimiterControl
      const access = yield* Access
      const principal = yield* principalOf()
      yield* control.setMode("hang")
      // As @effect/platform runs every request.
      const waiting = yield* Effect.fork(Effect.uninterruptible(access.limitKey(principal)))
      yield* TestClock.adjust(3_000)
      expect(yield* Fiber.join(waiting)).toMatchObject({ allowed: true, limit: 100 })
    }).pipe(Effect.provide(accessTestLayer({ rateLimiter: ControlledRateLimiter })))
  )

  it.effect("a request cut off while the limiter answers (its client went away) leaves limits on", () =>
    Effect.gen(function* () {
      const control = yield* LimiterControl
      const access = yield* Access
      const principal = yield* principalOf()
      yield* control.setMode("hang")
      const waiting = yield* Effect.fork(Effect.uninterruptible(access.limitKey(principal)))
      yield* TestClock.adjust(1_000)
      yield* Fiber.interrupt(waiting)

      yield* control.setMode("answer")
      expect(yield* access.limitKey(principal)).toMatchObject({ allowed: true, remaining: 99 })
      expect(yield* control.calls).toBe(2)
    }).pipe(Effect.provide(accessTestLayer({ rateLimiter: ControlledRateLimiter })))
  )

  it.effect("timeout and cool-down are settings", () =>
    Effect.gen(function* () {
      const control = yield* LimiterControl
      const access = yield* Access
      yield* control.setMode("hang")
      const waiting = yield* Effect.fork(access.limitAnonymous("203.0.113.7"))
      yield* TestClock.adjust(200)
      expect((yield* Fiber.join(waiting)).allowed).toBe(true)
      yield* control.setMode("answer")
      yield* TestClock.adjust(999)
      yield* access.limitAnonymous("203.0.113.7")
      expect(yield* control.calls).toBe(1)
      yield* TestClock.adjust(1)
      yield* access.limitAnonymous("203.0.113.7")
      expect(yield* control.calls).toBe(2)
    }).pipe(
      Effect.provide(
        accessTestLayer({
          rateLimiter: ControlledRateLimiter,
          settings: { limiterTimeoutMs: 200, limiterCooldownMs: 1_000 }
        })
      )
    )
  )

  it.effect("the log tells when the limiter goes down and when it answers again, once each", () => {
    const logs = captureLogs()
    return Effect.gen(function* () {
      const control = yield* LimiterControl
      const access = yield* Access
      yield* control.setMode("fail")
      // Many requests over several cool-downs, some at the same instant.
      for (let round = 0; round < 3; round++) {
        yield* Effect.all(
          Array.from({ length: 5 }, () => access.limitAnonymous("203.0.113.7")),
          { concurrency: "unbounded" }
        )
        yield* TestClock.adjust(5_000)
      }
      expect(yield* control.calls).toBeGreaterThanOrEqual(3)
      yield* control.setMode("answer")
      yield* Effect.forEach(Array.from({ length: 3 }), () => access.limitAnonymous("203.0.113.7"))
      expect(logs.texts()).toEqual([
        "WARN rate limiter unavailable: failing open, asking again every 5000 ms",
        "INFO rate limiter answers again: limits enforced"
      ])
    }).pipe(
      Effect.provide(accessTestLayer({ rateLimiter: ControlledRateLimiter })),
      Effect.provide(logs.layer)
    )
  })
})

describe("Access.authorizeOperator", () => {
  const token = Redacted.make("operator-token-0123456789")
  const authorize = (authorization: string | undefined, clientIp = "203.0.113.7") =>
    Effect.flatMap(Access, (access) =>
      Effect.either(access.authorizeOperator(authorization, token, clientIp))
    )
  const outcome = (authorization: string | undefined, clientIp?: string) =>
    Effect.map(authorize(authorization, clientIp), (result) =>
      Either.isRight(result) ? "ok" : `${result.left.httpStatus}`
    )

  it.effect(
    `${OPERATOR_AUTH_FAILURES_PER_MINUTE} failed tries per address and minute; then 429 for everything from it, the token included`,
    () =>
      Effect.gen(function* () {
        expect(yield* outcome("Bearer operator-token-0123456789")).toBe("ok")
        expect(yield* outcome("bearer   operator-token-0123456789")).toBe("ok")
        const failures = yield* Effect.forEach(
          Array.from({ length: OPERATOR_AUTH_FAILURES_PER_MINUTE }),
          (_, i) => outcome(i % 2 === 0 ? `Bearer guess-${i}` : undefined)
        )
        expect(failures.every((status) => status === "401")).toBe(true)
        // The address is past its failures: a wrong and the right token are answered alike.
        yield* TestClock.adjust(20_000)
        const refused = yield* authorize("Bearer guess-x")
        const refusedRight = yield* authorize("Bearer operator-token-0123456789")
        for (const result of [refused, refusedRight]) {
          expect(Either.isLeft(result) && result.left._tag).toBe("RateLimitExceeded")
          if (Either.isLeft(result) && result.left._tag === "RateLimitExceeded")
            expect(result.left.retryAfterSeconds).toBe(40)
        }
        // Another address is not affected, and refused tries do not extend the lockout.
        expect(yield* outcome("Bearer operator-token-0123456789", "198.51.100.1")).toBe("ok")
        expect(yield* outcome("Bearer wrong", "198.51.100.1")).toBe("401")
        yield* TestClock.adjust(40_000)
        expect(yield* outcome("Bearer operator-token-0123456789")).toBe("ok")
      }).pipe(Effect.provide(accessTestLayer()))
  )

  it.effect("fails open with the other limits when the limiter is down", () =>
    Effect.gen(function* () {
      const control = yield* LimiterControl
      yield* control.setMode("fail")
      expect(yield* outcome("Bearer wrong")).toBe("401")
      expect(yield* outcome("Bearer operator-token-0123456789")).toBe("ok")
    }).pipe(Effect.provide(accessTestLayer({ rateLimiter: ControlledRateLimiter })))
  )
})
