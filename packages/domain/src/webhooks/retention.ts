/**
 * Retention (docs/webhooks.md, "Data kept"): finished delivery attempts and outbox events
 * older than WEBHOOK_RETENTION are purged by a periodic job, in batches, as expired
 * idempotency records are. A pending attempt, and an event with one, stay until delivered
 * or given up. A failed round is logged and tried again at the next: the job never stops
 * the worker.
 */
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { DeliverySettings } from "./delivery-settings.js"
import { DeliveryRepository } from "./ports.js"

/** Rows deleted per statement: short statements, no long lock. */
export const RETENTION_PURGE_BATCH = 1_000
export const RETENTION_PURGE_INTERVAL = Duration.hours(1)

/** One purge round: deletes what is older than the retention now; answers how many of each. */
export const purgeDeliveryHistory = (batchSize: number = RETENTION_PURGE_BATCH) =>
  Effect.gen(function* () {
    const settings = yield* DeliverySettings
    const repository = yield* DeliveryRepository
    const now = yield* Clock.currentTimeMillis
    const purged = yield* repository.purgeOlderThan(now - settings.retentionMs, batchSize)
    if (purged.deliveries > 0 || purged.events > 0)
      yield* Effect.logInfo({ message: "purged delivery history past its retention", ...purged })
    return purged
  })

/** Runs a purge round at start and then every `interval`, for the layer's lifetime. */
export const DeliveryHistoryPurgeLive = (
  interval: Duration.DurationInput = RETENTION_PURGE_INTERVAL,
  batchSize: number = RETENTION_PURGE_BATCH
) =>
  Layer.scopedDiscard(
    purgeDeliveryHistory(batchSize).pipe(
      Effect.catchAll((error) => Effect.logWarning("delivery history purge failed", error)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.forkScoped
    )
  )
