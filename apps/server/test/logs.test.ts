/**
 * The logs an operator reads: one JSON line per request and per delivery attempt, with
 * ids and outcomes, and never an API key, a webhook secret, a header or a body.
 */
import { expect, layer } from "@effect/vitest"
import { captureLogs } from "@intake/testing"
import { Effect, Layer } from "effect"
import { BaseUrl, call } from "./harness.js"
import { eventually, localReceiver } from "./receiver.js"
import { dataOf, provision, realServer } from "./support.js"

const captured = captureLogs()

layer(realServer({ allowPrivateNetworks: true }).pipe(Layer.provide(captured.layer)), {
  excludeTestServices: true
})("logs", (it) => {
  it.scoped(
    "one JSON line per request and per delivery attempt, with no key, secret, header or body in any",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const receiver = yield* localReceiver([200])
        const tenant = yield* provision(baseUrl)
        const secretDescription = "a description only the body carries"
        const created = yield* call(baseUrl, "POST", "/v1/webhooks", {
          key: tenant.key,
          body: { url: receiver.url, events: ["submission.completed"], description: secretDescription }
        })
        const { webhook } = dataOf(created, 200)
        const tested = yield* call(baseUrl, "POST", `/v1/webhooks/${webhook.id}/test`, { key: tenant.key })
        const { delivery } = dataOf(tested)
        const read = yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}`, { key: tenant.key })
        const missing = yield* call(baseUrl, "GET", "/v1/intake-bots/ib_nope", { key: tenant.key })
        const anonymous = yield* call(baseUrl, "GET", "/v1/intake-bots", {
          headers: { authorization: "Bearer svc_live_notakeyatall" }
        })
        const unknown = yield* call(baseUrl, "GET", "/v1/no-such-thing", { key: tenant.key })

        const logs = captured.parsed()
        const requestLine = (answer: { headers: Headers }) => {
          const id = answer.headers.get("x-request-id")
          const found = logs.filter((line) => line.message === "request" && line.requestId === id)
          expect(found, `log lines of ${id}`).toHaveLength(1)
          return found[0]
        }
        const ofTenant = { workspaceId: tenant.workspaceId, keyId: tenant.keyId }
        expect(requestLine(created)).toMatchObject({
          level: "info",
          method: "POST",
          route: "/v1/webhooks",
          status: 200,
          durationMs: expect.any(Number),
          ...ofTenant
        })
        expect(requestLine(tested)).toMatchObject({
          method: "POST",
          route: "/v1/webhooks/:id/test",
          status: 200,
          ...ofTenant
        })
        expect(requestLine(read)).toMatchObject({ route: "/v1/intake-bots/:id", status: 200, ...ofTenant })
        expect(requestLine(missing)).toMatchObject({ route: "/v1/intake-bots/:id", status: 404, ...ofTenant })
        expect(requestLine(anonymous)).toMatchObject({
          route: null,
          status: 401,
          workspaceId: null,
          keyId: null
        })
        expect(requestLine(unknown)).toMatchObject({ route: null, status: 404, ...ofTenant })

        const attempts = logs.filter((line) => line.message === "delivery attempt")
        expect(attempts).toEqual([
          expect.objectContaining({
            level: "info",
            deliveryId: delivery.id,
            webhookId: webhook.id,
            eventId: delivery.event_id,
            attempt: 1,
            trigger: "test",
            status: "succeeded",
            responseStatus: 200,
            durationMs: expect.any(Number)
          })
        ])

        const everything = captured.printed()
        expect(everything).toContain(webhook.id)
        for (const secret of [
          tenant.key,
          webhook.secret,
          "svc_live_notakeyatall",
          secretDescription,
          "authorization",
          "Bearer"
        ]) {
          expect(everything).not.toContain(secret)
        }
        // The payload the receiver got is not logged either.
        expect(everything).not.toContain(receiver.received[0]!.body)
      })
  )

  it.scoped(
    "one id end to end: a create's X-Request-Id names its log line and every delivery attempt of its events",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const receiver = yield* localReceiver([200])
        const tenant = yield* provision(baseUrl)
        dataOf(
          yield* call(baseUrl, "POST", "/v1/webhooks", {
            key: tenant.key,
            body: { url: receiver.url, events: ["submission.completed", "contact.created"] }
          })
        )
        const requestId = "client-trace_42.A-b"
        const created = yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
          key: tenant.key,
          headers: { "x-request-id": requestId },
          body: { data: { name: "Grace Hopper", email: "grace@example.com" } }
        })
        const { submission } = dataOf(created, 201)
        expect(created.headers.get("x-request-id")).toBe(requestId)
        yield* eventually(
          () =>
            captured
              .parsed()
              .filter((line) => line.message === "delivery attempt" && line.requestId === requestId)
              .length === 2
        )

        const requestLines = captured
          .parsed()
          .filter((line) => line.message === "request" && line.requestId === requestId)
        expect(requestLines).toEqual([
          expect.objectContaining({
            status: 201,
            submissionId: submission.id,
            eventIds: [expect.stringMatching(/^evt_/)]
          })
        ])
        const attempts = captured
          .parsed()
          .filter((line) => line.message === "delivery attempt" && line.requestId === requestId)
        expect(attempts.map((line) => line.eventType).sort()).toEqual([
          "contact.created",
          "submission.completed"
        ])
        for (const line of attempts)
          expect(line).toMatchObject({ submissionId: submission.id, status: "succeeded" })
        // Each line names its event: the completed one is the event the request's line named.
        const byType = Object.fromEntries(attempts.map((line) => [line.eventType, line.eventId]))
        expect(byType["submission.completed"]).toBe(requestLines[0]?.eventIds[0])
        expect(new Set(receiver.received.map((r) => r.payload.id))).toEqual(new Set(Object.values(byType)))
      })
  )

  it.effect(
    "an X-Request-Id of an unsafe shape is replaced by a generated one, never echoed nor logged",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        for (const unsafe of ["has spaces", 'quote"d', "a".repeat(129), "semi;colon", "ümlaut"]) {
          const answer = yield* call(baseUrl, "GET", "/healthz", { headers: { "x-request-id": unsafe } })
          expect(answer.status).toBe(200)
          expect(answer.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/)
          expect(captured.printed()).not.toContain(unsafe)
        }
        const safe = yield* call(baseUrl, "GET", "/healthz", { headers: { "x-request-id": "a".repeat(128) } })
        expect(safe.headers.get("x-request-id")).toBe("a".repeat(128))
      })
  )
})
