/**
 * Webhook deliveries end to end: the real server with its in-process dispatcher, a local
 * receiver that verifies every delivery with the `standardwebhooks` package.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Webhook } from "standardwebhooks"
import { BaseUrl, call } from "./harness.js"
import { eventually, localReceiver, type Received } from "./receiver.js"
import { admin, dataOf, expectError, expectHeaders, provision, realServer } from "./support.js"

const verified = (secret: string, request: Received) =>
  new Webhook(secret).verify(request.body, request.headers as Record<string, string>)

const givenWebhook = (baseUrl: string, key: string, url: string, events: ReadonlyArray<string>) =>
  Effect.map(
    call(baseUrl, "POST", "/v1/webhooks", { key, body: { url, events } }),
    (answer) => dataOf(answer).webhook as { id: string; secret: string }
  )

const submit = (baseUrl: string, key: string, botId: string, email = "ada@example.com") =>
  Effect.map(
    call(baseUrl, "POST", `/v1/intake-bots/${botId}/submissions`, {
      key,
      body: { data: { name: "Ada Lovelace", email, topic: "sales" } }
    }),
    (answer) => dataOf(answer, 201).submission as { id: string }
  )

/** The delivery log once it holds `count` attempts and none is pending (the receiver answers before the log is written). */
const settledDeliveries = (baseUrl: string, key: string, webhookId: string, count: number) =>
  Effect.gen(function* () {
    for (let i = 0; ; i++) {
      const deliveries: Array<{ readonly status: string }> = dataOf(
        yield* call(baseUrl, "GET", `/v1/webhooks/${webhookId}/deliveries`, { key })
      ).deliveries
      if (deliveries.length === count && deliveries.every((d) => d.status !== "pending"))
        return dataOf(yield* call(baseUrl, "GET", `/v1/webhooks/${webhookId}/deliveries`, { key })).deliveries
      if (i > 200) return yield* Effect.dieMessage(`the log never settled: ${JSON.stringify(deliveries)}`)
      yield* Effect.sleep("10 millis")
    }
  })

