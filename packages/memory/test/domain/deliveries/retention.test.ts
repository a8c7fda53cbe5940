/**
 * Retention (docs/webhooks.md, "Data kept"): the periodic purge deletes finished attempts and
 * events older than WEBHOOK_RETENTION (30 days by default), never an attempt still queued nor
 * the event it delivers, which is then sent as usual.
 */
import { describe, expect, it } from "@effect/vitest"
import { DeliveryHistoryPurgeLive, EventOutbox } from "@intake/domain"
import { answer } from "@intake/testing"
import { Duration, Effect, Layer, Option, TestClock } from "effect"
import { attemptsOf, dispatchDue, givenWebhook, givenWorkspaceWithBot, HOUR, scene, submit } from "./scene.js"

const DAY = 24 * HOUR

describe("retention", () => {
  it.effect(
    "the hourly purge deletes what is older than 30 days, in batches, and keeps a queued retry and its event",
    () => {
      const { receiver, layer } = scene({ settings: { retrySchedule: [40 * DAY] } })
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const start = yield* TestClock.currentTimeMillis
        const webhook = yield* givenWebhook(workspaceId, ["submission.completed"])
        const outbox = yield* EventOutbox
        receiver.answerWith(answer(200), answer(500), answer(200))
        yield* submit(workspaceId, bot.id)
        yield* submit(workspaceId, bot.id, "grace@example.com")
        const [delivered, failed] = yield* dispatchDue
        expect([delivered!.status, failed!.status]).toEqual(["succeeded", "failed"])
        const retry = (yield* attemptsOf(workspaceId, webhook.id)).find((d) => d.status === "pending")!
        expect(retry.eventId).toBe(failed!.eventId)

        yield* TestClock.setTime(start + 29 * DAY)
        yield* submit(workspaceId, bot.id, "alan@example.com")
        const [young] = yield* dispatchDue

        yield* Effect.scoped(
          Effect.gen(function* () {
            // Batches of 2 rows: the three old attempts take two of them.
            yield* Layer.build(DeliveryHistoryPurgeLive(Duration.hours(1), 2))
            // At start nothing is 30 days old yet; a day and an hour later the first two are.
            expect((yield* attemptsOf(workspaceId, webhook.id)).map((d) => d.id).sort()).toEqual(
              [delivered!.id, failed!.id, retry.id, young!.id].sort()
            )
            yield* TestClock.adjust(DAY + HOUR)
          })
        )
        expect((yield* attemptsOf(workspaceId, webhook.id)).map((d) => d.id).sort()).toEqual(
          [retry.id, young!.id].sort()
        )
        expect(yield* outbox.findById(delivered!.eventId)).toEqual(Option.none())
        expect(Option.isSome(yield* outbox.findById(failed!.eventId))).toBe(true)
        expect(Option.isSome(yield* outbox.findById(young!.eventId))).toBe(true)

        // The retry still goes out, its payload rebuilt from the event that was kept.
        yield* TestClock.setTime(retry.createdAt + 48 * DAY)
        const [sent] = yield* dispatchDue
        expect(sent).toMatchObject({ id: retry.id, status: "succeeded", attempt: 2 })
        expect(JSON.parse(receiver.sent.at(-1)!.body).id).toBe(failed!.eventId)
      }).pipe(Effect.provide(layer))
    }
  )
})
