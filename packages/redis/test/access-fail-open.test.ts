/**
 * The Access use case on the Redis limiter, with Redis going away and coming back: what
 * a client of the API would notice (decisions, their header values, the time they take).
 */
import { performance } from "node:perf_hooks"
import { expect, it } from "@effect/vitest"
import { Access, type Principal, Provisioning } from "@intake/domain"
import { accessTestLayer, authenticate, captureLogs, provisionApiKey } from "@intake/testing"
import { Effect, Fiber, Layer } from "effect"
import { RedisRateLimiterLive } from "../src/rate-limiter.js"
import { closedPort, median, startRedisProxy, testConnection, withRedis } from "../src/testing.js"

const limitTimed = (principal: Principal) =>
  Effect.flatMap(Access, (access) =>
    Effect.gen(function* () {
      const started = performance.now()
      const decision = yield* access.limitKey(principal)
      return { decision, ms: performance.now() - started }
    })
  )

/** A business key (500 a minute), and a key of a workspace limited to 3 a minute. */
const principals = Effect.gen(function* () {
  const busy = yield* Effect.flatMap(provisionApiKey({ plan: "business" }), (k) =>
    authenticate(k.authorization)
  )
  const small = yield* provisionApiKey({ plan: "pro" })
  yield* Effect.flatMap(Provisioning, (p) => p.updateWorkspace(small.workspace.id, { rateLimitPerMinute: 3 }))
  return { busy, small: yield* authenticate(small.authorization) }
})