layer(realServer({ allowPrivateNetworks: true, retrySchedule: [100, 200] }), { excludeTestServices: true })(
  "webhook deliveries",
  (it) => {
    it.scoped("submission.completed, contact.created and the test event arrive signed and verifiable", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const receiver = yield* localReceiver()
        const webhook = yield* givenWebhook(baseUrl, tenant.key, receiver.url, [
          "submission.completed",
          "contact.created"
        ])
        const submission = yield* submit(baseUrl, tenant.key, tenant.botId)
        yield* eventually(() => receiver.received.length === 2)
        const byType = Object.fromEntries(receiver.received.map((r) => [r.payload.type, r]))
        for (const request of receiver.received) {
          expect(verified(webhook.secret, request)).toEqual(request.payload)
          expect(request.headers["webhook-id"]).toBe(request.payload.id)
        }
        const read = dataOf(
          yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}/submissions/${submission.id}`, {
            key: tenant.key
          })
        ).submission
        expect(byType["submission.completed"]!.payload.data).toEqual({
          submission: read,
          intake_bot: { id: tenant.botId, name: "Contact form" }
        })
        expect(byType["contact.created"]!.payload.data).toEqual({
          contact: {
            id: expect.stringMatching(/^con_/),
            email: "ada@example.com",
            name: "Ada Lovelace",
            created_at: read.created_at
          },
          submission_id: submission.id
        })

        const tested = yield* call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/test`, { key: tenant.key })
        expectHeaders(tested)
        const { delivery } = dataOf(tested)
        expect(delivery).toMatchObject({
          id: expect.stringMatching(/^dlv_/),
          webhook_id: webhook.id,
          event_id: expect.stringMatching(/^evt_/),
          event_type: "webhook.test",
          attempt: 1,
          trigger: "test",
          status: "succeeded",
          response_status: 200,
          response_body: "answered 200",
          error: null,
          duration_ms: expect.any(Number),
          next_retry_at: null,
          created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        })
        expect(receiver.received).toHaveLength(3)
        const test = receiver.received[2]!
        expect(verified(webhook.secret, test)).toEqual({
          id: delivery.event_id,
          type: "webhook.test",
          timestamp: delivery.created_at,
          data: { webhook_id: webhook.id }
        })

        const endpoint = dataOf(
          yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}`, { key: tenant.key })
        ).webhook
        expect(endpoint).toMatchObject({ last_delivery_ok: true, consecutive_fails: 0 })
        expect(endpoint.last_delivery_at).not.toBeNull()
      })
    )

    it.scoped(
      "a failing receiver is retried on WEBHOOK_RETRY_SCHEDULE with the same webhook-id, every attempt logged",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const tenant = yield* provision(baseUrl)
          const receiver = yield* localReceiver([500, 503, 200])
          const webhook = yield* givenWebhook(baseUrl, tenant.key, receiver.url, ["submission.completed"])
          yield* submit(baseUrl, tenant.key, tenant.botId)
          yield* eventually(() => receiver.received.length === 3)
          for (const request of receiver.received) verified(webhook.secret, request)
          expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(1)
          const deliveries = yield* settledDeliveries(baseUrl, tenant.key, webhook.id, 3)
          expect(
            deliveries.map(
              (d: { attempt: number; status: string; trigger: string; response_status: number }) => [
                d.attempt,
                d.trigger,
                d.status,
                d.response_status
              ]
            )
          ).toEqual([
            [3, "retry", "succeeded", 200],
            [2, "retry", "failed", 503],
            [1, "event", "failed", 500]
          ])
          const first = deliveries[2]
          const retryDelay = Date.parse(first.next_retry_at) - Date.parse(first.created_at)
          expect(retryDelay).toBeGreaterThanOrEqual(100)
          expect(deliveries[0].next_retry_at).toBeNull()
          const endpoint = dataOf(
            yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}`, { key: tenant.key })
          ).webhook
          expect(endpoint).toMatchObject({ last_delivery_ok: true, consecutive_fails: 0, status: "active" })
        })
    )

    it.scoped("a 410 disables the endpoint; PATCH status active re-enables it", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const receiver = yield* localReceiver([410])
        const webhook = yield* givenWebhook(baseUrl, tenant.key, receiver.url, ["submission.completed"])
        yield* submit(baseUrl, tenant.key, tenant.botId)
        yield* eventually(() => receiver.received.length === 1)
        const read = () =>
          Effect.map(
            call(baseUrl, "GET", `/v1/webhooks/${webhook.id}`, { key: tenant.key }),
            (a) => dataOf(a).webhook
          )
        let endpoint = yield* read()
        for (let i = 0; endpoint.status !== "disabled" && i < 100; i++) {
          yield* Effect.sleep("10 millis")
          endpoint = yield* read()
        }
        expect(endpoint).toMatchObject({ status: "disabled", consecutive_fails: 1, last_delivery_ok: false })
        yield* submit(baseUrl, tenant.key, tenant.botId, "grace@example.com")
        yield* Effect.sleep("300 millis")
        expect(receiver.received).toHaveLength(1)

        receiver.answerWith([200])
        const enabled = dataOf(
          yield* call(baseUrl, "PATCH", `/v1/webhooks/${webhook.id}`, {
            key: tenant.key,
            body: { status: "active" }
          })
        ).webhook
        expect(enabled).toMatchObject({ status: "active", consecutive_fails: 0 })
        yield* submit(baseUrl, tenant.key, tenant.botId, "alan@example.com")
        yield* eventually(() => receiver.received.length === 2)
        expect(verified(webhook.secret, receiver.received[1]!)).toMatchObject({
          type: "submission.completed"
        })
      })
    )

    it.scoped(
      "each attempt names the X-Request-Id of the create that raised its event: in the log, read alone and redelivered",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const tenant = yield* provision(baseUrl)
          const receiver = yield* localReceiver()
          const webhook = yield* givenWebhook(baseUrl, tenant.key, receiver.url, [
            "submission.completed",
            "contact.created"
          ])
          const requestId = `req_deliveries-${crypto.randomUUID()}`
          dataOf(
            yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
              key: tenant.key,
              headers: { "x-request-id": requestId },
              body: { data: { name: "Ada Lovelace", email: "ada@example.com", topic: "sales" } }
            }),
            201
          )
          yield* eventually(() => receiver.received.length === 2)
          const attempts: Array<{ id: string; request_id: string | null }> = yield* settledDeliveries(
            baseUrl,
            tenant.key,
            webhook.id,
            2
          )
          expect(attempts.map((d) => d.request_id)).toEqual([requestId, requestId])
          const one = yield* call(
            baseUrl,
            "GET",
            `/v1/webhooks/${webhook.id}/deliveries/${attempts[0]!.id}`,
            {
              key: tenant.key
            }
          )
          expect(dataOf(one).delivery.request_id).toBe(requestId)
          const again = yield* call(
            baseUrl,
            "POST",
            `/v1/webhooks/${webhook.id}/deliveries/${attempts[0]!.id}/redeliver`,
            { key: tenant.key }
          )
          expect(dataOf(again).delivery.request_id).toBe(requestId)
          // A test event is raised by no create.
          const test = yield* call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/test`, { key: tenant.key })
          expect(dataOf(test).delivery.request_id).toBeNull()
        })
    )

    it.scoped("lists deliveries newest first in pages", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const receiver = yield* localReceiver()
        const webhook = yield* givenWebhook(baseUrl, tenant.key, receiver.url, ["submission.completed"])
        const made: Array<string> = []
        for (let i = 0; i < 5; i++)
          made.push(
            dataOf(yield* call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/test`, { key: tenant.key }))
              .delivery.id
          )
        const seen: Array<string> = []
        let cursor: string | null = null
        let pages = 0
        do {
          const query: string = cursor === null ? "?limit=2" : `?limit=2&cursor=${encodeURIComponent(cursor)}`
          const page = yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}/deliveries${query}`, {
            key: tenant.key
          })
          expectHeaders(page)
          const data = dataOf(page)
          seen.push(...data.deliveries.map((d: { id: string }) => d.id))
          expect(data.pagination.has_more).toBe(data.pagination.next_cursor !== null)
          cursor = data.pagination.next_cursor
          pages++
        } while (cursor !== null)
        expect(pages).toBe(3)
        expect(seen).toEqual([...made].reverse())
        const bad = yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}/deliveries?limit=0`, {
          key: tenant.key
        })
        expectError(bad, 400, "validation_failed")
      })
    )

    it.scoped(
      "redeliver answers the finished attempt; 409 once the submission is deleted; 404 elsewhere",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const tenant = yield* provision(baseUrl)
          const receiver = yield* localReceiver()
          const webhook = yield* givenWebhook(baseUrl, tenant.key, receiver.url, ["submission.completed"])
          const other = yield* givenWebhook(baseUrl, tenant.key, receiver.url, ["contact.created"])
          const submission = yield* submit(baseUrl, tenant.key, tenant.botId)
          yield* eventually(() => receiver.received.length === 2)
          const [original] = yield* settledDeliveries(baseUrl, tenant.key, webhook.id, 1)
          expect(original).toMatchObject({ status: "succeeded", event_type: "submission.completed" })

          const again = yield* call(
            baseUrl,
            "POST",
            `/v1/webhooks/${webhook.id}/deliveries/${original.id}/redeliver`,
            { key: tenant.key, headers: { "idempotency-key": "redeliver-1" } }
          )
          expect(dataOf(again).delivery).toMatchObject({
            event_id: original.event_id,
            trigger: "redeliver",
            attempt: 2,
            status: "succeeded"
          })
          const redelivered = receiver.received[receiver.received.length - 1]!
          expect(redelivered.headers["webhook-id"]).toBe(original.event_id)
          verified(webhook.secret, redelivered)
          // An idempotent replay answers the same attempt without sending again.
          const replay = yield* call(
            baseUrl,
            "POST",
            `/v1/webhooks/${webhook.id}/deliveries/${original.id}/redeliver`,
            { key: tenant.key, headers: { "idempotency-key": "redeliver-1" } }
          )
          expect(replay.body).toEqual(again.body)
          expect(replay.headers.get("idempotent-replayed")).toBe("true")
          expect(receiver.received).toHaveLength(3)

          const foreign = yield* call(
            baseUrl,
            "POST",
            `/v1/webhooks/${other.id}/deliveries/${original.id}/redeliver`,
            { key: tenant.key }
          )
          expect(expectError(foreign, 404, "resource_not_found")).toEqual({ resource: "delivery" })

          dataOf(yield* admin(baseUrl, "DELETE", `/admin/submissions/${submission.id}`))
          const gone = yield* call(
            baseUrl,
            "POST",
            `/v1/webhooks/${webhook.id}/deliveries/${original.id}/redeliver`,
            {
              key: tenant.key,
              body: {}
            }
          )
          expectError(gone, 409, "conflict")
          expectHeaders(gone)
          expect(receiver.received).toHaveLength(3)

          const stranger = yield* provision(baseUrl)
          const hidden = yield* call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/test`, {
            key: stranger.key
          })
          expect(expectError(hidden, 404, "resource_not_found")).toEqual({ resource: "webhook" })
        })
    )
  }
)
