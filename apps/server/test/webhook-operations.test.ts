/**
 * Running webhooks for years, over a real socket: rotating an endpoint's secret with an
 * overlap (both secrets sign during the grace period), and webhook.disabled telling the
 * workspace's other endpoints that one was disabled (docs/webhooks.md).
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Webhook } from "standardwebhooks"
import { BaseUrl, call } from "./harness.js"
import { eventually, localReceiver, type Received } from "./receiver.js"
import { dataOf, expectError, expectHeaders, provision, realServer, shift } from "./support.js"

const acceptedBy = (secret: string, request: Received) => {
  try {
    new Webhook(secret).verify(request.body, request.headers as Record<string, string>)
    return true
  } catch {
    return false
  }
}

const givenWebhook = (baseUrl: string, key: string, url: string, events: ReadonlyArray<string>) =>
  Effect.map(
    call(baseUrl, "POST", "/v1/webhooks", { key, body: { url, events } }),
    (answer) => dataOf(answer).webhook as { id: string; secret: string }
  )

const submit = (baseUrl: string, key: string, botId: string) =>
  call(baseUrl, "POST", `/v1/intake-bots/${botId}/submissions`, {
    key,
    body: { data: { name: "Ada Lovelace", email: "ada@example.com", topic: "sales" } }
  })

const isoNear = (iso: string, expected: number) => Math.abs(Date.parse(iso) - expected) < 10_000

// The server clock this file moves is shared with the files after it in the worker (docs/testing.md).
afterAll(() => {
  shift.millis = 0
})

layer(realServer({ allowPrivateNetworks: true, retrySchedule: [100, 200] }), { excludeTestServices: true })(
  "webhook operations",
  (it) => {
    it.scoped(
      "POST /webhooks/:id/secret/rotate answers the new secret once (replayed with its Idempotency-Key); both secrets sign until the grace period ends",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const tenant = yield* provision(baseUrl)
          const receiver = yield* localReceiver()
          const webhook = yield* givenWebhook(baseUrl, tenant.key, receiver.url, ["submission.completed"])
          const rotatePath = `/v1/webhooks/${webhook.id}/secret/rotate`

          const rotated = yield* call(baseUrl, "POST", rotatePath, {
            key: tenant.key,
            body: { grace_period_seconds: 60 },
            headers: { "idempotency-key": "rotate-1" }
          })
          expectHeaders(rotated)
          const answered = dataOf(rotated).webhook
          expect(answered).toMatchObject({ id: webhook.id, url: receiver.url, status: "active" })
          expect(answered.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
          expect(answered.secret).not.toBe(webhook.secret)
          expect(isoNear(answered.previous_secret_expires_at, Date.now() + 60_000)).toBe(true)
          const newSecret: string = answered.secret

          // The same key again: the same answer, the same secret, and no second rotation.
          const replayed = yield* call(baseUrl, "POST", rotatePath, {
            key: tenant.key,
            body: { grace_period_seconds: 60 },
            headers: { "idempotency-key": "rotate-1" }
          })
          expect(replayed.headers.get("idempotent-replayed")).toBe("true")
          expect(dataOf(replayed).webhook).toEqual(answered)

          // GET shows the overlap, never a secret.
          const read = dataOf(
            yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}`, { key: tenant.key })
          ).webhook
          expect(read).not.toHaveProperty("secret")
          expect(read.previous_secret_expires_at).toBe(answered.previous_secret_expires_at)

          // During the grace period: an event and a test verify with either secret.
          dataOf(yield* submit(baseUrl, tenant.key, tenant.botId), 201)
          yield* eventually(() => receiver.received.length === 1)
          dataOf(yield* call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/test`, { key: tenant.key }))
          expect(receiver.received).toHaveLength(2)
          for (const request of receiver.received) {
            expect(String(request.headers["webhook-signature"]).split(" ")).toHaveLength(2)
            expect(acceptedBy(webhook.secret, request)).toBe(true)
            expect(acceptedBy(newSecret, request)).toBe(true)
          }

          // A minute later (server time), only the new secret signs.
          shift.millis += 61_000
          yield* Effect.ensuring(
            Effect.gen(function* () {
              dataOf(yield* call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/test`, { key: tenant.key }))
              const after = receiver.received[2]!
              expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1)
              expect(acceptedBy(newSecret, after)).toBe(true)
              expect(acceptedBy(webhook.secret, after)).toBe(false)
            }),
            Effect.sync(() => {
              shift.millis -= 61_000
            })
          )

          // No body at all: the default grace period, 24 hours.
          const byDefault = dataOf(yield* call(baseUrl, "POST", rotatePath, { key: tenant.key })).webhook
          expect(byDefault.secret).not.toBe(newSecret)
          expect(isoNear(byDefault.previous_secret_expires_at, Date.now() + 86_400_000)).toBe(true)
        })
    )

    it.scoped(
      "rotation refuses a grace period over 7 days, another workspace's endpoint and a key without the scope",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const tenant = yield* provision(baseUrl)
          const webhook = yield* givenWebhook(baseUrl, tenant.key, "https://hooks.example.com/intake", [
            "submission.completed"
          ])
          const rotatePath = `/v1/webhooks/${webhook.id}/secret/rotate`
          for (const grace_period_seconds of [604_801, -1, 1.5]) {
            const refused = yield* call(baseUrl, "POST", rotatePath, {
              key: tenant.key,
              body: { grace_period_seconds }
            })
            expect(expectError(refused, 400, "validation_failed")?.issues).toEqual([
              {
                path: "grace_period_seconds",
                message: "must be a whole number of seconds from 0 to 604800 (7 days)"
              }
            ])
          }
          expectError(
            yield* call(baseUrl, "POST", rotatePath, {
              key: tenant.key,
              body: { grace_period_seconds: "1d" }
            }),
            400,
            "validation_failed"
          )
          expectError(
            yield* call(baseUrl, "POST", rotatePath, { key: tenant.key, body: { grace: 60 } }),
            400,
            "validation_failed"
          )
          const longest = dataOf(
            yield* call(baseUrl, "POST", rotatePath, {
              key: tenant.key,
              body: { grace_period_seconds: 604_800 }
            })
          ).webhook
          expect(isoNear(longest.previous_secret_expires_at, Date.now() + 604_800_000)).toBe(true)
          const atOnce = dataOf(
            yield* call(baseUrl, "POST", rotatePath, { key: tenant.key, body: { grace_period_seconds: 0 } })
          ).webhook
          expect(atOnce.previous_secret_expires_at).toBeNull()

          const stranger = yield* provision(baseUrl)
          expectError(
            yield* call(baseUrl, "POST", rotatePath, { key: stranger.key }),
            404,
            "resource_not_found"
          )
          const reader = yield* provision(baseUrl, { scopes: ["read:submissions"] })
          expectError(
            yield* call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/secret/rotate`, { key: reader.key }),
            403,
            "insufficient_scopes"
          )
        })
    )

    it.scoped(
      "a receiver answering 410 is disabled and the workspace's endpoints subscribed to webhook.disabled receive it, redeliverable",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const tenant = yield* provision(baseUrl)
          const goneReceiver = yield* localReceiver([410])
          const watcherReceiver = yield* localReceiver()
          const gone = yield* givenWebhook(baseUrl, tenant.key, goneReceiver.url, ["submission.completed"])
          const watcher = yield* givenWebhook(baseUrl, tenant.key, watcherReceiver.url, ["webhook.disabled"])

          dataOf(yield* submit(baseUrl, tenant.key, tenant.botId), 201)
          yield* eventually(() => watcherReceiver.received.length === 1)
          const notice = watcherReceiver.received[0]!
          expect(acceptedBy(watcher.secret, notice)).toBe(true)
          expect(notice.body).not.toContain("whsec_")
          const disabled = dataOf(
            yield* call(baseUrl, "GET", `/v1/webhooks/${gone.id}`, { key: tenant.key })
          ).webhook
          expect(disabled.status).toBe("disabled")
          expect(notice.payload).toEqual({
            id: expect.stringMatching(/^evt_/),
            type: "webhook.disabled",
            timestamp: disabled.last_delivery_at,
            data: {
              webhook: {
                id: gone.id,
                url: goneReceiver.url,
                description: "",
                events: ["submission.completed"],
                intake_bot_ids: [],
                status: "disabled",
                consecutive_fails: 1,
                last_delivery_at: disabled.last_delivery_at,
                created_at: disabled.created_at
              },
              reason: "gone",
              disabled_at: disabled.last_delivery_at
            }
          })

          yield* eventually(() => goneReceiver.received.length === 1)
          const log = dataOf(
            yield* call(baseUrl, "GET", `/v1/webhooks/${watcher.id}/deliveries`, { key: tenant.key })
          ).deliveries
          expect(log).toHaveLength(1)
          expect(log[0]).toMatchObject({ event_type: "webhook.disabled", event_id: notice.payload.id })
          const again = dataOf(
            yield* call(baseUrl, "POST", `/v1/webhooks/${watcher.id}/deliveries/${log[0].id}/redeliver`, {
              key: tenant.key
            })
          ).delivery
          expect(again).toMatchObject({
            trigger: "redeliver",
            status: "succeeded",
            event_type: "webhook.disabled"
          })
          expect(watcherReceiver.received[1]!.payload).toEqual(notice.payload)
        })
    )
  }
)
