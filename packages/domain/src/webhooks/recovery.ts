/**
 * A recovery (docs/webhooks.md, Recovery): the events of a window that an active endpoint
 * took and that have no successful attempt for it, queued again in batches, oldest first.
 */
import { Effect, Option } from "effect"
import { Conflict, notFound } from "../shared/errors.js"
import type { WebhookId } from "../shared/ids.js"
import type { DomainEvent, ListPosition, RecoverableEvent } from "../shared/models.js"
import type { Ids } from "../shared/ports.js"
import { pendingAttempt, RECOVER_BATCH } from "./attempts.js"
import type { DeliveryRepository } from "./ports.js"

/** Queues the recover attempts of the endpoint's window, within the caller's unit of work; answers how many. */
export const queueRecoveredAttempts = (
  repository: DeliveryRepository["Type"],
  ids: Ids["Type"],
  endpointId: WebhookId,
  since: number,
  until: number,
  now: number
) =>
  Effect.gen(function* () {
    const locked = yield* Effect.flatMap(
      repository.lockEndpoint(endpointId),
      Option.match({ onNone: () => Effect.fail(notFound("webhook")), onSome: Effect.succeed })
    )
    if (locked.status !== "active")
      return yield* Effect.fail(
        new Conflict({
          message: `The webhook is ${locked.status}: set its status to active first, then recover.`
        })
      )
    // Events from before the endpoint existed were never its to receive.
    const occurrences = { since: Math.max(since, locked.createdAt), until }
    let after: ListPosition | null = null
    let count = 0
    for (let batch = 0; ; batch++) {
      const found: ReadonlyArray<RecoverableEvent> = yield* repository.recoverableEvents(
        locked,
        occurrences,
        after,
        RECOVER_BATCH
      )
      if (found.length === 0) break
      // Ids sorted and each batch due 1 ms after the one before: the queue's order
      // (due time, then id) is the order of occurrence, so the oldest leaves first.
      const attemptIds = (yield* Effect.forEach(found, () => ids.next("dlv"))).sort()
      const attempts = found.map(({ event, attemptsMade }, index) =>
        pendingAttempt({
          id: attemptIds[index]!,
          webhookId: locked.id,
          eventId: event.id,
          eventType: event.type,
          attempt: attemptsMade + 1,
          trigger: "recover",
          createdAt: now
        })
      )
      yield* repository.enqueue(attempts, now + batch)
      count += attempts.length
      if (found.length < RECOVER_BATCH) break
      const last: DomainEvent = found[found.length - 1]!.event
      after = { createdAt: last.createdAt, id: last.id }
    }
    return count
  })
