/**
 * Expired idempotency records (older than their 24 h expiry) are deleted by a periodic
 * job. Expired records are already ignored by claims; the purge only bounds the table.
 * A failed round is logged and retried at the next tick: the job never stops the server.
 */
import { IdempotencyStore } from "@intake/domain"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"

export const IDEMPOTENCY_PURGE_INTERVAL = Duration.hours(1)

/** One purge round: deletes what expired by now, answers how many. */
export const purgeExpiredIdempotencyRecords = Effect.gen(function* () {
  const store = yield* IdempotencyStore
  const purged = yield* store.purgeExpired(yield* Clock.currentTimeMillis)
  if (purged > 0) yield* Effect.logDebug(`purged ${purged} expired idempotency records`)
  return purged
})

/** Runs a purge round at start and then every `interval`, for the layer's lifetime. */
export const IdempotencyPurgeLive = (interval: Duration.DurationInput = IDEMPOTENCY_PURGE_INTERVAL) =>
  Layer.scopedDiscard(
    purgeExpiredIdempotencyRecords.pipe(
      Effect.catchAll((error) => Effect.logWarning("idempotency purge failed", error)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.forkScoped
    )
  )
