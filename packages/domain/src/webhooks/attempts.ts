/**
 * The attempts of events (docs/rules.md, Webhooks and deliveries): one for every endpoint
 * that takes the event, pending for active endpoints, skipped for paused or disabled ones.
 * Plain functions, so a create builds them in its own unit of work (submissions.ts).
 */
import { Effect } from "effect"
import type { StorageUnavailable } from "../shared/errors.js"
import type { Delivery, DomainEvent, WebhookEndpoint } from "../shared/models.js"
import { Ids } from "../shared/ports.js"
import { endpointTakes } from "./event-payloads.js"
import { DeliveryRepository } from "./ports.js"

/**
 * One pending attempt of each event for every endpoint of `endpoints` that takes it
 * (only ACTIVE endpoints may be given), created at `now`.
 */
export const pendingAttemptsFor = (
  events: ReadonlyArray<DomainEvent>,
  endpoints: ReadonlyArray<WebhookEndpoint>,
  now: number,
  ids: Ids["Type"]
): ReadonlyArray<Delivery> => {
  const queued: Array<Delivery> = []
  for (const event of events)
    for (const endpoint of endpoints)
      if (endpointTakes(endpoint, event))
        queued.push(
          pendingAttempt({
            id: ids.at("dlv", now),
            webhookId: endpoint.id,
            eventId: event.id,
            eventType: event.type,
            attempt: 1,
            trigger: "event",
            createdAt: now
          })
        )
  return queued
}

/**
 * One `skipped` attempt of each event for every endpoint of `endpoints` (paused or
 * disabled ones) that takes it: recorded, never sent, never retried; recover queues it again.
 */
export const skippedAttemptsFor = (
  events: ReadonlyArray<DomainEvent>,
  endpoints: ReadonlyArray<WebhookEndpoint>,
  now: number,
  ids: Ids["Type"]
): ReadonlyArray<Delivery> =>
  pendingAttemptsFor(events, endpoints, now, ids).map((attempt) => {
    const endpoint = endpoints.find((candidate) => candidate.id === attempt.webhookId)
    return {
      ...attempt,
      status: "skipped" as const,
      error: `not sent: the webhook is ${endpoint?.status ?? "not active"}`
    }
  })

/** Events a recovery reads (and queues) at a time: a long window is queued in batches. */
export const RECOVER_BATCH = 500

/**
 * Queues one pending attempt of each event for every ACTIVE endpoint that takes it.
 * Called inside the unit of work that records the events, so an event and its attempts
 * commit together. Answers how many attempts were queued.
 */
export const queueDeliveries = (
  events: ReadonlyArray<DomainEvent>,
  now: number
): Effect.Effect<number, StorageUnavailable, DeliveryRepository | Ids> =>
  Effect.gen(function* () {
    if (events.length === 0) return 0
    const repository = yield* DeliveryRepository
    const workspaces = [...new Set(events.map((event) => event.workspaceId))]
    const endpoints = (yield* Effect.forEach(workspaces, repository.activeEndpoints)).flat()
    const queued = pendingAttemptsFor(events, endpoints, now, yield* Ids)
    if (queued.length > 0) yield* repository.enqueue(queued, now)
    return queued.length
  })

/** An attempt not sent yet, due when its queue says. */
export const pendingAttempt = (
  fields: Pick<Delivery, "id" | "webhookId" | "eventId" | "eventType" | "attempt" | "trigger" | "createdAt">
): Delivery => ({
  ...fields,
  status: "pending",
  responseStatus: null,
  responseBody: null,
  error: null,
  durationMs: null,
  nextRetryAt: null,
  sentAt: null
})
