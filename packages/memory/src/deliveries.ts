/** Memory adapters of the delivery queue and log, and of the dispatcher wake-up signal. */
import {
  type Delivery,
  type DeliveryFilter,
  DeliveryRepository,
  DeliveryWakeups,
  EndpointHealth,
  EventPayloads,
  noDeliveryFilter,
  Paging,
  type WebhookEndpoint
} from "@intake/domain"
import { Effect, Layer, Option, Queue } from "effect"
import { MemoryDatabase, type Tables, type Writer } from "./database.js"

/** The workspace's endpoints, oldest first. */
export const endpointsIn = (t: Tables, workspaceId: string): Array<WebhookEndpoint> =>
  [...t.webhooks.values()]
    .filter((endpoint) => endpoint.workspaceId === workspaceId)
    .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))

/** The workspace's ACTIVE endpoints, oldest first. */
export const activeEndpointsIn = (t: Tables, workspaceId: string): Array<WebhookEndpoint> =>
  endpointsIn(t, workspaceId).filter((endpoint) => endpoint.status === "active")

/** Stores pending attempts, due at `dueAt`; any other attempt (skipped) as finished. */
export const enqueueIn = (t: Tables, write: Writer, deliveries: ReadonlyArray<Delivery>, dueAt: number) => {
  for (const delivery of deliveries) {
    write.set(t.deliveries, delivery.id, delivery)
    if (delivery.status === "pending")
      write.set(t.deliveryQueue, delivery.id, { dueAt, leaseUntil: null, claimToken: null })
  }
}

/** An attempt as the log shows it: a pending one with its due time as `nextRetryAt`. */
const asLogged = (t: Tables, delivery: Delivery): Delivery => {
  const queued = delivery.status === "pending" ? t.deliveryQueue.get(delivery.id) : undefined
  return queued === undefined ? delivery : { ...delivery, nextRetryAt: queued.dueAt }
}

/** Whether `delivery` passes `filter` (created range inclusive). */
const matches = (t: Tables, delivery: Delivery, filter: DeliveryFilter): boolean =>
  (filter.status === null || delivery.status === filter.status) &&
  (filter.eventType === null || delivery.eventType === filter.eventType) &&
  (filter.submissionId === null || t.events.get(delivery.eventId)?.submissionId === filter.submissionId) &&
  Paging.inRange(delivery.createdAt, filter)

