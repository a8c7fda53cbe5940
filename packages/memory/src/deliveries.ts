/** Memory adapters of the delivery queue and log, and of the dispatcher wake-up signal. */
import {
  type Delivery,
  type DeliveryFilter,
  DeliveryIsolation,
  DeliveryRepository,
  DeliveryWakeups,
  type DispatchSources,
  EndpointHealth,
  EventPayloads,
  type FinishedAttempt,
  noDeliveryFilter,
  Paging,
  type WebhookEndpoint
} from "@intake/domain"
import { Effect, Layer, Option, Queue } from "effect"
import { MemoryDatabase, type QueuedDelivery, type Tables, type Writer } from "./database.js"

const byDue = ([a, x]: readonly [string, QueuedDelivery], [b, y]: readonly [string, QueuedDelivery]) =>
  x.dueAt - y.dueAt || (a < b ? -1 : a > b ? 1 : 0)

/**
 * Every endpoint with pending attempts, as the isolation policies see it at `now`, and
 * each one's waiting attempts due by `now`, earliest first.
 */
const backlogsAt = (t: Tables, now: number) => {
  const queues = new Map<string, Array<readonly [string, QueuedDelivery]>>()
  for (const entry of t.deliveryQueue) {
    const webhookId = t.deliveries.get(entry[0])?.webhookId
    if (webhookId === undefined) continue
    const queue = queues.get(webhookId)
    if (queue === undefined) queues.set(webhookId, [entry])
    else queue.push(entry)
  }
  const waiting = new Map<string, Array<Delivery>>()
  const backlogs = [...queues].map(([webhookId, queue]): DeliveryIsolation.EndpointBacklog => {
    const endpoint = t.webhooks.get(webhookId)
    const held = queue.filter(([, q]) => q.leaseUntil !== null && q.leaseUntil > now)
    const free = queue.filter(([, q]) => q.leaseUntil === null || q.leaseUntil <= now).sort(byDue)
    waiting.set(
      webhookId,
      free.filter(([, q]) => q.dueAt <= now).flatMap(([id]) => t.deliveries.get(id) ?? [])
    )
    return {
      webhookId,
      workspaceId: endpoint?.workspaceId ?? null,
      consecutiveFails: endpoint?.consecutiveFails ?? 0,
      circuitOpenUntil: endpoint?.circuitOpenUntil ?? null,
      rateLimit: endpoint?.rateLimit ?? null,
      nextSendAt: t.nextSendAt.get(webhookId) ?? null,
      inFlight: held.length,
      headDueAt: free[0]?.[1].dueAt ?? null,
      firstLeaseEnd: held.length === 0 ? null : Math.min(...held.map(([, q]) => q.leaseUntil!))
    }
  })
  return { backlogs, waiting: (webhookId: string) => waiting.get(webhookId) ?? [] }
}

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

/** Replaces a claimed attempt by its finished record and queues the attempt that follows it, if any. */
const writeFinished = (t: Tables, write: Writer, { finished, next }: FinishedAttempt) => {
  write.remove(t.deliveryQueue, finished.id)
  write.set(t.deliveries, finished.id, finished)
  if (next !== null) {
    write.set(t.deliveries, next.delivery.id, next.delivery)
    write.set(t.deliveryQueue, next.delivery.id, { dueAt: next.dueAt, leaseUntil: null, claimToken: null })
  }
}

/**
 * An attempt as the log shows it: a pending one with its due time as `nextRetryAt`, each with
 * its event's request id (the event is looked up, as PostgreSQL's log read joins it).
 */
const asLogged = (t: Tables, delivery: Delivery): Delivery => {
  const queued = delivery.status === "pending" ? t.deliveryQueue.get(delivery.id) : undefined
  const requestId = t.events.get(delivery.eventId)?.requestId
  return {
    ...delivery,
    ...(queued === undefined ? {} : { nextRetryAt: queued.dueAt }),
    ...(requestId === undefined ? {} : { requestId })
  }
}

/** Whether `delivery` passes `filter` (created range inclusive). */
const matches = (t: Tables, delivery: Delivery, filter: DeliveryFilter): boolean =>
  (filter.status === null || delivery.status === filter.status) &&
  (filter.eventType === null || delivery.eventType === filter.eventType) &&
  (filter.submissionId === null || t.events.get(delivery.eventId)?.submissionId === filter.submissionId) &&
  Paging.inRange(delivery.createdAt, filter)

