/**
 * Secret rotation with overlap (docs/webhooks.md, "Secret rotation"): during the grace period
 * every delivery (event, retry, test, redeliver) is signed with the new and the old secret,
 * so receivers verifying with either accept it; after it, only the new secret signs.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deliveries, ResourceNotFound, ValidationFailed, Webhooks } from "@intake/domain"
import { answer, type receiverDouble } from "@intake/testing"
import { Effect, TestClock } from "effect"
import { Webhook } from "standardwebhooks"
import { dispatchDue, givenWebhook, givenWorkspaceWithBot, MINUTE, SECOND, scene, submit } from "./scene.js"

type Sent = ReturnType<typeof receiverDouble>["sent"][number]

/** Whether a receiver holding `secret` accepts the request (standardwebhooks, 5 minutes' tolerance). */
const accepts = (secret: string, request: Sent) => {
  try {
    new Webhook(secret).verify(request.body, request.headers as Record<string, string>)
    return true
  } catch {
    return false
  }
}

const signaturesOf = (request: Sent) => request.headers["webhook-signature"]!.split(" ")

describe("rotating a webhook's secret", () => {
  it.effect(
    "during the grace period every delivery verifies with the old and the new secret; after it only with the new one",
    () => {
      const { receiver, layer } = scene({ settings: { retrySchedule: [5 * SECOND] } })
      return Effect.gen(function* () {
        const { workspaceId, bot } = yield* givenWorkspaceWithBot
        const webhooks = yield* Webhooks
        const deliveries = yield* Deliveries
        const created = yield* givenWebhook(workspaceId, ["submission.completed"])
        const oldSecret = created.secret
        const start = yield* TestClock.currentTimeMillis

        const rotated = yield* webhooks.rotateSecret(workspaceId, created.id, { gracePeriodSeconds: 120 })
        const newSecret = rotated.secret
        expect(newSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
        expect(newSecret).not.toBe(oldSecret)
        expect(rotated).toMatchObject({
          id: created.id,
          previousSecret: oldSecret,
          previousSecretExpiresAt: start + 120 * SECOND,
          updatedAt: start
        })

        // An event that fails, its retry, a test and a redelivery: all inside the 2 minutes.
        receiver.answerWith(answer(500), answer(200))
        yield* submit(workspaceId, bot.id)
        const [failed] = yield* dispatchDue
        yield* TestClock.adjust(10 * SECOND)
        const [retried] = yield* dispatchDue
        expect(retried).toMatchObject({ trigger: "retry", status: "succeeded" })
        yield* deliveries.test(workspaceId, created.id)
        yield* deliveries.redeliver(workspaceId, created.id, failed!.id)
        expect(receiver.sent.map((request) => JSON.parse(request.body).type)).toEqual([
          "submission.completed",
          "submission.completed",
          "webhook.test",
          "submission.completed"
        ])
        for (const request of receiver.sent) {
          expect(signaturesOf(request)).toHaveLength(2)
          expect(accepts(oldSecret, request)).toBe(true)
          expect(accepts(newSecret, request)).toBe(true)
        }

        // The grace period is over: one signature, the new secret's.
        yield* TestClock.setTime(start + 120 * SECOND)
        const before = receiver.sent.length
        yield* submit(workspaceId, bot.id, "grace@example.com")
        yield* dispatchDue
        yield* deliveries.test(workspaceId, created.id)
        const after = receiver.sent.slice(before)
        expect(after).toHaveLength(2)
        for (const request of after) {
          expect(signaturesOf(request)).toHaveLength(1)
          expect(accepts(newSecret, request)).toBe(true)
          expect(accepts(oldSecret, request)).toBe(false)
        }
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect(
    "a second rotation drops the oldest secret, 0 stops the old one at once, a PATCH keeps the secrets, and bad grace periods are refused",
    () => {
      const { receiver, layer } = scene()
      return Effect.gen(function* () {
        const { workspaceId } = yield* givenWorkspaceWithBot
        const webhooks = yield* Webhooks
        const deliveries = yield* Deliveries
        const created = yield* givenWebhook(workspaceId, ["submission.completed"])
        const start = yield* TestClock.currentTimeMillis

        const first = yield* webhooks.rotateSecret(workspaceId, created.id, {})
        // The default grace period: 24 hours.
        expect(first.previousSecretExpiresAt).toBe(start + 24 * 60 * MINUTE)
        yield* TestClock.adjust(MINUTE)
        const second = yield* webhooks.rotateSecret(workspaceId, created.id, { gracePeriodSeconds: 3600 })
        expect(second).toMatchObject({
          previousSecret: first.secret,
          previousSecretExpiresAt: start + MINUTE + 3600 * SECOND
        })
        yield* deliveries.test(workspaceId, created.id)
        const [tested] = receiver.sent
        expect(accepts(second.secret, tested!)).toBe(true)
        expect(accepts(first.secret, tested!)).toBe(true)
        expect(accepts(created.secret, tested!)).toBe(false)

        // A PATCH made afterwards leaves both secrets as they are.
        yield* webhooks.update(workspaceId, created.id, { description: "renamed" })
        yield* deliveries.test(workspaceId, created.id)
        expect(accepts(first.secret, receiver.sent[1]!)).toBe(true)
        expect(accepts(second.secret, receiver.sent[1]!)).toBe(true)

        const atOnce = yield* webhooks.rotateSecret(workspaceId, created.id, { gracePeriodSeconds: 0 })
        expect(atOnce).toMatchObject({ previousSecret: null, previousSecretExpiresAt: null })
        yield* deliveries.test(workspaceId, created.id)
        const last = receiver.sent[2]!
        expect(signaturesOf(last)).toHaveLength(1)
        expect(accepts(atOnce.secret, last)).toBe(true)
        expect(accepts(second.secret, last)).toBe(false)

        for (const gracePeriodSeconds of [7 * 24 * 3600 + 1, -1, 1.5, Number.NaN]) {
          const refused = yield* Effect.flip(
            webhooks.rotateSecret(workspaceId, created.id, { gracePeriodSeconds })
          )
          expect(refused).toBeInstanceOf(ValidationFailed)
          expect((refused as ValidationFailed).issues).toEqual([
            {
              path: "grace_period_seconds",
              message: "must be a whole number of seconds from 0 to 604800 (7 days)"
            }
          ])
        }
        // Exactly 7 days is allowed.
        const longest = yield* webhooks.rotateSecret(workspaceId, created.id, {
          gracePeriodSeconds: 7 * 24 * 3600
        })
        expect(longest.previousSecret).toBe(atOnce.secret)
        // Another workspace's endpoint is not found.
        const elsewhere = yield* givenWorkspaceWithBot
        expect(
          yield* Effect.flip(webhooks.rotateSecret(elsewhere.workspaceId, created.id, {}))
        ).toBeInstanceOf(ResourceNotFound)
      }).pipe(Effect.provide(layer))
    }
  )
})