export const MemoryDeliveryRepository = Layer.effect(
  DeliveryRepository,
  Effect.map(MemoryDatabase, (db) =>
    DeliveryRepository.of({
      activeEndpoints: (workspaceId) => db.run((t) => activeEndpointsIn(t, workspaceId)),
      endpoint: (webhookId) => db.run((t) => Option.fromNullable(t.webhooks.get(webhookId))),
      enqueue: (deliveries, dueAt) => db.run((t, write) => enqueueIn(t, write, deliveries, dueAt)),
      advance: (ids, dueAt) =>
        db.run((t, write) => {
          for (const id of ids) {
            const queued = t.deliveryQueue.get(id)
            if (queued !== undefined && queued.dueAt > dueAt)
              write.set(t.deliveryQueue, id, { ...queued, dueAt })
          }
        }),
      claimDue: (now, limit, leaseMs, claimToken) =>
        db.run((t, write) => {
          const due = [...t.deliveryQueue]
            .filter(
              ([, queued]) => queued.dueAt <= now && (queued.leaseUntil === null || queued.leaseUntil <= now)
            )
            .sort(([a, x], [b, y]) => x.dueAt - y.dueAt || (a < b ? -1 : a > b ? 1 : 0))
            .slice(0, limit)
          return due.flatMap(([id, queued]) => {
            const delivery = t.deliveries.get(id)
            if (delivery === undefined) return []
            write.set(t.deliveryQueue, id, { ...queued, leaseUntil: now + leaseMs, claimToken })
            return [delivery]
          })
        }),
      complete: (finished, claimToken, next) =>
        db.run((t, write) => {
          if (t.deliveryQueue.get(finished.id)?.claimToken !== claimToken) return false
          write.remove(t.deliveryQueue, finished.id)
          write.set(t.deliveries, finished.id, finished)
          if (next !== null) {
            write.set(t.deliveries, next.delivery.id, next.delivery)
            write.set(t.deliveryQueue, next.delivery.id, {
              dueAt: next.dueAt,
              leaseUntil: null,
              claimToken: null
            })
          }
          return true
        }),
      release: (ids, claimToken) =>
        db.run((t, write) => {
          for (const id of ids) {
            const queued = t.deliveryQueue.get(id)
            if (queued?.claimToken === claimToken)
              write.set(t.deliveryQueue, id, { ...queued, leaseUntil: null, claimToken: null })
          }
        }),
      insertFinished: (delivery) => db.run((t, write) => write.set(t.deliveries, delivery.id, delivery)),
      nextDueAt: () =>
        db.run((t) => {
          let earliest: number | null = null
          for (const queued of t.deliveryQueue.values()) {
            const at = Math.max(queued.dueAt, queued.leaseUntil ?? 0)
            if (earliest === null || at < earliest) earliest = at
          }
          return Option.fromNullable(earliest)
        }),
      findInWebhook: (webhookId, id) =>
        db.run((t) =>
          Option.fromNullable(t.deliveries.get(id)).pipe(
            Option.filter((d) => d.webhookId === webhookId),
            Option.map((d) => asLogged(t, d))
          )
        ),
      attemptsOf: (webhookId, eventId) =>
        db.run((t) =>
          [...t.deliveries.values()]
            .filter((d) => d.webhookId === webhookId && d.eventId === eventId)
            .sort((a, b) => a.attempt - b.attempt || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
        ),
      list: (webhookId, page, filter = noDeliveryFilter) =>
        db.run((t) => {
          const found = Paging.pageOf(
            [...t.deliveries.values()].filter((d) => d.webhookId === webhookId && matches(t, d, filter)),
            page
          )
          return { ...found, items: found.items.map((d) => asLogged(t, d)) }
        }),
      // One lock serializes memory transactions: reading is locking.
      lockEndpoint: (webhookId) => db.run((t) => Option.fromNullable(t.webhooks.get(webhookId))),
      recoverableEvents: (endpoint, window, after, limit) =>
        db.run((t) => {
          const attempts = new Map<string, Array<Delivery>>()
          for (const d of t.deliveries.values())
            if (d.webhookId === endpoint.id) attempts.set(d.eventId, [...(attempts.get(d.eventId) ?? []), d])
          return [...t.events.values()]
            .filter(
              (event) =>
                event.createdAt >= window.since &&
                event.createdAt <= window.until &&
                EventPayloads.endpointTakes(endpoint, event) &&
                (after === null ||
                  event.createdAt > after.createdAt ||
                  (event.createdAt === after.createdAt && event.id > after.id))
            )
            .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
            .flatMap((event) => {
              const own = attempts.get(event.id) ?? []
              if (own.some((d) => d.status === "succeeded" || d.status === "pending")) return []
              return [{ event, attemptsMade: Math.max(0, ...own.map((d) => d.attempt)) }]
            })
            .slice(0, limit)
        }),
      recordOutcome: (webhookId, outcome, disableAfterMs) =>
        db.run((t, write) => {
          const endpoint = t.webhooks.get(webhookId)
          if (endpoint === undefined) return Option.none()
          const updated = EndpointHealth.afterAttempt(endpoint, outcome, disableAfterMs)
          write.set(t.webhooks, webhookId, updated)
          return Option.some(updated)
        })
    })
  )
)

/** One signal slot: notifications coalesce until the waiting side takes them. */
export const signalSlot = Effect.map(Queue.sliding<void>(1), (queue) => ({
  notify: Effect.asVoid(Queue.offer(queue, undefined)),
  next: Queue.take(queue)
}))

export const MemoryDeliveryWakeups = Layer.effect(DeliveryWakeups, signalSlot)

export const MemoryDeliveryPortsLive = Layer.merge(MemoryDeliveryRepository, MemoryDeliveryWakeups)