export const MemoryDeliveryRepository = Layer.effect(
  DeliveryRepository,
  Effect.map(MemoryDatabase, (db) => {
    const claim = (
      now: number,
      limit: number,
      leaseMs: number,
      claimToken: string,
      isolation = DeliveryIsolation.DEFAULT_ISOLATION
    ) =>
      db.run((t, write) => {
        const { backlogs, waiting } = backlogsAt(t, now)
        const plan = DeliveryIsolation.planClaim(backlogs, waiting, now, limit, isolation)
        for (const { webhookId, at } of plan.nextSendAt) write.set(t.nextSendAt, webhookId, at)
        for (const delivery of plan.attempts)
          write.set(t.deliveryQueue, delivery.id, {
            ...t.deliveryQueue.get(delivery.id)!,
            leaseUntil: now + leaseMs,
            claimToken
          })
        return { deliveries: plan.attempts, more: plan.more, claimedAt: now }
      })
    return DeliveryRepository.of({
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
      claimDue: (now, limit, leaseMs, claimToken, isolation) =>
        Effect.map(claim(now, limit, leaseMs, claimToken, isolation), (claimed) => claimed.deliveries),
      claim,
      complete: (finished, claimToken, next) =>
        db.run((t, write) => {
          if (t.deliveryQueue.get(finished.id)?.claimToken !== claimToken) return false
          writeFinished(t, write, { finished, next })
          return true
        }),
      completeMany: (attempts, claimToken, health) =>
        db.run((t, write) => {
          const lost = attempts
            .filter(({ finished }) => t.deliveryQueue.get(finished.id)?.claimToken !== claimToken)
            .map(({ finished }) => finished.id)
          if (lost.length > 0) return lost
          for (const attempt of attempts) writeFinished(t, write, attempt)
          for (const e of health) {
            const current = t.webhooks.get(e.id)
            if (current !== undefined)
              write.set(t.webhooks, e.id, {
                ...current,
                status: e.status,
                lastDeliveryAt: e.lastDeliveryAt,
                lastDeliveryOk: e.lastDeliveryOk,
                consecutiveFails: e.consecutiveFails,
                failingSince: e.failingSince,
                circuitOpenUntil: e.circuitOpenUntil,
                updatedAt: e.updatedAt
              })
          }
          return []
        }),
      dispatchSources: (deliveries) =>
        db.run((t) => {
          const sources = new Map<string, DispatchSources>()
          for (const delivery of deliveries) {
            const endpoint = t.webhooks.get(delivery.webhookId) ?? null
            const event = t.events.get(delivery.eventId) ?? null
            const submission =
              event?.type === "submission.completed" ? t.submissions.get(event.submissionId) : undefined
            const contact =
              event?.type === "contact.created" && event.contactId !== null
                ? t.contacts.get(event.contactId)
                : undefined
            sources.set(delivery.id, {
              endpoint,
              workspace: endpoint === null ? null : (t.workspaces.get(endpoint.workspaceId) ?? null),
              event,
              submission:
                submission === undefined ||
                submission.workspaceId !== event?.workspaceId ||
                submission.intakeBotId !== event.intakeBotId
                  ? null
                  : { ...submission, messages: t.messages.get(submission.id) ?? [] },
              bot: event?.type === "submission.completed" ? (t.bots.get(event.intakeBotId) ?? null) : null,
              contact: contact === undefined || contact.workspaceId !== event?.workspaceId ? null : contact
            })
          }
          return sources
        }),
      // One lock serializes memory transactions: reading is locking.
      lockEndpoints: (ids) => db.run((t) => [...ids].sort().flatMap((id) => t.webhooks.get(id) ?? [])),
      reserveSend: (webhookId, at, spacingMs) =>
        db.run((t, write) => {
          const last = t.lastSentAt.get(webhookId)
          if (last !== undefined && at - last < spacingMs) return last + spacingMs
          write.set(t.lastSentAt, webhookId, at)
          return null
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
      nextDueAt: (now, isolation = DeliveryIsolation.DEFAULT_ISOLATION) =>
        db.run((t) =>
          Option.fromNullable(
            DeliveryIsolation.earliestClaimableAt(backlogsAt(t, now).backlogs, now, isolation)
          )
        ),
      queueHealth: (now) =>
        db.run((t) => {
          let oldestDueAt: number | null = null
          for (const queued of t.deliveryQueue.values())
            if (oldestDueAt === null || queued.dueAt < oldestDueAt) oldestDueAt = queued.dueAt
          let circuitsOpen = 0
          for (const endpoint of t.webhooks.values())
            if (endpoint.circuitOpenUntil !== null && endpoint.circuitOpenUntil > now) circuitsOpen++
          return { pending: t.deliveryQueue.size, oldestDueAt, circuitsOpen }
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
      recordOutcome: (webhookId, outcome, disableAfterMs, isolation) =>
        db.run((t, write) => {
          const endpoint = t.webhooks.get(webhookId)
          if (endpoint === undefined) return Option.none()
          const updated = EndpointHealth.afterAttempt(endpoint, outcome, disableAfterMs, isolation)
          write.set(t.webhooks, webhookId, updated)
          return Option.some({ endpoint: updated, previousStatus: endpoint.status })
        }),
      // In batches, as on PostgreSQL (one unit of work each), so that other work interleaves.
      purgeOlderThan: (before, batchSize) =>
        Effect.gen(function* () {
          const inBatches = (
            pick: (t: Tables) => Iterable<string>,
            table: (t: Tables) => Map<string, unknown>
          ) =>
            Effect.gen(function* () {
              let total = 0
              for (;;) {
                const purged = yield* db.run((t, write) => {
                  let deleted = 0
                  for (const id of pick(t)) {
                    if (deleted >= batchSize) break
                    write.remove(table(t), id)
                    deleted++
                  }
                  return deleted
                })
                total += purged
                if (purged < batchSize) return total
              }
            })
          const deliveries = yield* inBatches(
            (t) =>
              [...t.deliveries.values()]
                .filter((delivery) => delivery.createdAt < before && !t.deliveryQueue.has(delivery.id))
                .map((delivery) => delivery.id),
            (t) => t.deliveries
          )
          const events = yield* inBatches(
            (t) => {
              const pending = new Set([...t.deliveryQueue.keys()].map((id) => t.deliveries.get(id)?.eventId))
              return [...t.events.values()]
                .filter((event) => event.createdAt < before && !pending.has(event.id))
                .map((event) => event.id)
            },
            (t) => t.events
          )
          return { deliveries, events }
        })
    })
  })
)

/** One signal slot: notifications coalesce until the waiting side takes them. */
export const signalSlot = Effect.map(Queue.sliding<void>(1), (queue) => ({
  notify: Effect.asVoid(Queue.offer(queue, undefined)),
  next: Queue.take(queue)
}))

export const MemoryDeliveryWakeups = Layer.effect(DeliveryWakeups, signalSlot)

export const MemoryDeliveryPortsLive = Layer.merge(MemoryDeliveryRepository, MemoryDeliveryWakeups)
