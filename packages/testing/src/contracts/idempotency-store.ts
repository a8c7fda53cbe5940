/** The contract every IdempotencyStore adapter keeps. */

import { expect, layer } from "@effect/vitest"
import {
  IdempotencyClaimNotFresh,
  IdempotencyConflict,
  IdempotencyRecordExists,
  type IdempotencyScope,
  IdempotencyStore,
  makeApiKeyId,
  UnitOfWork
} from "@intake/domain"
import { Effect, type Layer } from "effect"
import { uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

const DAY = 24 * 60 * 60 * 1000
const T0 = 1_790_000_000_000

const aScope = (): IdempotencyScope => ({
  apiKeyId: makeApiKeyId(uniqueId("key")),
  key: `req-${uniqueId("k")}`
})
const created = { status: 201, body: { submission: { id: "sub_1" } } }

export const idempotencyStoreContract = (
  name: string,
  theLayer: Layer.Layer<IdempotencyStore | UnitOfWork>
): void => {
  layer(checkedStores(theLayer))(`IdempotencyStore contract: ${name}`, (it) => {
    it.effect("a key never seen is fresh", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        expect(yield* uow.transaction(store.claim(aScope(), "fp", T0))).toEqual({ _tag: "Fresh" })
      })
    )

    it.effect("a completed key replays its response for the same fingerprint", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        const scope = aScope()
        yield* uow.transaction(
          Effect.zipRight(store.claim(scope, "fp", T0), store.complete(scope, "fp", created, T0, T0 + DAY))
        )
        expect(yield* uow.transaction(store.claim(scope, "fp", T0 + 1000))).toEqual({
          _tag: "Replay",
          response: created
        })
      })
    )

    it.effect("a completed key with another fingerprint is a conflict", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        const scope = aScope()
        yield* uow.transaction(store.complete(scope, "fp", created, T0, T0 + DAY))
        const refused = yield* Effect.flip(uow.transaction(store.claim(scope, "other", T0 + 1000)))
        expect(refused).toBeInstanceOf(IdempotencyConflict)
      })
    )

    it.effect("keys are scoped to the API key", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        const scope = aScope()
        yield* uow.transaction(store.complete(scope, "fp", created, T0, T0 + DAY))
        const otherApiKey = { ...scope, apiKeyId: makeApiKeyId(uniqueId("key")) }
        expect(yield* uow.transaction(store.claim(otherApiKey, "other", T0))).toEqual({ _tag: "Fresh" })
      })
    )

    it.effect("a record stops replaying at its expiry and the key is fresh again", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        const scope = aScope()
        yield* uow.transaction(store.complete(scope, "fp", created, T0, T0 + DAY))
        expect((yield* uow.transaction(store.claim(scope, "fp", T0 + DAY - 1)))._tag).toBe("Replay")
        expect(yield* uow.transaction(store.claim(scope, "other", T0 + DAY))).toEqual({ _tag: "Fresh" })
        // Completing the fresh claim replaces the expired record.
        const again = { status: 201, body: { submission: { id: "sub_2" } } }
        yield* uow.transaction(store.complete(scope, "other", again, T0 + DAY, T0 + 2 * DAY))
        expect(yield* uow.transaction(store.claim(scope, "other", T0 + DAY + 1))).toEqual({
          _tag: "Replay",
          response: again
        })
      })
    )

    it.effect(
      "complete keeps an unexpired record and fails, undoing its unit of work; it replaces an expired one",
      () =>
        Effect.gen(function* () {
          const store = yield* IdempotencyStore
          const uow = yield* UnitOfWork
          const scope = aScope()
          yield* uow.transaction(store.complete(scope, "fp", created, T0, T0 + DAY))
          const other = { status: 404, body: { code: "resource_not_found" } }
          // Another key's response stored first in the same unit of work is undone with it; a
          // step after it (which may carry its statement) fails with it.
          const beside = aScope()
          const refused = yield* Effect.flip(
            uow.transaction(
              Effect.zipRight(
                store.complete(beside, "fp", created, T0 + 1, T0 + DAY + 1),
                Effect.zipRight(
                  store.complete(scope, "fp", other, T0 + 1, T0 + DAY + 1),
                  store.claim(aScope(), "fp", T0 + 1)
                )
              )
            )
          )
          expect(refused).toBeInstanceOf(IdempotencyRecordExists)
          expect(yield* uow.transaction(store.claim(beside, "fp", T0 + 2))).toEqual({ _tag: "Fresh" })
          expect(yield* uow.transaction(store.claim(scope, "fp", T0 + 2))).toEqual({
            _tag: "Replay",
            response: created
          })
          yield* uow.transaction(store.complete(scope, "fp", other, T0 + DAY, T0 + 2 * DAY))
          expect(yield* uow.transaction(store.claim(scope, "fp", T0 + DAY + 1))).toEqual({
            _tag: "Replay",
            response: other
          })
        })
    )

    it.effect(
      "claimFresh claims a fresh or expired key; a held key, or one with a record whatever its fingerprint, fails it and claims nothing",
      () =>
        Effect.gen(function* () {
          const store = yield* IdempotencyStore
          const uow = yield* UnitOfWork
          const fresh = aScope()
          // Claimed: it is completed in the same unit of work, and replays.
          yield* uow.transaction(
            Effect.zipRight(
              store.claimFresh(fresh, "fp", T0),
              store.complete(fresh, "fp", created, T0, T0 + DAY)
            )
          )
          expect((yield* uow.transaction(store.claim(fresh, "fp", T0 + 1)))._tag).toBe("Replay")
          for (const fingerprint of ["fp", "other"]) {
            // A step after it (which may carry its statement) fails with it.
            const refused = yield* Effect.flip(
              uow.transaction(
                Effect.zipRight(
                  store.claimFresh(fresh, fingerprint, T0 + 1),
                  store.claim(aScope(), "fp", T0 + 1)
                )
              )
            )
            expect(refused).toBeInstanceOf(IdempotencyClaimNotFresh)
          }
          const reserved = aScope()
          yield* uow.transaction(store.reserve(reserved, "fp", T0, T0 + 60_000))
          expect(
            yield* Effect.flip(uow.transaction(store.claimFresh(reserved, "fp", T0 + 1)))
          ).toBeInstanceOf(IdempotencyClaimNotFresh)
          // Expired, the record no longer counts.
          yield* uow.transaction(store.claimFresh(fresh, "other", T0 + DAY))
        })
    )

    it.effect("a completion inside a unit of work that fails leaves nothing stored", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        const scope = aScope()
        const failed = yield* Effect.flip(
          uow.transaction(
            Effect.gen(function* () {
              yield* store.claim(scope, "fp", T0)
              yield* store.complete(scope, "fp", created, T0, T0 + DAY)
              return yield* Effect.fail("operation failed after completing" as const)
            })
          )
        )
        expect(failed).toBe("operation failed after completing")
        expect(yield* uow.transaction(store.claim(scope, "other", T0 + 1))).toEqual({ _tag: "Fresh" })
      })
    )

    it.effect("a reservation is in flight for claim and reserve until completed, then replays", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        const scope = aScope()
        expect(yield* uow.transaction(store.reserve(scope, "fp", T0, T0 + 60_000))).toEqual({ _tag: "Fresh" })
        for (const fingerprint of ["fp", "other"]) {
          expect(yield* Effect.flip(uow.transaction(store.claim(scope, fingerprint, T0 + 1)))).toBeInstanceOf(
            IdempotencyConflict
          )
          expect(
            yield* Effect.flip(uow.transaction(store.reserve(scope, fingerprint, T0 + 1, T0 + 60_000)))
          ).toBeInstanceOf(IdempotencyConflict)
        }
        yield* uow.transaction(store.complete(scope, "fp", created, T0, T0 + DAY))
        expect(yield* uow.transaction(store.reserve(scope, "fp", T0 + 2, T0 + 60_000))).toEqual({
          _tag: "Replay",
          response: created
        })
        // Releasing a completed record changes nothing.
        yield* uow.transaction(store.release(scope, "fp"))
        expect((yield* uow.transaction(store.claim(scope, "fp", T0 + 3)))._tag).toBe("Replay")
      })
    )

    it.effect("a released reservation, or one that ran out, leaves the key fresh", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        const released = aScope()
        yield* uow.transaction(store.reserve(released, "fp", T0, T0 + 60_000))
        yield* uow.transaction(store.release(released, "fp"))
        expect(yield* uow.transaction(store.claim(released, "other", T0 + 1))).toEqual({ _tag: "Fresh" })
        const abandoned = aScope()
        yield* uow.transaction(store.reserve(abandoned, "fp", T0, T0 + 60_000))
        expect(yield* uow.transaction(store.reserve(abandoned, "fp", T0 + 60_000, T0 + 120_000))).toEqual({
          _tag: "Fresh"
        })
      })
    )

    it.effect("purgeExpired deletes the records expired at or before now and counts them", () =>
      Effect.gen(function* () {
        const store = yield* IdempotencyStore
        const uow = yield* UnitOfWork
        // Far in the future of the other tests' records, so they count too: purge them first.
        const now = T0 + 100 * DAY
        yield* store.purgeExpired(now - DAY)
        const old = aScope()
        const edge = aScope()
        const live = aScope()
        yield* uow.transaction(
          Effect.all([
            store.complete(old, "fp", created, now - 2 * DAY, now - DAY),
            store.complete(edge, "fp", created, now - DAY, now),
            store.complete(live, "fp", created, now, now + DAY)
          ])
        )
        expect(yield* store.purgeExpired(now)).toBe(2)
        expect(yield* store.purgeExpired(now)).toBe(0)
        // The live record still replays; the purged ones are gone even for an earlier clock.
        expect((yield* uow.transaction(store.claim(live, "fp", now)))._tag).toBe("Replay")
        expect(yield* uow.transaction(store.claim(old, "other", now - 2 * DAY))).toEqual({ _tag: "Fresh" })
      })
    )
  })
}
