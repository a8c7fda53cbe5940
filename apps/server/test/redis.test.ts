/**
 * The server with REDIS_URL: readiness reports Redis, and a server process keeps serving
 * when Redis goes away, at no added latency, and enforces limits again when it returns.
 */
import { expect, it } from "@effect/vitest"
import {
  closedPort,
  median,
  redisUrl,
  scopedClient,
  scopedPrefix,
  startRedisProxy,
  uniquePrefix,
  withRedis
} from "@intake/redis/testing"
import { captureLogs } from "@intake/testing"
import { Effect, Layer, Option, Redacted } from "effect"
import { embeddedRuntime } from "../src/runtime.js"
import { BaseUrl, call, testServer } from "./harness.js"
import { startServer, timedGet } from "./process.js"
import { dataOf, provision } from "./support.js"

const serverOnRedis = (url: string, keyPrefix = uniquePrefix()) =>
  testServer(
    embeddedRuntime({
      webhookAllowPrivateNetworks: false,
      redisUrl: Option.some(Redacted.make(url)),
      redisKeyPrefix: keyPrefix
    })
  )

/** The rate-limit headers of an answer, as numbers (undefined when missing). */
const limitHeaders = (headers: Headers) => ({
  limit: Number(headers.get("x-ratelimit-limit") ?? Number.NaN),
  remaining: Number(headers.get("x-ratelimit-remaining") ?? Number.NaN),
  reset: Number(headers.get("x-ratelimit-reset") ?? Number.NaN),
  policy: headers.get("ratelimit-policy"),
  fields: headers.get("ratelimit")
})

