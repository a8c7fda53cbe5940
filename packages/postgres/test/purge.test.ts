import { expect, it } from "@effect/vitest"
import { IdempotencyStore, makeApiKeyId, UnitOfWork } from "@intake/domain"
import { MemoryDatabase, MemoryIdempotencyStore, MemoryUnitOfWork } from "@intake/memory/internal"
import { Duration, Effect, Layer, TestClock } from "effect"
import { IdempotencyPurgeLive } from "../src/purge.js"

const HOUR = 3_600_000
const created = { status: 201, body: { id: "sub_1" } }

it.effect("the purge job deletes the records expired by each tick, and keeps the others", () =>
  Effect.gen(function* () {
    const store = yield* IdempotencyStore
    const uow = yield* UnitOfWork
    const early = { apiKeyId: makeApiKeyId("key_a"), key: "early" }
    const late = { apiKeyId: makeApiKeyId("key_a"), key: "late" }
    yield* uow.transaction(store.complete(early, "fp", created, 0, HOUR))
    yield* uow.transaction(store.complete(late, "fp", created, 0, 3 * HOUR))
    yield* Effect.scoped(
      Effect.gen(function* () {
        yield* Layer.build(IdempotencyPurgeLive(Duration.hours(1)))
        yield* TestClock.adjust(Duration.hours(1))
        // The next round would purge both; only `early` had expired at this one.
        expect(yield* store.purgeExpired(2 * HOUR)).toBe(0)
        yield* TestClock.adjust(Duration.hours(2))
        expect(yield* store.purgeExpired(10 * HOUR)).toBe(0)
      })
    )
  }).pipe(
    Effect.provide(
      Layer.merge(MemoryIdempotencyStore, MemoryUnitOfWork).pipe(Layer.provide(MemoryDatabase.Default))
    )
  )
)
