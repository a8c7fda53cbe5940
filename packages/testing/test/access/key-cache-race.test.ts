import { describe, expect, it } from "@effect/vitest"
import { AccessLive, ApiKeyRepository, Provisioning, ProvisioningLive } from "@intake/domain"
import {
  MemoryAccessInvalidation,
  MemoryApiKeyRepository,
  MemoryDatabase,
  MemoryRateLimiter,
  MemoryUnitOfWork,
  MemoryWorkspaceRepository,
  PlatformLive
} from "@intake/memory"
import { Deferred, Effect, Fiber, Layer, Ref } from "effect"
import { authenticate, provisionApiKey } from "../../src/fixtures-access.js"

/** Lets a test hold key lookups in flight: while the gate is set, findByHash waits on it after reading. */
let gate: Deferred.Deferred<void> | null = null

const GatedKeys = Layer.effect(
  ApiKeyRepository,
  Effect.map(ApiKeyRepository, (inner) => ({
    ...inner,
    findByHash: (hash: string) =>
      Effect.tap(inner.findByHash(hash), () => (gate === null ? Effect.void : Deferred.await(gate)))
  }))
).pipe(Layer.provide(MemoryApiKeyRepository))

const layer = Layer.mergeAll(AccessLive, ProvisioningLive).pipe(
  Layer.provideMerge(
    Layer.mergeAll(
      MemoryWorkspaceRepository,
      GatedKeys,
      MemoryAccessInvalidation,
      MemoryUnitOfWork,
      MemoryRateLimiter
    ).pipe(Layer.provideMerge(MemoryDatabase.Default), Layer.merge(PlatformLive))
  )
)

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
