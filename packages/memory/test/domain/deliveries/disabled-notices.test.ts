/**
 * webhook.disabled (docs/webhooks.md, "Webhook notifications"): when the service disables an
 * endpoint (a 410 Gone, or failures for WEBHOOK_DISABLE_AFTER), the workspace's other active
 * endpoints subscribed to webhook.disabled get the event, queued in the unit of work that
 * disables it, and one log line says which endpoint and why.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Conflict,
  Deliveries,
  type Delivery,
  IntakeBots,
  makeIntakeBotId,
  makeWorkspaceId,
  Webhooks
} from "@intake/domain"
import { answer, captureLogs, newIntakeBot } from "@intake/testing"
import { Effect, TestClock } from "effect"
import { Webhook } from "standardwebhooks"
import {
  dispatchDue,
  endpointOf,
  givenWorkspaceWithBot,
  HOUR,
  MINUTE,
  NOW_ISO,
  RECEIVER,
  scene,
  submit
} from "./scene.js"

/** An endpoint whose requests the receiver double tells apart by `?to=`. */
const givenEndpoint = (
  workspaceId: string,
  name: string,
  events: ReadonlyArray<string>,
  intakeBotIds: ReadonlyArray<string> = []
) =>
  Effect.flatMap(Webhooks, (webhooks) =>
    webhooks.create(makeWorkspaceId(workspaceId), {
      url: `${RECEIVER}?to=${name}`,
      events,
      intakeBotIds: intakeBotIds.map(makeIntakeBotId)
    })
  )

