import { performance } from "node:perf_hooks"
import { expect, it } from "@effect/vitest"
import { RateLimiter, StorageUnavailable } from "@intake/domain"
import { Context, Effect, Either, Layer, Schedule, TestClock } from "effect"
import { RedisConnection, type RedisSettings } from "../src/connection.js"
import { bucketKey, RedisRateLimiterLive } from "../src/rate-limiter.js"
import {
  closedPort,
  median,
  startRedisProxy,
  testConnection,
  uniquePrefix,
  withRedis
} from "../src/testing.js"

/** One more instance: a limiter with a connection of its own, living until the test's scope closes. */
const instance = (settings: Partial<RedisSettings> = {}) =>
  Effect.map(
    Layer.build(RedisRateLimiterLive.pipe(Layer.provideMerge(testConnection(settings)))),
    (context) => ({
      limiter: Context.get(context, RateLimiter),
      client: Context.get(context, RedisConnection).client
    })
  )

const timed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const started = performance.now()
    const result = yield* Effect.either(effect)
    return { result, ms: performance.now() - started }
  })

withRedis("Redis rate limiter", () => {
  it.scoped("instances whose clocks disagree share one window, on Redis's clock", () =>
    Effect.gen(function* () {
      const keyPrefix = uniquePrefix()
      const a = yield* instance({ keyPrefix })
      const b = yield* instance({ keyPrefix })
      const bucket = "key:key_skewed"
      // This test runs on the TestClock (1970); B's instance is an hour ahead of A's.
      const fromA = yield* Effect.forEach([1, 2, 3], () => a.limiter.hit(bucket, 5, 60_000, 3_000))
      yield* TestClock.adjust("1 hour")
      const fromB = yield* Effect.forEach([1, 2, 3], () => b.limiter.hit(bucket, 5, 60_000, 3_000))
      const all = [...fromA, ...fromB]
      expect(all.map((d) => [d.allowed, d.remaining])).toEqual([
        [true, 4],
        [true, 3],
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0]
      ])
      // One reset for everybody: the first request's time on Redis's (real) clock plus the window.
      expect(new Set(all.map((d) => d.resetAt)).size).toBe(1)
      expect(Math.abs(all[0]!.resetAt - 60_000 - Date.now())).toBeLessThan(2_000)
      expect(all[5]!.retryAfterSeconds).toBe(60)
    })
  )

  it.scoped("exact at the Pro limit under concurrent requests from two instances", () =>
    Effect.gen(function* () {
      const keyPrefix = uniquePrefix()
      const instances = [yield* instance({ keyPrefix }), yield* instance({ keyPrefix })]
      const decisions = yield* Effect.all(
        Array.from({ length: 150 }, (_, i) =>
          instances[i % 2]!.limiter.hit("key:key_pro", 100, 60_000, 3_000)
        ),
        { concurrency: "unbounded" }
      )
      const admitted = decisions.filter((d) => d.allowed)
      const refused = decisions.filter((d) => !d.allowed)
      expect(admitted).toHaveLength(100)
      expect(admitted.map((d) => d.remaining).sort((x, y) => x - y)).toEqual(
        Array.from({ length: 100 }, (_, i) => i)
      )
      expect(refused.every((d) => d.remaining === 0 && d.retryAfterSeconds >= 59)).toBe(true)
      expect(new Set(refused.map((d) => d.resetAt)).size).toBe(1)
    })
  )

  it.scopedLive("the checks made in one turn of the event loop go to Redis in one write", () =>
    Effect.gen(function* () {
      const { limiter, client } = yield* instance()
      const hit = limiter.hit("key:key_together", 100, 60_000, 3_000)
      // The script loaded first: a NOSCRIPT answer would send it again, in a write of its own.
      yield* hit
      const stream = (
        client as unknown as { readonly stream: Record<string, (...args: Array<unknown>) => unknown> }
      ).stream
      let writes = 0
      for (const method of ["_write", "_writev"]) {
        const original = stream[method]!
        stream[method] = function (this: unknown, ...args: Array<unknown>) {
          writes++
          return original.apply(this, args)
        }
      }
      // Twenty checks started in one synchronous run, as one turn's requests start theirs.
      const decisions = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: 20 }, () => Effect.runPromise(hit)))
      )
      expect(writes).toBe(1)
      expect(decisions.map((decision) => decision.remaining).sort((x, y) => x - y)).toEqual(
        Array.from({ length: 20 }, (_, i) => 79 + i)
      )
      // A check of a later turn leaves in a write of its own, at the end of its turn.
      expect((yield* hit).remaining).toBe(78)
      expect(writes).toBe(2)
    })
  )

  it.scopedLive("a bucket's key is hash-tagged and bounded: what left the window goes, then the key", () =>
    Effect.gen(function* () {
      const keyPrefix = uniquePrefix()
      const { limiter, client } = yield* instance({ keyPrefix })
      const key = bucketKey(keyPrefix, "ip:203.0.113.7")
      expect(key).toBe(`${keyPrefix}rl:{ip:203.0.113.7}`)

      // Refused requests add nothing: the set never holds more than the limit.
      const hit = limiter.hit("ip:203.0.113.7", 3, 400, 3_000)
      yield* Effect.forEach(Array.from({ length: 50 }), () => hit)
      expect(yield* Effect.promise(() => client.zcard(key))).toBe(3)
      const ttl = yield* Effect.promise(() => client.pttl(key))
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(400)

      // The window is Redis's clock: each later check is bracketed by Redis's TIME and the set
      // read before and after, so what it must hold follows from the times Redis gives, however
      // late a sleep woke on a busy machine.
      const redisNow = Effect.promise(() => client.time()).pipe(
        Effect.map(([seconds, micros]) => Number(seconds) * 1000 + Math.floor(Number(micros) / 1000))
      )
      const held = Effect.promise(() => client.zrange(key, 0, -1, "WITHSCORES")).pipe(
        Effect.map((flat) => flat.filter((_, i) => i % 2 === 1).map(Number))
      )
      const checkedHit = Effect.gen(function* () {
        const heldBefore = yield* held
        const before = yield* redisNow
        const decision = yield* hit
        const after = yield* redisNow
        const heldAfter = yield* held
        // What had left the window by the check is gone; what was surely still in it is kept.
        expect(heldAfter.every((admittedAt) => admittedAt > before - 400)).toBe(true)
        const surelyIn = heldBefore.filter((admittedAt) => admittedAt > after - 400).length
        const maybeIn = heldBefore.filter((admittedAt) => admittedAt > before - 400).length
        const added = decision.allowed ? 1 : 0
        expect(heldAfter.length).toBeGreaterThanOrEqual(surelyIn + added)
        expect(heldAfter.length).toBeLessThanOrEqual(maybeIn + added)
        expect(heldAfter.length).toBeLessThanOrEqual(3)
        // The answer counts what the set holds: an admitted check is in it.
        if (decision.allowed) expect(decision.remaining).toBe(3 - heldAfter.length)
        else expect(heldAfter.length).toBe(3)
        return { decision, held: heldAfter.length }
      })

      // Once those left the window, the next check removes them and admits one more.
      yield* Effect.sleep("450 millis")
      expect(
        (yield* Effect.forEach([1, 2], () => checkedHit)).map((c) => [c.decision.allowed, c.held])
      ).toEqual([
        [true, 1],
        [true, 2]
      ])
      // Within the window of those two (as Redis's clock says): a third is admitted beside them.
      yield* Effect.sleep("250 millis")
      const third = yield* checkedHit
      expect(third.decision.allowed).toBe(true)
      // Past the window of the two older ones, not of the newest: the key lives on for it.
      yield* Effect.sleep("200 millis")
      const fourth = yield* checkedHit
      expect(fourth.decision.allowed).toBe(true)
      expect(fourth.held).toBeGreaterThanOrEqual(1)

      // Past every window: the key itself is gone (its expiry is the window).
      yield* Effect.sleep("450 millis")
      expect(yield* Effect.promise(() => client.exists(key))).toBe(0)
    })
  )

  it.scoped("the script is sent again when Redis has lost it (NOSCRIPT)", () =>
    Effect.gen(function* () {
      const { limiter, client } = yield* instance()
      expect((yield* limiter.hit("key:key_script", 3, 60_000, 3_000)).remaining).toBe(2)
      yield* Effect.promise(() => client.script("FLUSH"))
      expect((yield* limiter.hit("key:key_script", 3, 60_000, 3_000)).remaining).toBe(1)
    })
  )

  it.scopedLive("pointed at a closed port, it starts, and every check fails at once", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(closedPort)
      const started = performance.now()
      const { limiter } = yield* instance({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300 })
      expect(performance.now() - started).toBeLessThan(1_000)
      const checks = yield* Effect.forEach(Array.from({ length: 50 }), () =>
        timed(limiter.hit("key:key_closed", 100, 60_000, 3_000))
      )
      for (const { result } of checks) {
        expect(Either.isLeft(result) && result.left instanceof StorageUnavailable).toBe(true)
      }
      expect(median(checks.map((c) => c.ms))).toBeLessThan(5)
    })
  )

  it.scopedLive(
    "Redis stopped mid-run: checks fail at once; it counts again on its own once Redis is back",
    () =>
      Effect.gen(function* () {
        const proxy = yield* Effect.acquireRelease(Effect.promise(startRedisProxy), (p) =>
          Effect.promise(p.stop)
        )
        const { limiter } = yield* instance({ url: proxy.url })
        const bucket = "key:key_restart"
        expect((yield* limiter.hit(bucket, 5, 60_000, 3_000)).remaining).toBe(4)

        yield* Effect.promise(proxy.stop)
        const checks = yield* Effect.forEach(Array.from({ length: 50 }), () =>
          timed(limiter.hit(bucket, 5, 60_000, 3_000))
        )
        expect(checks.every(({ result }) => Either.isLeft(result))).toBe(true)
        expect(median(checks.map((c) => c.ms))).toBeLessThan(5)

        yield* Effect.promise(proxy.start)
        const back = yield* limiter
          .hit(bucket, 5, 60_000, 3_000)
          .pipe(Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 60 }))
        // The window survived in Redis: the request before the outage still counts.
        expect(back.remaining).toBe(3)
      })
  )

  it.scopedLive("a Redis that stops answering fails the check after the command timeout", () =>
    Effect.gen(function* () {
      const proxy = yield* Effect.acquireRelease(Effect.promise(startRedisProxy), (p) =>
        Effect.promise(p.stop)
      )
      const { limiter } = yield* instance({ url: proxy.url, commandTimeoutMs: 300 })
      yield* limiter.hit("key:key_hang", 5, 60_000, 3_000)
      proxy.hang()
      const { result, ms } = yield* timed(limiter.hit("key:key_hang", 5, 60_000, 3_000))
      expect(Either.isLeft(result)).toBe(true)
      expect(ms).toBeGreaterThanOrEqual(290)
      expect(ms).toBeLessThan(1_000)
    })
  )

  it.scopedLive("a hit fails at the bound the caller gives, before the connection's command timeout", () =>
    Effect.gen(function* () {
      const proxy = yield* Effect.acquireRelease(Effect.promise(startRedisProxy), (p) =>
        Effect.promise(p.stop)
      )
      const { limiter } = yield* instance({ url: proxy.url, commandTimeoutMs: 5_000 })
      yield* limiter.hit("key:key_bound", 5, 60_000, 3_000)
      proxy.hang()
      const { result, ms } = yield* timed(limiter.hit("key:key_bound", 5, 60_000, 300))
      expect(Either.isLeft(result)).toBe(true)
      expect(ms).toBeGreaterThanOrEqual(290)
      expect(ms).toBeLessThan(1_000)
    })
  )
})
