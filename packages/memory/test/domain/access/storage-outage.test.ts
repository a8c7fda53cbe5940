import { describe, expect, it } from "@effect/vitest"
import { StorageUnavailable } from "@intake/domain"
import { accessTestLayer, authenticate, provisionApiKey } from "@intake/testing"
import { Effect } from "effect"

/** While `storeDown.keys` is set, key lookups fail as a database that went away does. */
const storeDown = { keys: false }

const layer = accessTestLayer({
  apiKeys: (inner) => ({
    ...inner,
    findByHash: (hash: string) =>
      storeDown.keys
        ? Effect.fail(new StorageUnavailable({ operation: "apiKeys.findByHash" }))
        : inner.findByHash(hash)
  })
})

describe("Access.authenticate while the store is down", () => {
  it.effect(
    "a key it cannot look up fails as storage unavailable (a 500), not as an unknown key (a 401), and is not remembered",
    () =>
      Effect.gen(function* () {
        const { authorization, apiKey } = yield* provisionApiKey()
        storeDown.keys = true
        const failure = yield* Effect.flip(authenticate(authorization))
        expect(failure).toBeInstanceOf(StorageUnavailable)
        storeDown.keys = false
        const principal = yield* authenticate(authorization)
        expect(principal.apiKey.id).toBe(apiKey.id)
      }).pipe(Effect.provide(layer), Effect.ensuring(Effect.sync(() => (storeDown.keys = false))))
  )

  it.effect("a key looked up before the outage keeps authenticating from the cache", () =>
    Effect.gen(function* () {
      const { authorization, apiKey } = yield* provisionApiKey()
      yield* authenticate(authorization)
      storeDown.keys = true
      expect((yield* authenticate(authorization)).apiKey.id).toBe(apiKey.id)
    }).pipe(Effect.provide(layer), Effect.ensuring(Effect.sync(() => (storeDown.keys = false))))
  )
})
