/**
 * The contract of the delivery log's reads and of recovery (docs/webhooks.md) that every
 * adapter keeps: skipped attempts stored with their events but never queued, the log's
 * filters composed with its keyset paging, and the events a recovery would queue. Runs on
 * a store shared with other contracts: every row is under ids of its own.
 */

import { expect, layer } from "@effect/vitest"
import {
  type Delivery,
  type DeliveryFilter,
  DeliveryRepository,
  type DomainEvent,
  EventOutbox,
  makeIntakeBotId,
  makeSubmissionId,
  makeWebhookId,
  makeWorkspaceId,
  noDeliveryFilter,
  type WebhookEndpoint,
  WebhookRepository
} from "@intake/domain"
import { Effect, type Layer, Option } from "effect"
import { aDelivery } from "../fixtures-deliveries.js"
import { aWebhookEndpoint } from "../fixtures-webhooks.js"
import { uniqueId } from "../records.js"
import { checkedStores } from "./answer-shapes.js"

type Ports = EventOutbox | DeliveryRepository | WebhookRepository

const anEvent = (workspaceId: string, overrides: Partial<DomainEvent> = {}): DomainEvent => ({
  id: uniqueId("evt"),
  workspaceId: makeWorkspaceId(workspaceId),
  type: "submission.completed",
  intakeBotId: makeIntakeBotId(uniqueId("bot")),
  submissionId: makeSubmissionId(uniqueId("sub")),
  contactId: null,
  createdAt: 1_000,
  ...overrides
})

const finished = (overrides: Partial<Delivery>) =>
  aDelivery({
    status: "succeeded",
    responseStatus: 204,
    durationMs: 5,
    sentAt: overrides.createdAt ?? 0,
    ...overrides
  })

