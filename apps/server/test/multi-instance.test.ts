/**
 * Two server processes on one PostgreSQL database (fresh per test) and, where said, one
 * Redis: the limits and revocations of the spec hold across instances.
 */
import { performance } from "node:perf_hooks"
import { expect, it } from "@effect/vitest"
import { freshDatabaseUrl } from "@intake/postgres/testing"
import { redisUrl, scopedPrefix, withRedis } from "@intake/redis/testing"
import { Effect } from "effect"
import { ADMIN_TOKEN, call } from "./harness.js"
import { type ServerProcess, startServer, timedGet } from "./process.js"
import { dataOf, provision } from "./support.js"

/** Two instances on one fresh database, with `env` on top (e.g. REDIS_URL). */
const twoInstances = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const database = yield* freshDatabaseUrl()
    const shared = { DATABASE_URL: database.url, INTAKE_ADMIN_TOKEN: ADMIN_TOKEN, ...env }
    // One after the other: the first applies the migrations.
    const a = yield* startServer(shared)
    const b = yield* startServer(shared)
    return [a, b] as const
  })

const headersOf = (headers: Headers) => ({
  limit: headers.get("x-ratelimit-limit"),
  remaining: headers.get("x-ratelimit-remaining"),
  reset: headers.get("x-ratelimit-reset"),
  retryAfter: headers.get("retry-after")
})

/** Polls `server` with `key` until it answers 401; how long that took. */
const millisUntilRefused = (server: ServerProcess, key: string, limitMs: number) =>
  Effect.gen(function* () {
    const started = performance.now()
    while ((yield* timedGet(server.baseUrl, "/v1/intake-bots", key)).status !== 401) {
      if (performance.now() - started > limitMs)
        return yield* Effect.dieMessage(`still accepted after ${limitMs} ms`)
      yield* Effect.sleep("10 millis")
    }
    return performance.now() - started
  })

withRedis("two server processes on one database", () => {
  it.scopedLive(
    "with one Redis: 200 requests of one Pro key over both get exactly 100 successes and 100 429s, with agreeing headers",
    () =>
      Effect.gen(function* () {
        const [a, b] = yield* twoInstances({ REDIS_URL: redisUrl, REDIS_KEY_PREFIX: yield* scopedPrefix })
        const tenant = yield* provision(a.baseUrl, { plan: "pro", rateLimitPerMinute: null })
        const answers = yield* Effect.forEach(
          Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b)),
          (server) => timedGet(server.baseUrl, "/v1/intake-bots", tenant.key),
          { concurrency: 10 }
        )
        const ok = answers.filter((x) => x.status === 200)
        const refused = answers.filter((x) => x.status === 429)
        expect(ok).toHaveLength(100)
        expect(refused).toHaveLength(100)
        // Both instances admitted some and refused some: the window is shared, not split.
        for (const side of [0, 1]) {
          const statuses = new Set(answers.filter((_, i) => i % 2 === side).map((x) => x.status))
          expect(statuses).toEqual(new Set([200, 429]))
        }
        const headers = answers.map((x) => headersOf(x.headers))
        expect(headers.every((h) => h.limit === "100")).toBe(true)
        expect(ok.map((x) => Number(headersOf(x.headers).remaining)).sort((p, q) => p - q)).toEqual(
          Array.from({ length: 100 }, (_, i) => i)
        )
        expect(refused.every((x) => headersOf(x.headers).remaining === "0")).toBe(true)
        // One window: every answer from either instance names the same reset.
        expect(new Set(headers.map((h) => h.reset)).size).toBe(1)
        const reset = Number(headers[0]!.reset)
        // Retry-After is the wait until that reset, from when the server answered, and equals details.retry_after.
        const waitFrom = (at: number) => Math.max(1, Math.ceil((reset - at) / 1000))
        for (const x of refused) {
          const retryAfter = Number(headersOf(x.headers).retryAfter)
          expect(retryAfter).toBeGreaterThanOrEqual(waitFrom(x.receivedAt))
          expect(retryAfter).toBeLessThanOrEqual(waitFrom(x.sentAt))
          const body = JSON.parse(x.body) as { error: { code: string; details: { retry_after: number } } }
          expect(body.error).toMatchObject({
            code: "rate_limit_exceeded",
            details: { retry_after: retryAfter }
          })
        }
      }),
    120_000
  )

  it.scopedLive(
    "with one Redis: a key revoked through the admin API of A is refused by B within a second",
    () =>
      Effect.gen(function* () {
        const [a, b] = yield* twoInstances({ REDIS_URL: redisUrl, REDIS_KEY_PREFIX: yield* scopedPrefix })
        const tenant = yield* provision(a.baseUrl)
        // B has the key in its cache.
        expect((yield* timedGet(b.baseUrl, "/v1/intake-bots", tenant.key)).status).toBe(200)
        dataOf(yield* call(a.baseUrl, "POST", `/admin/api-keys/${tenant.keyId}/revoke`, { key: ADMIN_TOKEN }))
        const waited = yield* millisUntilRefused(b, tenant.key, 1_000)
        console.log(`revoked on A, refused by B after ${waited.toFixed(1)} ms (Redis)`)
      }),
    120_000
  )

  it.scopedLive(
    "without Redis: B refuses the revoked key at its cache TTL (3 s here by INTAKE_KEY_CACHE_TTL; 60 s by default)",
    () =>
      Effect.gen(function* () {
        const [a, b] = yield* twoInstances({ INTAKE_KEY_CACHE_TTL: "3s" })
        const tenant = yield* provision(a.baseUrl)
        // B caches the key while answering this request: not before it was sent.
        const cachedAt = performance.now()
        expect((yield* timedGet(b.baseUrl, "/v1/intake-bots", tenant.key)).status).toBe(200)
        dataOf(yield* call(a.baseUrl, "POST", `/admin/api-keys/${tenant.keyId}/revoke`, { key: ADMIN_TOKEN }))
        expect((yield* timedGet(a.baseUrl, "/v1/intake-bots", tenant.key)).status).toBe(401)
        // Nothing told B: it still trusts its cached entry.
        expect((yield* timedGet(b.baseUrl, "/v1/intake-bots", tenant.key)).status).toBe(200)
        yield* millisUntilRefused(b, tenant.key, 4_000)
        const refusedAfter = performance.now() - cachedAt
        console.log(
          `revoked on A, refused by B ${refusedAfter.toFixed(0)} ms after B cached it (no Redis, TTL 3 s)`
        )
        expect(refusedAfter).toBeGreaterThanOrEqual(2_990)
        expect(refusedAfter).toBeLessThan(3_600)
      }),
    120_000
  )
})
