/**
 * The delivery engine's rules, over the memory adapters and a receiver double, with
 * TestClock driving the retry schedule and the disable window.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Delivery, IntakeBots, Submissions, Webhooks, WireShapes } from "@intake/domain/internal"
import { answer, newIntakeBot, unreachable } from "@intake/testing"
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