withRedis("server with REDIS_URL", () => {
  it.scopedLive(
    "a rate-limit key holding a string (WRONGTYPE) is a configuration fault: requests are served, /readyz names it, the log has one error",
    () =>
      Effect.gen(function* () {
        const logs = captureLogs()
        const prefix = yield* scopedPrefix
        const server = serverOnRedis(redisUrl, prefix).pipe(Layer.provide(logs.layer))
        const baseUrl = yield* Effect.provide(BaseUrl, yield* Layer.build(server))
        const tenant = yield* provision(baseUrl)
        const client = yield* scopedClient
        // Something else wrote under our prefix: the key's window is a string.
        yield* Effect.promise(() => client.set(`${prefix}rl:{key:${tenant.keyId}}`, "not a sorted set"))

        for (let i = 0; i < 3; i++)
          expect((yield* call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key })).status).toBe(200)
        const ready = yield* call(baseUrl, "GET", "/readyz")
        expect(ready.status).toBe(200)
        expect(dataOf(ready)).toMatchObject({
          redis: "misconfigured",
          redis_fault: { code: "WRONGTYPE", count: 1, reason: expect.stringContaining("REDIS_KEY_PREFIX") },
          rate_limiter: "failing_open"
        })
        const faults = logs.matching(/Redis configuration fault/)
        expect(faults).toHaveLength(1)
        expect(faults[0]).toMatchObject({ level: "error" })
        expect(faults[0]?.message).toContain("WRONGTYPE")
        expect(faults[0]?.cause).toContain(
          "WRONGTYPE Operation against a key holding the wrong kind of value"
        )
      })
  )

  it.scopedLive(
    "a refused password (WRONGPASS) is a configuration fault, not an outage: /readyz names it, the log has one error",
    () =>
      Effect.gen(function* () {
        const logs = captureLogs()
        const wrong = new URL(redisUrl)
        wrong.username = "intake-test-nobody"
        wrong.password = "not-the-password"
        const server = serverOnRedis(wrong.href).pipe(Layer.provide(logs.layer))
        const baseUrl = yield* Effect.provide(BaseUrl, yield* Layer.build(server))
        const tenant = yield* provision(baseUrl)
        expect((yield* call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key })).status).toBe(200)
        const ready = yield* call(baseUrl, "GET", "/readyz")
        expect(ready.status).toBe(200)
        expect(dataOf(ready)).toMatchObject({
          redis: "misconfigured",
          redis_fault: { code: "WRONGPASS", reason: expect.stringContaining("REDIS_URL") },
          rate_limiter: "failing_open"
        })
        const faults = logs.matching(/Redis configuration fault/)
        expect(faults).toHaveLength(1)
        expect(faults[0]).toMatchObject({ level: "error" })
        // The password is in neither the log nor the answer.
        expect(logs.printed()).not.toContain("not-the-password")
        expect(JSON.stringify(dataOf(ready))).not.toContain("not-the-password")
      })
  )

  it.scopedLive(
    "/readyz reports Redis and stays 200 while it is down (the limiter fails open and requests are served), then reports it back",
    () =>
      Effect.gen(function* () {
        const proxy = yield* Effect.acquireRelease(Effect.promise(startRedisProxy), (p) =>
          Effect.promise(p.stop)
        )
        const baseUrl = yield* Effect.provide(BaseUrl, yield* Layer.build(serverOnRedis(proxy.url)))
        const tenant = yield* provision(baseUrl)

        const up = yield* call(baseUrl, "GET", "/readyz")
        expect(up.status).toBe(200)
        expect(up.body).toEqual({
          success: true,
          data: { status: "ok", database: "ok", redis: "ok", rate_limiter: "enforcing" }
        })

        yield* Effect.promise(proxy.stop)
        // A load balancer probing /readyz keeps this instance: it still serves every request.
        const down = yield* call(baseUrl, "GET", "/readyz")
        expect(down.status).toBe(200)
        expect(down.body).toEqual({
          success: true,
          data: { status: "ok", database: "ok", redis: "unavailable", rate_limiter: "failing_open" }
        })
        expect((yield* call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key })).status).toBe(200)
        expect((yield* call(baseUrl, "GET", "/readyz")).body).toMatchObject({
          data: { redis: "unavailable", rate_limiter: "failing_open" }
        })
        expect((yield* call(baseUrl, "GET", "/healthz")).status).toBe(200)

        yield* Effect.promise(proxy.start)
        const back = yield* call(baseUrl, "GET", "/readyz").pipe(
          Effect.repeat({ until: (answer) => dataOf(answer).redis === "ok" }),
          Effect.timeout("5 seconds")
        )
        expect(back.status).toBe(200)
      })
  )

  it.scopedLive(
    "pointed at a closed port, the server starts, serves with headers, and is ready, reporting Redis unavailable",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(closedPort)
        const server = yield* startServer({
          REDIS_URL: `redis://127.0.0.1:${port}`,
          REDIS_KEY_PREFIX: yield* scopedPrefix
        })
        const answers = yield* Effect.forEach(Array.from({ length: 20 }), () =>
          timedGet(server.baseUrl, "/v1/intake-bots", server.demoKey)
        )
        for (const answer of answers) {
          expect(answer.status).toBe(200)
          expect(limitHeaders(answer.headers)).toMatchObject({ limit: 100, remaining: 99 })
        }
        // Ready all the same: Redis is reported, and only the database decides.
        const ready = yield* timedGet(server.baseUrl, "/readyz")
        expect(ready.status).toBe(200)
        expect(JSON.parse(ready.body)).toMatchObject({
          data: { redis: "unavailable", rate_limiter: "failing_open" }
        })
        // The state change is logged once, not per request.
        const { stdout } = server.output()
        expect(stdout.match(/rate limiter unavailable/g)).toHaveLength(1)
      }),
    // Starting a server process takes seconds, more on a loaded machine.
    120_000
  )

  it.scopedLive(
    "Redis stopped mid-run: a server process serves on with the headers, adds no latency, and limits come back",
    () =>
      Effect.gen(function* () {
        const proxy = yield* Effect.acquireRelease(Effect.promise(startRedisProxy), (p) =>
          Effect.promise(p.stop)
        )
        const server = yield* startServer({ REDIS_URL: proxy.url, REDIS_KEY_PREFIX: yield* scopedPrefix })
        const key = server.demoKey
        expect(key).toBeDefined()
        const get = () => timedGet(server.baseUrl, "/v1/intake-bots", key)

        // Baseline, Redis answering: the shared window counts down.
        yield* get()
        const before = yield* Effect.forEach(Array.from({ length: 59 }), get)
        expect(before.map((a) => a.status).every((s) => s === 200)).toBe(true)
        expect(before.map((a) => limitHeaders(a.headers).remaining)).toEqual(
          Array.from({ length: 59 }, (_, i) => 98 - i)
        )

        yield* Effect.promise(proxy.stop)
        const during = yield* Effect.forEach(Array.from({ length: 200 }), get)
        for (const answer of during) {
          expect(answer.status).toBe(200)
          const headers = limitHeaders(answer.headers)
          expect(headers).toMatchObject({ limit: 100, remaining: 99, policy: '"default";q=100;w=60' })
          expect(headers.reset).toBeGreaterThan(Date.now())
          expect(headers.fields).toMatch(/^"default";r=99;t=\d+$/)
        }
        const baseline = median(before.map((a) => a.ms))
        const afterFailure = median(during.slice(1).map((a) => a.ms))
        console.log(
          `HTTP median latency: Redis up ${baseline.toFixed(2)} ms, Redis down ${afterFailure.toFixed(2)} ms, ` +
            `first request after the stop ${during[0]!.ms.toFixed(2)} ms`
        )
        expect(afterFailure - baseline).toBeLessThan(5)

        // Redis back: after the cool-down the window is enforced again, earlier requests included.
        yield* Effect.promise(proxy.start)
        const counted = yield* get().pipe(
          Effect.zipLeft(Effect.sleep("100 millis")),
          Effect.repeat({ until: (a) => limitHeaders(a.headers).remaining < 99 }),
          Effect.timeout("10 seconds")
        )
        // 60 before the outage, this one: 39 left.
        expect(limitHeaders(counted.headers).remaining).toBe(39)
        const rest = yield* Effect.forEach(Array.from({ length: 40 }), get)
        expect(rest.map((a) => a.status)).toEqual([...Array(39).fill(200), 429])
        const refused = rest[39]!
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect(limitHeaders(refused.headers)).toMatchObject({ limit: 100, remaining: 0 })

        const { stdout } = server.output()
        expect(stdout.match(/rate limiter unavailable/g)).toHaveLength(1)
        expect(stdout.match(/rate limiter answers again/g)).toHaveLength(1)
      }),
    120_000
  )
})