export const deliveryLogContract = (name: string, theLayer: Layer.Layer<Ports>): void =>
  layer(checkedStores(theLayer))(`Delivery log and recovery contract (${name})`, (it) => {
    const givenEndpoint = (overrides: Partial<WebhookEndpoint> = {}) =>
      Effect.gen(function* () {
        const endpoint = aWebhookEndpoint({ workspaceId: makeWorkspaceId(uniqueId("ws")), ...overrides })
        yield* (yield* WebhookRepository).insertWithinCap(endpoint, 100)
        return endpoint
      })

    const listAll = (webhookId: string, filter: Partial<DeliveryFilter>) =>
      Effect.flatMap(DeliveryRepository, (repo) =>
        repo.list(makeWebhookId(webhookId), { limit: 100, after: null }, { ...noDeliveryFilter, ...filter })
      )

    it.effect("attempts appended with their events: pending ones queued, skipped ones only stored", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const paused = yield* givenEndpoint({ workspaceId: endpoint.workspaceId, status: "paused" })
        const event = anEvent(endpoint.workspaceId, { createdAt: 5_000 })
        const pending = aDelivery({ webhookId: endpoint.id, eventId: event.id, createdAt: 5_000 })
        const skipped = aDelivery({
          webhookId: paused.id,
          eventId: event.id,
          createdAt: 5_000,
          status: "skipped",
          error: "not sent: the webhook is paused"
        })
        yield* (yield* EventOutbox).append([event], { deliveries: [pending, skipped], dueAt: 6_000 })
        // The log shows when a pending attempt is due; a skipped one is not due at all.
        expect(yield* repo.findInWebhook(endpoint.id, pending.id)).toEqual(
          Option.some({ ...pending, nextRetryAt: 6_000 })
        )
        expect(yield* repo.findInWebhook(paused.id, skipped.id)).toEqual(Option.some(skipped))
        const claimed = yield* repo.claimDue(Date.UTC(2100, 0, 1), 10_000, 60_000, uniqueId("claim"))
        expect(claimed.map((d) => d.id)).toContain(pending.id)
        expect(claimed.map((d) => d.id)).not.toContain(skipped.id)
      })
    )

    it.effect("filters by status, event type, submission and created range, each with the keyset pages", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        const other = yield* givenEndpoint({ workspaceId: endpoint.workspaceId })
        const submissionId = uniqueId("sub")
        const completed = anEvent(endpoint.workspaceId, { submissionId: makeSubmissionId(submissionId) })
        const contact = anEvent(endpoint.workspaceId, {
          submissionId: makeSubmissionId(submissionId),
          type: "contact.created"
        })
        const unrelated = anEvent(endpoint.workspaceId)
        yield* (yield* EventOutbox).append([completed, contact, unrelated])
        const rows = [
          finished({ webhookId: endpoint.id, eventId: completed.id, createdAt: 1_000, status: "failed" }),
          finished({ webhookId: endpoint.id, eventId: completed.id, createdAt: 2_000, attempt: 2 }),
          finished({
            webhookId: endpoint.id,
            eventId: contact.id,
            eventType: "contact.created",
            createdAt: 2_000
          }),
          finished({ webhookId: endpoint.id, eventId: unrelated.id, createdAt: 3_000, status: "failed" }),
          finished({
            webhookId: endpoint.id,
            eventId: uniqueId("evt"),
            eventType: "webhook.test",
            createdAt: 4_000
          }),
          finished({ webhookId: other.id, eventId: completed.id, createdAt: 2_000 })
        ]
        for (const row of rows) yield* repo.insertFinished(row)
        const mine = rows.filter((d) => d.webhookId === endpoint.id)
        const newestFirst = (items: ReadonlyArray<Delivery>) =>
          [...items].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)).map((d) => d.id)
        const idsOf = (page: { readonly items: ReadonlyArray<Delivery> }) => page.items.map((d) => d.id)

        expect(idsOf(yield* listAll(endpoint.id, {}))).toEqual(newestFirst(mine))
        expect(idsOf(yield* listAll(endpoint.id, { status: "failed" }))).toEqual(
          newestFirst(mine.filter((d) => d.status === "failed"))
        )
        expect(idsOf(yield* listAll(endpoint.id, { eventType: "webhook.test" }))).toEqual(
          newestFirst(mine.filter((d) => d.eventType === "webhook.test"))
        )
        expect(idsOf(yield* listAll(endpoint.id, { submissionId: makeSubmissionId(submissionId) }))).toEqual(
          newestFirst(mine.filter((d) => d.eventId === completed.id || d.eventId === contact.id))
        )
        expect(idsOf(yield* listAll(endpoint.id, { createdAfter: 2_000, createdBefore: 3_000 }))).toEqual(
          newestFirst(mine.filter((d) => d.createdAt >= 2_000 && d.createdAt <= 3_000))
        )
        expect(
          idsOf(
            yield* listAll(endpoint.id, { submissionId: makeSubmissionId(submissionId), status: "failed" })
          )
        ).toEqual([mine[0]!.id])
        expect(
          (yield* listAll(endpoint.id, { submissionId: makeSubmissionId(uniqueId("sub")) })).items
        ).toEqual([])

        // Pages of a filtered list are the filtered list's pages.
        const filter = { ...noDeliveryFilter, submissionId: makeSubmissionId(submissionId) }
        const first = yield* repo.list(endpoint.id, { limit: 2, after: null }, filter)
        expect(first.hasMore).toBe(true)
        const last = first.items[1]!
        const second = yield* repo.list(
          endpoint.id,
          { limit: 2, after: { createdAt: last.createdAt, id: last.id } },
          filter
        )
        expect(second.hasMore).toBe(false)
        expect([...idsOf(first), ...idsOf(second)]).toEqual(
          idsOf(yield* listAll(endpoint.id, { submissionId: makeSubmissionId(submissionId) }))
        )
      })
    )

    it.effect(
      "recoverable events: the window, the endpoint's events and bots, not received nor pending",
      () =>
        Effect.gen(function* () {
          const repo = yield* DeliveryRepository
          const botId = uniqueId("bot")
          const endpoint = yield* givenEndpoint({
            events: ["submission.completed", "contact.created"],
            intakeBotIds: [makeIntakeBotId(botId)]
          })
          const ws = endpoint.workspaceId
          const at = (createdAt: number, overrides: Partial<DomainEvent> = {}) =>
            anEvent(ws, { intakeBotId: makeIntakeBotId(botId), createdAt, ...overrides })
          const never = at(1_000)
          const failedTwice = at(2_000, { type: "contact.created" })
          const skipped = at(2_000)
          const received = at(3_000)
          const pending = at(3_000)
          const otherBot = at(3_000, { intakeBotId: makeIntakeBotId(uniqueId("bot")) })
          const otherWorkspace = anEvent(uniqueId("ws"), {
            intakeBotId: makeIntakeBotId(botId),
            createdAt: 3_000
          })
          const tooLate = at(9_000)
          const events = [never, failedTwice, skipped, received, pending, otherBot, otherWorkspace, tooLate]
          yield* (yield* EventOutbox).append(events)
          const attempt = (event: DomainEvent, overrides: Partial<Delivery>) =>
            repo.insertFinished(
              finished({ webhookId: endpoint.id, eventId: event.id, eventType: event.type, ...overrides })
            )
          yield* attempt(failedTwice, { status: "failed", attempt: 1 })
          yield* attempt(failedTwice, { status: "failed", attempt: 2 })
          yield* attempt(skipped, { status: "skipped", sentAt: null })
          yield* attempt(received, { status: "failed", attempt: 1 })
          yield* attempt(received, { status: "succeeded", attempt: 2 })
          yield* repo.enqueue([aDelivery({ webhookId: endpoint.id, eventId: pending.id })], 3_000)
          // Another endpoint's success counts for nothing here.
          const other = yield* givenEndpoint({ workspaceId: ws })
          yield* repo.insertFinished(finished({ webhookId: other.id, eventId: never.id }))

          const window = { since: 1_000, until: 5_000 }
          const found = yield* repo.recoverableEvents(endpoint, window, null, 100)
          const expected = [never, failedTwice, skipped]
            .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
            .map((event) => ({
              event,
              attemptsMade: event === failedTwice ? 2 : event === skipped ? 1 : 0
            }))
          expect(found).toEqual(expected)
          // In pages, oldest first, strictly after the position given.
          const head = yield* repo.recoverableEvents(endpoint, window, null, 2)
          expect(head).toEqual(expected.slice(0, 2))
          const tail = head[1]!.event
          expect(
            yield* repo.recoverableEvents(endpoint, window, { createdAt: tail.createdAt, id: tail.id }, 2)
          ).toEqual(expected.slice(2))
          // Both ends inclusive.
          expect(
            (yield* repo.recoverableEvents(endpoint, { since: 2_000, until: 2_000 }, null, 100)).map(
              (r) => r.event.id
            )
          ).toEqual(expected.slice(1).map((r) => r.event.id))
          // An endpoint for every bot also takes the other bot's event.
          const everyBot = { ...endpoint, intakeBotIds: [] }
          expect(
            (yield* repo.recoverableEvents(everyBot, window, null, 100)).map((r) => r.event.id)
          ).toContain(otherBot.id)
        })
    )

    it.effect("locking an endpoint answers it, none when there is none", () =>
      Effect.gen(function* () {
        const repo = yield* DeliveryRepository
        const endpoint = yield* givenEndpoint()
        expect(yield* repo.lockEndpoint(endpoint.id)).toEqual(Option.some(endpoint))
        expect(yield* repo.lockEndpoint(makeWebhookId(uniqueId("wh")))).toEqual(Option.none())
      })
    )
  })
