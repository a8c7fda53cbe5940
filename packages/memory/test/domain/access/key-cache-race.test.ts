import { describe, expect, it } from "@effect/vitest"
import { Provisioning } from "@intake/domain"
import { accessTestLayer, authenticate, provisionApiKey } from "@intake/testing"
import { Deferred, Effect, Fiber, Ref } from "effect"

/** Lets a test hold key lookups in flight: while the gate is set, findByHash waits on it after reading. */
let gate: Deferred.Deferred<void> | null = null

const layer = accessTestLayer({
  apiKeys: (inner) => ({
    ...inner,
    findByHash: (hash: string) =>
      Effect.tap(inner.findByHash(hash), () => (gate === null ? Effect.void : Deferred.await(gate)))
  })
})

describe("key cache", () => {
  it.effect(
    "a lookup that read the key before a revocation does not put the stale key back in the cache",
    () =>
      Effect.gen(function* () {
        const { authorization, apiKey } = yield* provisionApiKey()
        const released = yield* Deferred.make<void>()
        gate = released
        const started = yield* Ref.make(false)
        const inFlight = yield* Effect.fork(
          Effect.zipRight(Ref.set(started, true), authenticate(authorization))
        )
        yield* Effect.yieldNow()
        expect(yield* Ref.get(started)).toBe(true)

        yield* Effect.flatMap(Provisioning, (p) => p.revokeApiKey(apiKey.id))
        gate = null
        yield* Deferred.succeed(released, undefined)
        // The request that was already past its lookup may finish; the next one must not be served stale.
        yield* Fiber.await(inFlight)
        const after = yield* Effect.flip(authenticate(authorization))
        expect(after._tag).toBe("AuthenticationRequired")
      }).pipe(Effect.provide(layer))
  )
})