withRedis("Access on the Redis limiter, failing open", () => {
  it.live(
    "Redis stopped mid-run: requests go through with their headers, at no added latency; limits come back with Redis",
    () => {
      const log = captureLogs()
      return Effect.gen(function* () {
        const proxy = yield* Effect.acquireRelease(Effect.promise(startRedisProxy), (p) =>
          Effect.promise(p.stop)
        )
        const limiter = RedisRateLimiterLive.pipe(Layer.provide(testConnection({ url: proxy.url })))
        const layer = accessTestLayer({ rateLimiter: limiter, settings: { limiterCooldownMs: 200 } })

        yield* Effect.gen(function* () {
          const { busy, small } = yield* principals
          yield* limitTimed(small)

          // Baseline: Redis answering (one round trip per check).
          const up = yield* Effect.forEach(Array.from({ length: 100 }), () => limitTimed(busy))
          expect(up.map((c) => c.decision.remaining)).toEqual(Array.from({ length: 100 }, (_, i) => 499 - i))

          yield* Effect.promise(proxy.stop)
          const firstFailure = yield* limitTimed(busy)
          // After the first failure: 300 checks over about 1.5 s, several cool-downs long.
          const down = yield* Effect.forEach(Array.from({ length: 300 }), () =>
            Effect.zipLeft(limitTimed(busy), Effect.sleep("5 millis"))
          )
          for (const { decision } of [firstFailure, ...down]) {
            expect(decision).toMatchObject({
              allowed: true,
              limit: 500,
              remaining: 499,
              retryAfterSeconds: 0
            })
            expect(Math.abs(decision.resetAt - (Date.now() + 60_000))).toBeLessThan(5_000)
          }
          const baseline = median(up.map((c) => c.ms))
          const failingOpen = median(down.map((c) => c.ms))
          console.log(
            `limitKey median: Redis up ${baseline.toFixed(3)} ms, Redis down ${failingOpen.toFixed(3)} ms ` +
              `(first failure ${firstFailure.ms.toFixed(3)} ms, slowest while down ${Math.max(...down.map((c) => c.ms)).toFixed(3)} ms)`
          )
          expect(failingOpen - baseline).toBeLessThan(5)
          // Nowhere near the limiter's 3 s bound: no slower than the slowest check Redis
          // answered in this run, plus 100 ms (a busy machine slows both alike).
          expect(firstFailure.ms).toBeLessThan(100 + Math.max(...up.map((c) => c.ms)))

          // Redis is back: the limits hold again by themselves, with the window kept across the outage.
          yield* Effect.promise(proxy.start)
          const counted = yield* limitTimed(small).pipe(
            Effect.map((c) => c.decision),
            Effect.zipLeft(Effect.sleep("50 millis")),
            Effect.repeat({ until: (d) => d.remaining < 2 }),
            Effect.timeout("5 seconds")
          )
          expect(counted).toMatchObject({ allowed: true, limit: 3, remaining: 1 })
          expect((yield* limitTimed(small)).decision).toMatchObject({ allowed: true, remaining: 0 })
          const refused = (yield* limitTimed(small)).decision
          expect(refused).toMatchObject({ allowed: false, limit: 3, remaining: 0 })
          expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(55)

          expect(log.texts("rate limiter")).toEqual([
            "WARN rate limiter unavailable: failing open, asking again every 200 ms",
            "INFO rate limiter answers again: limits enforced"
          ])
        }).pipe(Effect.provide(layer))
      }).pipe(Effect.scoped, Effect.provide(log.layer))
    }
  )

  it.live(
    "Redis that hangs (connections open, no answers): one request per cool-down waits for it, the rest fail open at once",
    () =>
      Effect.gen(function* () {
        const proxy = yield* Effect.acquireRelease(Effect.promise(startRedisProxy), (p) =>
          Effect.promise(p.stop)
        )
        const limiter = RedisRateLimiterLive.pipe(Layer.provide(testConnection({ url: proxy.url })))
        const timeoutMs = 400
        const settings = { limiterTimeoutMs: timeoutMs, limiterCooldownMs: 200 }
        yield* Effect.gen(function* () {
          const { busy } = yield* principals
          expect((yield* limitTimed(busy)).decision.remaining).toBe(499)
          proxy.hang()
          // The first request after the hang finds out, waiting its bound (as does any request
          // arriving meanwhile, once per outage); the cool-down follows.
          expect((yield* limitTimed(busy)).ms).toBeGreaterThanOrEqual(timeoutMs - 50)
          // Then requests arrive every 5 ms for 2 s, whether or not earlier ones have answered.
          const arrivals: Array<Fiber.RuntimeFiber<Effect.Effect.Success<ReturnType<typeof limitTimed>>>> = []
          const arrivingFrom = performance.now()
          for (let i = 0; i < 400; i++) {
            arrivals.push(yield* Effect.fork(limitTimed(busy)))
            yield* Effect.sleep("5 millis")
          }
          const arrivingMs = performance.now() - arrivingFrom
          const checks = yield* Fiber.joinAll(arrivals)
          expect(checks.every((c) => c.decision.allowed && c.decision.limit === 500)).toBe(true)
          const waited = checks.filter((c) => c.ms >= timeoutMs / 2)
          console.log(
            `limitKey with Redis hanging: ${waited.length} of ${checks.length} requests waited for it, ` +
              `median ${median(checks.map((c) => c.ms)).toFixed(3)} ms`
          )
          // One probe per cool-down and timeout (600 ms): a handful, not all that arrive meanwhile.
          // Six over the 2 s the arrivals take on an idle machine; counted over the time they
          // took here, as a busy machine stretches them.
          expect(waited.length).toBeLessThanOrEqual(Math.ceil(arrivingMs / (timeoutMs + 200)) + 2)
          expect(waited.length).toBeGreaterThanOrEqual(1)
        }).pipe(Effect.provide(accessTestLayer({ rateLimiter: limiter, settings })))
      }).pipe(Effect.scoped)
  )

  it.live(
    "a busy server is not a Redis outage: checks in flight while the event loop is blocked past the bound still count",
    () => {
      const log = captureLogs()
      return Effect.gen(function* () {
        const timeoutMs = 300
        // The connection's own command timeout as short as the limiter's bound: neither may fail a check on a late loop.
        const limiter = RedisRateLimiterLive.pipe(
          Layer.provide(testConnection({ commandTimeoutMs: timeoutMs }))
        )
        const settings = { limiterTimeoutMs: timeoutMs, limiterCooldownMs: 60_000 }
        yield* Effect.gen(function* () {
          const { small } = yield* principals
          const access = yield* Access
          const check = () => Effect.runPromise(access.limitKey(small))
          expect((yield* Effect.promise(check)).remaining).toBe(2)
          const blockLoop = () => {
            const until = performance.now() + timeoutMs * 3
            while (performance.now() < until) {}
          }
          // A check sent (at its turn's end, docs/performance.md), then the loop blocked at once:
          // Redis's answer waits unread in the socket while the bound passes.
          const sent = check()
          yield* Effect.promise(
            () =>
              new Promise<void>((resolve) =>
                setImmediate(() => {
                  blockLoop()
                  resolve()
                })
              )
          )
          // A check started, then the loop blocked before its turn ended (it leaves after the block).
          const queued = check()
          blockLoop()
          const decisions = yield* Effect.promise(() => Promise.all([sent, queued]))
          // Counted by Redis, not let through: the limit of 3 holds, and the next one is refused.
          expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
            [true, 1],
            [true, 0]
          ])
          expect((yield* Effect.promise(check)).allowed).toBe(false)
          expect(log.texts("rate limiter")).toEqual([])
        }).pipe(Effect.provide(accessTestLayer({ rateLimiter: limiter, settings })))
      }).pipe(Effect.provide(log.layer))
    }
  )

  it.live("pointed at a closed port: the server's requests are served with their headers, fast", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(closedPort)
      const limiter = RedisRateLimiterLive.pipe(
        Layer.provide(testConnection({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 200 }))
      )
      yield* Effect.gen(function* () {
        const { busy } = yield* principals
        const checks = yield* Effect.forEach(Array.from({ length: 200 }), () => limitTimed(busy))
        expect(checks.every((c) => c.decision.allowed && c.decision.limit === 500)).toBe(true)
        const slowest = Math.max(...checks.map((c) => c.ms))
        console.log(
          `limitKey with Redis on a closed port: median ${median(checks.map((c) => c.ms)).toFixed(3)} ms, slowest ${slowest.toFixed(3)} ms`
        )
        expect(median(checks.map((c) => c.ms))).toBeLessThan(5)
      }).pipe(Effect.provide(accessTestLayer({ rateLimiter: limiter })))
    })
  )
})
