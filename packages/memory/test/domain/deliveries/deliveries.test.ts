/**
 * The delivery engine's rules, over the memory adapters and a receiver double, with
 * TestClock driving the retry schedule and the disable window.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Conflict,
  Deliveries,
  type Delivery,
  IntakeBots,
  makeWebhookId,
  makeWorkspaceId,
  ResourceNotFound,
  Submissions,
  ValidationFailed,
  Webhooks,
  WireShapes,
  WorkspaceRepository
} from "@intake/domain/internal"
import { answer, newIntakeBot, requiredOnlyData, unreachable } from "@intake/testing"
import { Effect, TestClock } from "effect"
import { Webhook } from "standardwebhooks"
import {
  attemptsOf,
  dispatchDue,
  endpointOf,
  givenWebhook,
  givenWorkspaceWithBot,
  HOUR,
  MINUTE,
  NOW,
  NOW_ISO,
  RECEIVER,
  SECOND,
  scene,
  submit
} from "./scene.js"

describe("queueing", () => {
  const { layer } = scene()

  it.effect("a completed submission queues one attempt per active endpoint that takes the event", () =>
    Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const otherBot = yield* (yield* IntakeBots).create(workspaceId, newIntakeBot({ name: "Other" }))
      const everyBot = yield* givenWebhook(workspaceId, ["submission.completed"])
      const contactsOnly = yield* givenWebhook(workspaceId, ["contact.created"])
      const otherBotOnly = yield* givenWebhook(workspaceId, ["submission.completed"], [otherBot.id])
      const thisBotBoth = yield* givenWebhook(
        workspaceId,
        ["submission.completed", "contact.created"],
        [bot.id]
      )
      const paused = yield* givenWebhook(workspaceId, ["submission.completed"])
      yield* (yield* Webhooks).update(workspaceId, paused.id, { status: "paused" })
      const elsewhere = yield* givenWorkspaceWithBot
      const foreign = yield* givenWebhook(elsewhere.workspaceId, ["submission.completed"])

      yield* submit(workspaceId, bot.id)
      const queued = (webhookId: string, ws = workspaceId) =>
        Effect.map(attemptsOf(ws, webhookId), (items) =>
          items
            .map((d) => ({ type: d.eventType, status: d.status, attempt: d.attempt, trigger: d.trigger }))
            .sort((a, b) => a.type.localeCompare(b.type))
        )
      const pending = (type: string) => ({ type, status: "pending", attempt: 1, trigger: "event" })
      expect(yield* queued(everyBot.id)).toEqual([pending("submission.completed")])
      expect(yield* queued(contactsOnly.id)).toEqual([pending("contact.created")])
      expect(yield* queued(otherBotOnly.id)).toEqual([])
      expect(yield* queued(thisBotBoth.id)).toEqual([
        pending("contact.created"),
        pending("submission.completed")
      ])
      // A paused endpoint's attempt is recorded as skipped (docs/webhooks.md), never queued.
      expect(yield* queued(paused.id)).toEqual([
        { type: "submission.completed", status: "skipped", attempt: 1, trigger: "event" }
      ])
      expect(yield* queued(foreign.id, elsewhere.workspaceId)).toEqual([])

      // The same contact again: no contact.created; an IN_PROGRESS submission: nothing.
      yield* submit(workspaceId, bot.id)
      yield* (yield* Submissions).create(workspaceId, bot.id, { data: {}, status: "IN_PROGRESS" })
      expect(yield* queued(contactsOnly.id)).toEqual([pending("contact.created")])
      expect(yield* queued(everyBot.id)).toHaveLength(2)
    }).pipe(Effect.provide(layer))
  )
})

describe("dispatching", () => {
  it.effect(
    "every attempt is signed (Standard Webhooks) and carries the payload rebuilt from its source",
    () => {
      const { receiver, layer } = scene()
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const webhook = yield* givenWebhook(workspaceId, ["submission.completed", "contact.created"])
        const created = yield* submit(workspaceId, bot.id)
        const finished = yield* dispatchDue
        expect(finished.map((d) => d.status)).toEqual(["succeeded", "succeeded"])

        const verifier = new Webhook(webhook.secret)
        for (const request of receiver.sent) {
          expect(request.url).toBe(RECEIVER)
          expect(request.headers["content-type"]).toBe("application/json")
          expect(() => verifier.verify(request.body, request.headers as Record<string, string>)).not.toThrow()
          expect(request.headers["webhook-id"]).toBe(JSON.parse(request.body).id)
        }
        const byType = Object.fromEntries(receiver.payloads().map((p) => [p.type, p]))
        const stored = yield* (yield* Submissions).get(workspaceId, bot.id, created.id)
        expect(byType["submission.completed"]).toEqual({
          id: expect.stringMatching(/^evt_/),
          type: "submission.completed",
          timestamp: NOW_ISO,
          data: { submission: WireShapes.submissionShape(stored), intake_bot: { id: bot.id, name: bot.name } }
        })
        expect(byType["contact.created"]).toEqual({
          id: expect.stringMatching(/^evt_/),
          type: "contact.created",
          timestamp: NOW_ISO,
          data: {
            contact: {
              id: expect.stringMatching(/^con_/),
              email: "ada@example.com",
              name: "Ada Lovelace",
              created_at: NOW_ISO
            },
            submission_id: created.id
          }
        })
        // A secret other than the endpoint's does not verify.
        const [first] = receiver.sent
        expect(() =>
          new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw0W4wjSrUzPQ=").verify(
            first!.body,
            first!.headers as Record<string, string>
          )
        ).toThrow()

        const attempt = finished[0]!
        expect(attempt).toMatchObject({
          attempt: 1,
          trigger: "event",
          responseStatus: 200,
          error: null,
          nextRetryAt: null
        })
        expect(yield* endpointOf(workspaceId, webhook.id)).toMatchObject({
          lastDeliveryAt: NOW,
          lastDeliveryOk: true,
          consecutiveFails: 0
        })
        // Delivered once: nothing is due any more.
        yield* TestClock.adjust(HOUR)
        expect(yield* dispatchDue).toEqual([])
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect(
    "a failing receiver is retried on the schedule, with jitter and the same webhook-id, then given up",
    () => {
      const { receiver, layer } = scene({ settings: { retrySchedule: [5 * SECOND, 5 * MINUTE] } })
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
        receiver.answerWith(answer(500, "x".repeat(5_000)), unreachable(), answer(502, "bad gateway"))
        yield* submit(workspaceId, bot.id)
        const start = NOW

        const [first] = yield* dispatchDue
        expect(first).toMatchObject({ status: "failed", responseStatus: 500, attempt: 1, trigger: "event" })
        expect(first!.responseBody).toHaveLength(1024)
        expect(first!.nextRetryAt).toBeGreaterThanOrEqual(start + 5 * SECOND)
        expect(first!.nextRetryAt).toBeLessThanOrEqual(start + 6 * SECOND)

        yield* TestClock.setTime(first!.nextRetryAt! - 1)
        expect(yield* dispatchDue).toEqual([])
        yield* TestClock.setTime(first!.nextRetryAt!)
        const [second] = yield* dispatchDue
        expect(second).toMatchObject({
          status: "failed",
          responseStatus: null,
          error: "could not reach the receiver (ECONNREFUSED)",
          attempt: 2,
          trigger: "retry"
        })
        const secondAt = first!.nextRetryAt!
        expect(second!.nextRetryAt).toBeGreaterThanOrEqual(secondAt + 5 * MINUTE)
        expect(second!.nextRetryAt).toBeLessThanOrEqual(secondAt + 6 * MINUTE)

        yield* TestClock.setTime(second!.nextRetryAt!)
        const [third] = yield* dispatchDue
        expect(third).toMatchObject({ status: "failed", responseStatus: 502, attempt: 3, nextRetryAt: null })
        yield* TestClock.adjust(24 * HOUR)
        expect(yield* dispatchDue).toEqual([])

        expect(new Set(receiver.sent.map((r) => r.headers["webhook-id"])).size).toBe(1)
        expect(new Set(receiver.sent.map((r) => r.headers["webhook-timestamp"])).size).toBe(3)
        const logged = yield* attemptsOf(workspaceId, webhook.id)
        expect(logged.map((d) => d.attempt)).toEqual([3, 2, 1])
        expect(yield* endpointOf(workspaceId, webhook.id)).toMatchObject({
          lastDeliveryOk: false,
          consecutiveFails: 3,
          status: "active"
        })
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("a Retry-After on a 503 pushes the retry later, within twice the scheduled delay", () => {
    const { receiver, layer } = scene({ settings: { retrySchedule: [5 * SECOND, 5 * SECOND] } })
    return Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      yield* givenWebhook(workspaceId, ["submission.completed"])
      receiver.answerWith(answer(503, "", "8"), answer(429, "", "3600"))
      yield* submit(workspaceId, bot.id)
      const start = yield* TestClock.currentTimeMillis
      const [first] = yield* dispatchDue
      expect(first!.nextRetryAt).toBe(start + 8 * SECOND)
      yield* TestClock.setTime(first!.nextRetryAt!)
      const [second] = yield* dispatchDue
      expect(second!.nextRetryAt).toBe(first!.nextRetryAt! + 10 * SECOND)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a success ends the failure streak", () => {
    const { receiver, layer } = scene({ settings: { retrySchedule: [5 * SECOND] } })
    return Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
      receiver.answerWith(answer(500), answer(204))
      yield* submit(workspaceId, bot.id)
      yield* dispatchDue
      expect((yield* endpointOf(workspaceId, webhook.id)).consecutiveFails).toBe(1)
      yield* TestClock.adjust(10 * SECOND)
      const [retry] = yield* dispatchDue
      expect(retry).toMatchObject({ status: "succeeded", responseStatus: 204, attempt: 2 })
      expect(yield* endpointOf(workspaceId, webhook.id)).toMatchObject({
        lastDeliveryOk: true,
        consecutiveFails: 0,
        failingSince: null
      })
    }).pipe(Effect.provide(layer))
  })
})

describe("disabling and re-enabling", () => {
  it.effect(
    "an endpoint failing for WEBHOOK_DISABLE_AFTER is disabled, gets nothing, and PATCH active re-enables it",
    () => {
      const { receiver, layer } = scene({
        settings: { retrySchedule: Array(10).fill(20 * MINUTE), disableAfterMs: HOUR }
      })
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
        receiver.answerWith(answer(500))
        yield* submit(workspaceId, bot.id)
        const start = yield* TestClock.currentTimeMillis
        let last: Delivery | undefined
        for (let round = 0; round < 10; round++) {
          const made = yield* dispatchDue
          if (made.length > 0) last = made[0]
          if ((yield* endpointOf(workspaceId, webhook.id)).status === "disabled") break
          yield* TestClock.adjust(25 * MINUTE)
        }
        const disabled = yield* endpointOf(workspaceId, webhook.id)
        expect(disabled.status).toBe("disabled")
        expect(disabled.failingSince).toBe(start)
        expect(disabled.lastDeliveryAt! - start).toBeGreaterThanOrEqual(HOUR)
        expect(last!.nextRetryAt).toBeNull()
        const sentBefore = receiver.sent.length
        expect(sentBefore).toBeGreaterThanOrEqual(3)

        // Disabled: new events are not queued, and nothing is sent later.
        yield* submit(workspaceId, bot.id, "grace@example.com")
        yield* TestClock.adjust(24 * HOUR)
        expect(yield* dispatchDue).toEqual([])
        expect(receiver.sent).toHaveLength(sentBefore)

        const enabled = yield* (yield* Webhooks).update(workspaceId, webhook.id, { status: "active" })
        expect(enabled).toMatchObject({ status: "active", consecutiveFails: 0, failingSince: null })
        receiver.answerWith(answer(200))
        yield* submit(workspaceId, bot.id, "alan@example.com")
        const [delivered] = yield* dispatchDue
        expect(delivered!.status).toBe("succeeded")
        expect(receiver.sent).toHaveLength(sentBefore + 1)
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("a 410 Gone disables the endpoint at once, without retries", () => {
    const { receiver, layer } = scene()
    return Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
      receiver.answerWith(answer(410, "gone"))
      yield* submit(workspaceId, bot.id)
      const [attempt] = yield* dispatchDue
      expect(attempt).toMatchObject({
        status: "failed",
        responseStatus: 410,
        responseBody: "gone",
        nextRetryAt: null
      })
      expect(yield* endpointOf(workspaceId, webhook.id)).toMatchObject({
        status: "disabled",
        consecutiveFails: 1
      })
      yield* TestClock.adjust(24 * HOUR)
      expect(yield* dispatchDue).toEqual([])
    }).pipe(Effect.provide(layer))
  })
})

describe("paused endpoints, test and redeliver", () => {
  it.effect(
    "a paused endpoint gets no retry and no later copy of events; test and redeliver still go",
    () => {
      const { receiver, layer } = scene({ settings: { retrySchedule: [5 * SECOND] } })
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
        const webhooks = yield* Webhooks
        const deliveries = yield* Deliveries
        receiver.answerWith(answer(500))
        yield* submit(workspaceId, bot.id)
        const [failed] = yield* dispatchDue
        yield* webhooks.update(workspaceId, webhook.id, { status: "paused" })
        yield* submit(workspaceId, bot.id, "grace@example.com")
        yield* TestClock.adjust(MINUTE)
        const [dropped] = yield* dispatchDue
        expect(dropped).toMatchObject({
          status: "failed",
          attempt: 2,
          error: "not sent: the webhook is paused"
        })
        expect(receiver.sent).toHaveLength(1)

        yield* webhooks.update(workspaceId, webhook.id, { status: "active" })
        yield* TestClock.adjust(MINUTE)
        expect(yield* dispatchDue).toEqual([])
        expect(receiver.sent).toHaveLength(1)

        yield* webhooks.update(workspaceId, webhook.id, { status: "paused" })
        receiver.answerWith(answer(200))
        const tested = yield* deliveries.test(workspaceId, webhook.id)
        expect(tested).toMatchObject({
          eventType: "webhook.test",
          trigger: "test",
          attempt: 1,
          status: "succeeded",
          responseStatus: 200
        })
        const testPayload = receiver.payloads()[1]!
        expect(testPayload).toEqual({
          id: tested.eventId,
          type: "webhook.test",
          timestamp: new Date(tested.createdAt).toISOString(),
          data: { webhook_id: webhook.id }
        })
        expect(() =>
          new Webhook(webhook.secret).verify(
            receiver.sent[1]!.body,
            receiver.sent[1]!.headers as Record<string, string>
          )
        ).not.toThrow()

        const again = yield* deliveries.redeliver(workspaceId, webhook.id, failed!.id)
        expect(again).toMatchObject({
          eventId: failed!.eventId,
          trigger: "redeliver",
          attempt: 3,
          status: "succeeded"
        })
        expect(receiver.sent[2]!.headers["webhook-id"]).toBe(receiver.sent[0]!.headers["webhook-id"])
        expect(receiver.sent[2]!.body).toBe(receiver.sent[0]!.body)
        expect((yield* endpointOf(workspaceId, webhook.id)).status).toBe("paused")

        // A test event is its own source: its redelivery repeats it, id and timestamp included.
        const retested = yield* deliveries.redeliver(workspaceId, webhook.id, tested.id)
        expect(retested).toMatchObject({ eventId: tested.eventId, attempt: 2, trigger: "redeliver" })
        expect(receiver.sent[3]!.body).toBe(receiver.sent[1]!.body)
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect(
    "redeliver: 409 once the submission is deleted, 404 for another endpoint's delivery or endpoint",
    () => {
      const { layer } = scene()
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const webhook = yield* givenWebhook(workspaceId, ["submission.completed", "contact.created"])
        const other = yield* givenWebhook(workspaceId, ["submission.completed"])
        const deliveries = yield* Deliveries
        const created = yield* submit(workspaceId, bot.id)
        const made = yield* dispatchDue
        const completed = made.find(
          (d) => d.webhookId === webhook.id && d.eventType === "submission.completed"
        )!
        const contact = made.find((d) => d.eventType === "contact.created")!

        const foreign = yield* Effect.flip(deliveries.redeliver(workspaceId, other.id, completed.id))
        expect(foreign).toBeInstanceOf(ResourceNotFound)
        expect((foreign as ResourceNotFound).resource).toBe("delivery")
        const elsewhere = yield* givenWorkspaceWithBot
        const wrongWorkspace = yield* Effect.flip(
          deliveries.redeliver(elsewhere.workspaceId, webhook.id, completed.id)
        )
        expect((wrongWorkspace as ResourceNotFound).resource).toBe("webhook")

        yield* (yield* Submissions).remove(created.id)
        const sentBefore = (yield* attemptsOf(workspaceId, webhook.id)).length
        expect(
          yield* Effect.flip(deliveries.redeliver(workspaceId, webhook.id, completed.id))
        ).toBeInstanceOf(Conflict)
        expect(yield* attemptsOf(workspaceId, webhook.id)).toHaveLength(sentBefore)
        // The contact still exists: its event can be sent again.
        expect((yield* deliveries.redeliver(workspaceId, webhook.id, contact.id)).status).toBe("succeeded")
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("an event whose submission was deleted before its first attempt is not sent", () => {
    const { receiver, layer } = scene()
    return Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      yield* givenWebhook(workspaceId, ["submission.completed"])
      const created = yield* submit(workspaceId, bot.id)
      yield* (yield* Submissions).remove(created.id)
      const [dropped] = yield* dispatchDue
      expect(dropped).toMatchObject({ status: "failed", error: "not sent: the submission no longer exists" })
      expect(receiver.sent).toEqual([])
    }).pipe(Effect.provide(layer))
  })
})

describe("workspaces that get no deliveries", () => {
  const archive = (workspaceId: string, change: { status?: "archived"; plan?: "free" }) =>
    Effect.gen(function* () {
      const repository = yield* WorkspaceRepository
      const workspace = yield* Effect.flatten(repository.findById(makeWorkspaceId(workspaceId)))
      yield* repository.update({ ...workspace, ...change })
    })

  it.effect("archiving stops queued retries, marked why, and later events queue nothing", () => {
    const { receiver, layer } = scene({ settings: { retrySchedule: [5 * SECOND] } })
    return Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
      receiver.answerWith(answer(500))
      yield* submit(workspaceId, bot.id)
      expect((yield* dispatchDue).map((d) => d.status)).toEqual(["failed"])

      yield* archive(workspaceId, { status: "archived" })
      yield* TestClock.adjust(10 * SECOND)
      const [retry] = yield* dispatchDue
      expect(retry).toMatchObject({
        attempt: 2,
        status: "failed",
        error: "not sent: the workspace is archived"
      })
      expect(receiver.sent).toHaveLength(1)

      // A submission stored for the archived workspace (the operator API can): no attempt.
      yield* (yield* Submissions).createForBot(bot.id, {
        data: requiredOnlyData({ email: "bea@example.com" })
      })
      expect(yield* attemptsOf(workspaceId, webhook.id)).toHaveLength(2)
      yield* TestClock.adjust(HOUR)
      expect(yield* dispatchDue).toEqual([])
      expect(receiver.sent).toHaveLength(1)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a workspace moved to Free gets no deliveries either", () => {
    const { receiver, layer } = scene()
    return Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
      yield* submit(workspaceId, bot.id)
      yield* archive(workspaceId, { plan: "free" })
      const [dropped] = yield* dispatchDue
      expect(dropped).toMatchObject({
        status: "failed",
        error: "not sent: the workspace's plan (free) has no API access"
      })
      expect(yield* attemptsOf(workspaceId, webhook.id)).toHaveLength(1)
      expect(receiver.sent).toEqual([])
    }).pipe(Effect.provide(layer))
  })
})

describe("the receiver address at delivery time", () => {
  it.effect("a name re-pointed to a private address after creation is refused at the next attempt", () => {
    const { receiver, addresses, layer } = scene({ settings: { retrySchedule: [5 * SECOND] } })
    return Effect.gen(function* () {
      const { workspaceId, bot } = yield* givenWorkspaceWithBot
      const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
      addresses["hooks.example.com"] = ["10.0.0.7"]
      yield* submit(workspaceId, bot.id)
      const [refused] = yield* dispatchDue
      expect(refused).toMatchObject({ status: "failed", responseStatus: null })
      expect(refused!.error).toMatch(
        /^not sent: the receiver URL resolves to a private address \(10\.0\.0\.7\)/
      )
      expect(refused!.nextRetryAt).not.toBeNull()
      expect(receiver.sent).toEqual([])
      expect((yield* endpointOf(workspaceId, webhook.id)).consecutiveFails).toBe(1)
    }).pipe(Effect.provide(layer))
  })
})

describe("the delivery log", () => {
  it.effect(
    "lists an endpoint's attempts newest first, in pages; a cursor of another list is refused",
    () => {
      const { layer } = scene()
      return Effect.gen(function* () {
        const { workspaceId } = yield* givenWorkspaceWithBot
        const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
        const other = yield* givenWebhook(workspaceId, ["submission.completed"])
        const deliveries = yield* Deliveries
        const made: Array<Delivery> = []
        for (let i = 0; i < 5; i++) {
          made.push(yield* deliveries.test(workspaceId, webhook.id))
          if (i % 2 === 0) yield* TestClock.adjust(SECOND)
        }
        const first = yield* deliveries.list(workspaceId, webhook.id, { limit: 3, cursor: null })
        expect(first.nextCursor).not.toBeNull()
        const second = yield* deliveries.list(workspaceId, webhook.id, { limit: 3, cursor: first.nextCursor })
        expect(second.nextCursor).toBeNull()
        const expected = [...made]
          .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
          .map((d) => d.id)
        expect([...first.items, ...second.items].map((d) => d.id)).toEqual(expected)
        const crossed = yield* Effect.flip(
          deliveries.list(workspaceId, other.id, { limit: 3, cursor: first.nextCursor })
        )
        expect(crossed).toBeInstanceOf(ValidationFailed)
        const missing = yield* Effect.flip(
          deliveries.list(workspaceId, makeWebhookId("wh_missing"), { limit: 3, cursor: null })
        )
        expect((missing as ResourceNotFound).resource).toBe("webhook")
      }).pipe(Effect.provide(layer))
    }
  )
})
