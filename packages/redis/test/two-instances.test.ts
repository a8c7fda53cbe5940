/**
 * Two server instances in one process: each its own Access (own key cache, own fail-open
 * state) and Provisioning, one shared database (a MemoryDatabase both use), and either
 * Redis between them or nothing (each its own in-process invalidation and limiter).
 */
import { performance } from "node:perf_hooks"
import { expect, it } from "@effect/vitest"
import {
  Access,
  type AccessInvalidation,
  type AccessSettings,
  makeAccessLayer,
  Provisioning,
  ProvisioningLive,
  type RateLimiter
} from "@intake/domain"
import {
  MemoryAccessInvalidation,
  MemoryApiKeyRepository,
  MemoryDatabase,
  MemoryRateLimiter,
  MemoryUnitOfWork,
  MemoryWorkspaceRepository
} from "@intake/memory/internal"
import { PlatformLive } from "@intake/node"
import { bearer } from "@intake/testing"
import { Context, Effect, Either, Layer } from "effect"
import { RedisAccessInvalidationLive } from "../src/access-invalidation.js"
import { RedisRateLimiterLive } from "../src/rate-limiter.js"
import { testConnection, uniquePrefix, withRedis } from "../src/testing.js"

type Transport = Layer.Layer<RateLimiter | AccessInvalidation>

const redisTransport = (keyPrefix: string): Transport =>
  Layer.merge(RedisRateLimiterLive, RedisAccessInvalidationLive).pipe(
    Layer.provide(testConnection({ keyPrefix }))
  )

const inProcessTransport: Transport = Layer.merge(MemoryRateLimiter, MemoryAccessInvalidation)

/** Builds one instance on `database`, living until the test's scope closes. */
const startInstance = (
  database: Context.Context<MemoryDatabase>,
  transport: Transport,
  settings: Partial<AccessSettings> = {}
) =>
  Effect.map(
    Layer.build(
      Layer.mergeAll(makeAccessLayer(settings), ProvisioningLive).pipe(
        Layer.provide(
          Layer.mergeAll(MemoryWorkspaceRepository, MemoryApiKeyRepository, MemoryUnitOfWork, transport).pipe(
            Layer.provideMerge(PlatformLive)
          )
        ),
        Layer.provide(Layer.succeedContext(database))
      )
    ),
    (context) => ({ access: Context.get(context, Access), provisioning: Context.get(context, Provisioning) })
  )

type Instance = Effect.Effect.Success<ReturnType<typeof startInstance>>

const sharedDatabase = Layer.build(MemoryDatabase.Default)

const issueProKey = (instance: Instance) =>
  Effect.gen(function* () {
    const workspace = yield* instance.provisioning.createWorkspace({ name: "Acme", plan: "pro" })
    return yield* instance.provisioning.createApiKey(workspace.id, { scopes: ["read:records"] })
  }).pipe(Effect.orDie)

const accepts = (instance: Instance, key: string) =>
  Effect.map(Effect.either(instance.access.authenticate(bearer(key))), Either.isRight)

/** Polls until `instance` refuses `key`; answers how long that took, or fails after `limitMs`. */
const millisUntilRefused = (instance: Instance, key: string, limitMs: number) =>
  Effect.gen(function* () {
    const started = performance.now()
    while (yield* accepts(instance, key)) {
      if (performance.now() - started > limitMs)
        return yield* Effect.fail(`still accepted after ${limitMs} ms`)
      yield* Effect.sleep("10 millis")
    }
    return performance.now() - started
  })

withRedis("two instances on one database", () => {
  it.scopedLive(
    "with Redis: 200 requests of one Pro key over both get exactly 100 admissions and agree",
    () =>
      Effect.gen(function* () {
        const database = yield* sharedDatabase
        const keyPrefix = uniquePrefix()
        const a = yield* startInstance(database, redisTransport(keyPrefix))
        const b = yield* startInstance(database, redisTransport(keyPrefix))
        const issued = yield* issueProKey(a)
        const principals = [
          yield* a.access.authenticate(bearer(issued.key)),
          yield* b.access.authenticate(bearer(issued.key))
        ]
        const instances = [a, b]

        const decisions = yield* Effect.forEach(Array.from({ length: 200 }), (_, i) =>
          instances[i % 2]!.access.limitKey(principals[i % 2]!)
        )
        const admitted = decisions.filter((d) => d.allowed)
        expect(admitted).toHaveLength(100)
        expect(decisions.slice(0, 100).every((d) => d.allowed)).toBe(true)
        expect(admitted.map((d) => d.remaining)).toEqual(Array.from({ length: 100 }, (_, i) => 99 - i))
        expect(decisions.every((d) => d.limit === 100)).toBe(true)
        // Every answer, from either instance, names the same reset: the first request's, plus 60 s.
        expect(new Set(decisions.map((d) => d.resetAt)).size).toBe(1)
        const refused = decisions.slice(100)
        expect(
          refused.every((d) => d.remaining === 0 && d.retryAfterSeconds >= 59 && d.retryAfterSeconds <= 60)
        ).toBe(true)
      })
  )

  it.scopedLive("with Redis: a key revoked on A is refused by B within a second", () =>
    Effect.gen(function* () {
      const database = yield* sharedDatabase
      const keyPrefix = uniquePrefix()
      const a = yield* startInstance(database, redisTransport(keyPrefix))
      const b = yield* startInstance(database, redisTransport(keyPrefix))
      const issued = yield* issueProKey(a)
      // Both have the key in their caches.
      expect(yield* accepts(a, issued.key)).toBe(true)
      expect(yield* accepts(b, issued.key)).toBe(true)

      yield* a.provisioning.revokeApiKey(issued.apiKey.id)
      expect(yield* accepts(a, issued.key)).toBe(false)
      const waited = yield* millisUntilRefused(b, issued.key, 1_000)
      console.log(`revocation on A refused by B after ${waited.toFixed(1)} ms (Redis pub/sub)`)
    })
  )

  it.scopedLive("without Redis: B goes on trusting its cached key until the cache TTL, then refuses it", () =>
    Effect.gen(function* () {
      const database = yield* sharedDatabase
      // The production TTL is 60 s; a short one shows the same bound without waiting a minute.
      const settings = { keyCacheTtlMs: 600 }
      const a = yield* startInstance(database, inProcessTransport, settings)
      const b = yield* startInstance(database, inProcessTransport, settings)
      const issued = yield* issueProKey(a)
      expect(yield* accepts(b, issued.key)).toBe(true)
      const cachedAt = performance.now()

      yield* a.provisioning.revokeApiKey(issued.apiKey.id)
      expect(yield* accepts(a, issued.key)).toBe(false)
      // Nothing told B: its cached entry still answers.
      expect(yield* accepts(b, issued.key)).toBe(true)
      yield* millisUntilRefused(b, issued.key, 1_000)
      const refusedAfter = performance.now() - cachedAt
      expect(refusedAfter).toBeGreaterThanOrEqual(590)
      expect(refusedAfter).toBeLessThan(900)
    })
  )
})
