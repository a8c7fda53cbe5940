/**
 * The logs an operator reads: one JSON line per request and per delivery attempt, with
 * ids and outcomes, and never an API key, a webhook secret, a header or a body.
 */
import { expect, layer } from "@effect/vitest"
import { jsonLineLogger } from "@intake/node"
import { Effect, Layer, Logger } from "effect"
import { BaseUrl, call } from "./harness.js"
import { localReceiver } from "./receiver.js"
import { dataOf, provision, realServer } from "./support.js"

const lines: Array<string> = []
const capturedLogs = Logger.replace(
  Logger.defaultLogger,
  Logger.map(jsonLineLogger, (line) => {
    lines.push(line)
  })
)

// biome-ignore lint/suspicious/noExplicitAny: log lines are checked by assertions
const parsed = (): Array<any> => lines.map((line) => JSON.parse(line))

layer(realServer({ allowPrivateNetworks: true }).pipe(Layer.provide(capturedLogs)), {
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

        const logs = parsed()
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

        const everything = lines.join("\n")
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
})