describe("webhook.disabled", () => {
  it.effect(
    "a 410 disables the endpoint; the workspace's other active subscribers get webhook.disabled once, signed, without any secret",
    () => {
      const { receiver, layer } = scene()
      const logs = captureLogs()
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const otherBot = yield* (yield* IntakeBots).create(workspaceId, newIntakeBot({ name: "Other" }))
        const gone = yield* givenEndpoint(workspaceId, "gone", ["submission.completed"])
        const watcher = yield* givenEndpoint(workspaceId, "watcher", ["webhook.disabled"])
        // Bot filters are about bots' events: this one hears about endpoints all the same.
        const otherBotWatcher = yield* givenEndpoint(
          workspaceId,
          "other-bot",
          ["webhook.disabled"],
          [otherBot.id]
        )
        const paused = yield* givenEndpoint(workspaceId, "paused", ["webhook.disabled"])
        yield* (yield* Webhooks).update(workspaceId, paused.id, { status: "paused" })
        yield* givenEndpoint(workspaceId, "not-subscribed", ["submission.completed"], [otherBot.id])
        const elsewhere = yield* givenWorkspaceWithBot
        yield* givenEndpoint(elsewhere.workspaceId, "elsewhere", ["webhook.disabled"])

        receiver.answerWith(answer(410, "gone"), answer(200))
        yield* submit(workspaceId, bot.id)
        const [attempt] = yield* dispatchDue
        expect(attempt).toMatchObject({ webhookId: gone.id, responseStatus: 410, status: "failed" })
        expect((yield* endpointOf(workspaceId, gone.id)).status).toBe("disabled")

        const notices = yield* dispatchDue
        expect(notices.map((d) => [d.webhookId, d.eventType, d.status]).sort()).toEqual(
          [
            [watcher.id, "webhook.disabled", "succeeded"],
            [otherBotWatcher.id, "webhook.disabled", "succeeded"]
          ].sort()
        )
        const received = receiver.sent.slice(1)
        expect(received.map((request) => new URL(request.url).searchParams.get("to")).sort()).toEqual([
          "other-bot",
          "watcher"
        ])
        const expected = {
          id: expect.stringMatching(/^evt_/),
          type: "webhook.disabled",
          timestamp: NOW_ISO,
          data: {
            webhook: {
              id: gone.id,
              url: `${RECEIVER}?to=gone`,
              description: "",
              events: ["submission.completed"],
              intake_bot_ids: [],
              status: "disabled",
              consecutive_fails: 1,
              last_delivery_at: NOW_ISO,
              created_at: NOW_ISO
            },
            reason: "gone",
            disabled_at: NOW_ISO
          }
        }
        for (const request of received) {
          expect(JSON.parse(request.body)).toEqual(expected)
          expect(request.body).not.toContain("whsec_")
          const secret = request.url.endsWith("watcher") ? watcher.secret : otherBotWatcher.secret
          expect(() =>
            new Webhook(secret).verify(request.body, request.headers as Record<string, string>)
          ).not.toThrow()
        }
        // One event for both: the same webhook-id.
        expect(new Set(received.map((request) => request.headers["webhook-id"])).size).toBe(1)

        const disabledLines = logs.matching(/^webhook endpoint disabled$/)
        expect(disabledLines).toEqual([
          {
            level: "warn",
            time: expect.any(String),
            message: "webhook endpoint disabled",
            webhookId: gone.id,
            workspaceId,
            reason: "the receiver answered 410 Gone",
            notifiedEndpoints: 2
          }
        ])
        expect(logs.printed()).not.toContain("whsec_")

        // Nothing more is due: one notice per endpoint, no retries.
        yield* TestClock.adjust(24 * HOUR)
        expect(yield* dispatchDue).toEqual([])

        // Redelivery rebuilds the payload from the endpoint; once it is deleted, 409.
        const deliveries = yield* Deliveries
        const notice = notices.find((d) => d.webhookId === watcher.id)!
        yield* deliveries.redeliver(workspaceId, watcher.id, notice.id)
        expect(JSON.parse(receiver.sent.at(-1)!.body)).toEqual(expected)
        expect(receiver.sent.at(-1)!.headers["webhook-id"]).toBe(received[0]!.headers["webhook-id"])
        yield* (yield* Webhooks).remove(workspaceId, gone.id)
        const refused = yield* Effect.flip(deliveries.redeliver(workspaceId, watcher.id, notice.id))
        expect(refused).toBeInstanceOf(Conflict)
        expect((refused as Conflict).message).toBe(
          "The webhook endpoint this delivery was built from no longer exists; it cannot be redelivered."
        )
      }).pipe(Effect.provide(layer), Effect.provide(logs.layer))
    }
  )

  it.effect(
    "failing for WEBHOOK_DISABLE_AFTER sends reason failing; re-enabled and disabled again by a test's 410, it is told again",
    () => {
      const { receiver, layer } = scene({
        settings: { retrySchedule: Array(10).fill(20 * MINUTE), disableAfterMs: HOUR }
      })
      const logs = captureLogs()
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const webhooks = yield* Webhooks
        const failing = yield* givenEndpoint(workspaceId, "failing", ["submission.completed"])
        const watcher = yield* givenEndpoint(workspaceId, "watcher", ["webhook.disabled"])
        receiver.answerWith(answer(500))
        yield* submit(workspaceId, bot.id)
        for (let round = 0; round < 10; round++) {
          const made: ReadonlyArray<Delivery> = yield* dispatchDue
          expect(made.every((d) => d.webhookId === failing.id)).toBe(true)
          if ((yield* endpointOf(workspaceId, failing.id)).status === "disabled") break
          yield* TestClock.adjust(25 * MINUTE)
        }
        const disabledAt = (yield* endpointOf(workspaceId, failing.id)).lastDeliveryAt!
        receiver.answerWith(answer(200))
        const [notice] = yield* dispatchDue
        expect(notice).toMatchObject({
          webhookId: watcher.id,
          eventType: "webhook.disabled",
          status: "succeeded"
        })
        expect(JSON.parse(receiver.sent.at(-1)!.body).data).toMatchObject({
          webhook: { id: failing.id, status: "disabled" },
          reason: "failing",
          disabled_at: new Date(disabledAt).toISOString()
        })

        // Re-enabled, then a test answered 410: disabled again, and told again.
        yield* webhooks.update(workspaceId, failing.id, { status: "active" })
        receiver.answerWith(answer(410), answer(200))
        yield* (yield* Deliveries).test(workspaceId, failing.id)
        expect((yield* endpointOf(workspaceId, failing.id)).status).toBe("disabled")
        const [again] = yield* dispatchDue
        expect(again).toMatchObject({ webhookId: watcher.id, eventType: "webhook.disabled" })
        expect(JSON.parse(receiver.sent.at(-1)!.body).data.reason).toBe("gone")
        expect(logs.matching(/^webhook endpoint disabled$/).map((line) => line.reason)).toEqual([
          "deliveries failed for WEBHOOK_DISABLE_AFTER",
          "the receiver answered 410 Gone"
        ])
      }).pipe(Effect.provide(layer), Effect.provide(logs.layer))
    }
  )
})
