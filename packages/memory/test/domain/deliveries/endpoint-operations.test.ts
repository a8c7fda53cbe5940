/**
 * Deliveries beyond the queue: paused endpoints, the test send and redelivery, workspaces
 * whose plan gets no deliveries, the receiver's address checked at delivery time, and the
 * delivery log (docs/rules.md, Webhooks and deliveries).
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Conflict,
  Deliveries,
  type Delivery,
  makeWebhookId,
  makeWorkspaceId,
  ResourceNotFound,
  Submissions,
  ValidationFailed,
  Webhooks,
  WorkspaceRepository
} from "@intake/domain/internal"
import { answer, requiredOnlyData } from "@intake/testing"
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
  SECOND,
  scene,
  submit
} from "./scene.js"

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
