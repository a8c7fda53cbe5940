import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BaseUrl, call } from "./harness.js"
import { dataOf, expectError, expectHeaders, provision, realServer } from "./support.js"

layer(realServer(), { excludeTestServices: true })("webhook endpoints", (it) => {
  it.effect("create (200, secret once), read, list, update, delete", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const created = yield* call(baseUrl, "POST", "/v1/webhooks", {
        key: tenant.key,
        body: {
          url: "https://8.8.8.8/hooks",
          events: ["submission.completed"],
          intake_bot_ids: [tenant.botId]
        }
      })
      expectHeaders(created)
      const { webhook } = dataOf(created, 200)
      expect(webhook.secret).toMatch(/^whsec_/)
      expect(webhook).toMatchObject({
        url: "https://8.8.8.8/hooks",
        events: ["submission.completed"],
        status: "active",
        description: "",
        intake_bot_ids: [tenant.botId],
        last_delivery_at: null,
        last_delivery_ok: null,
        consecutive_fails: 0
      })
      const read = dataOf(
        yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}`, { key: tenant.key })
      ).webhook
      expect(read).not.toHaveProperty("secret")
      expect(read.id).toBe(webhook.id)
      const list = dataOf(yield* call(baseUrl, "GET", "/v1/webhooks", { key: tenant.key }))
      expect(list.webhooks.map((w: { id: string }) => w.id)).toEqual([webhook.id])
      expect(list.webhooks[0]).not.toHaveProperty("secret")

      const paused = dataOf(
        yield* call(baseUrl, "PATCH", `/v1/webhooks/${webhook.id}`, {
          key: tenant.key,
          body: { status: "paused", description: "CRM" }
        })
      ).webhook
      expect(paused).toMatchObject({ status: "paused", description: "CRM" })
      expect(paused).not.toHaveProperty("secret")

      const urlChange = yield* call(baseUrl, "PATCH", `/v1/webhooks/${webhook.id}`, {
        key: tenant.key,
        body: { url: "https://8.8.4.4/", status: "active" }
      })
      expect(expectError(urlChange, 400, "validation_failed")?.unknown_keys).toEqual(["url"])
      const unchanged = dataOf(yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}`, { key: tenant.key }))
      expect(unchanged.webhook.status).toBe("paused")

      const deleted = yield* call(baseUrl, "DELETE", `/v1/webhooks/${webhook.id}`, { key: tenant.key })
      expect(dataOf(deleted)).toEqual({ id: webhook.id, deleted: true })
      expectHeaders(deleted)
      const gone = yield* call(baseUrl, "GET", `/v1/webhooks/${webhook.id}`, { key: tenant.key })
      expect(expectError(gone, 404, "resource_not_found")).toEqual({ resource: "webhook" })
    })
  )

  it.effect("an idempotent replay of POST /webhooks returns the original answer with its secret", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const request = {
        key: tenant.key,
        body: { url: "https://8.8.8.8/replay", events: ["contact.created"] },
        headers: { "idempotency-key": "wh-1" }
      }
      const first = yield* call(baseUrl, "POST", "/v1/webhooks", request)
      const again = yield* call(baseUrl, "POST", "/v1/webhooks", request)
      expect(again.status).toBe(200)
      expect(again.body).toEqual(first.body)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      const list = dataOf(yield* call(baseUrl, "GET", "/v1/webhooks", { key: tenant.key }))
      expect(list.webhooks).toHaveLength(1)
    })
  )

  it.effect("404 for another workspace's webhook on every path with its id", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const mine = yield* provision(baseUrl)
      const theirs = yield* provision(baseUrl)
      const id = dataOf(
        yield* call(baseUrl, "POST", "/v1/webhooks", {
          key: theirs.key,
          body: { url: "https://8.8.8.8/x", events: ["submission.completed"] }
        })
      ).webhook.id
      for (const [method, body] of [["GET"], ["PATCH", { status: "paused" }], ["DELETE"]] as const) {
        const answer = yield* call(baseUrl, method, `/v1/webhooks/${id}`, {
          key: mine.key,
          ...(body ? { body } : {})
        })
        expect(expectError(answer, 404, "resource_not_found")).toEqual({ resource: "webhook" })
        expectHeaders(answer)
      }
      // Still there for its owner.
      dataOf(yield* call(baseUrl, "GET", `/v1/webhooks/${id}`, { key: theirs.key }))
    })
  )

  it.effect("400 for bad fields, 422 for bots of another workspace and for a private address", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const mine = yield* provision(baseUrl)
      const theirs = yield* provision(baseUrl)
      const bad = yield* call(baseUrl, "POST", "/v1/webhooks", {
        key: mine.key,
        body: { url: "https://8.8.8.8/", events: ["submission.exploded"] }
      })
      expect(expectError(bad, 400, "validation_failed")?.issues[0].path).toBe("events.0")
      const foreign = yield* call(baseUrl, "POST", "/v1/webhooks", {
        key: mine.key,
        body: { url: "https://8.8.8.8/", events: ["submission.completed"], intake_bot_ids: [theirs.botId] }
      })
      expectError(foreign, 422, "validation_failed")
      expectHeaders(foreign)
      const privateUrl = yield* call(baseUrl, "POST", "/v1/webhooks", {
        key: mine.key,
        body: { url: "https://127.0.0.1/hook", events: ["submission.completed"] }
      })
      expectError(privateUrl, 422, "validation_failed")
      expectHeaders(privateUrl)
    })
  )
})

layer(realServer({ allowPrivateNetworks: true }), { excludeTestServices: true })(
  "webhooks with WEBHOOK_ALLOW_PRIVATE_NETWORKS",
  (it) => {
    it.effect("accepts an http loopback receiver", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const answer = yield* call(baseUrl, "POST", "/v1/webhooks", {
          key: tenant.key,
          body: { url: "http://127.0.0.1:9/hook", events: ["submission.completed"] }
        })
        expect(dataOf(answer).webhook.url).toBe("http://127.0.0.1:9/hook")
      })
    )

    it.effect(
      "rate_limit is set, changed and cleared, 400 out of 1..1000; the circuit shows on the endpoint",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const tenant = yield* provision(baseUrl)
          const created = dataOf(
            yield* call(baseUrl, "POST", "/v1/webhooks", {
              key: tenant.key,
              body: { url: "http://127.0.0.1:9/hook", events: ["submission.completed"], rate_limit: 5 }
            })
          ).webhook
          expect(created).toMatchObject({ rate_limit: 5, circuit: "closed", circuit_retry_at: null })
          const path = `/v1/webhooks/${created.id}`
          const patch = (body: unknown) => call(baseUrl, "PATCH", path, { key: tenant.key, body })
          expect(dataOf(yield* patch({ rate_limit: 1000 })).webhook.rate_limit).toBe(1000)
          for (const bad of [0, 1001, 2.5, -3]) {
            const refused = yield* patch({ rate_limit: bad })
            expect(expectError(refused, 400, "validation_failed")?.issues).toEqual([
              { path: "rate_limit", message: expect.stringContaining("1 to 1000") }
            ])
          }
          expectError(yield* patch({ rate_limit: "5" }), 400, "validation_failed")
          const badCreate = yield* call(baseUrl, "POST", "/v1/webhooks", {
            key: tenant.key,
            body: { url: "http://127.0.0.1:9/hook", events: ["submission.completed"], rate_limit: 0 }
          })
          expectError(badCreate, 400, "validation_failed")
          expect(dataOf(yield* call(baseUrl, "GET", path, { key: tenant.key })).webhook.rate_limit).toBe(1000)
          expect(dataOf(yield* patch({ rate_limit: null })).webhook.rate_limit).toBeNull()

          // Nothing listens on port 9: five failed test sends in a row open the circuit.
          for (let i = 0; i < 5; i++)
            dataOf(yield* call(baseUrl, "POST", `${path}/test`, { key: tenant.key }))
          const failing = dataOf(yield* call(baseUrl, "GET", path, { key: tenant.key })).webhook
          expect(failing).toMatchObject({ consecutive_fails: 5, circuit: "open" })
          expect(Date.parse(failing.circuit_retry_at)).toBeGreaterThan(Date.now() + 20_000)
          // Re-activating closes it.
          const reset = dataOf(yield* patch({ status: "active" })).webhook
          expect(reset).toMatchObject({ consecutive_fails: 0, circuit: "closed", circuit_retry_at: null })
        })
    )
  }
)

layer(realServer(), { excludeTestServices: true })("rate limits", (it) => {
  it.effect("429 rate_limit_exceeded with Retry-After equal to details.retry_after", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl, { rateLimitPerMinute: 3 })
      const remaining: Array<string | null> = []
      for (let i = 0; i < 3; i++) {
        const answer = yield* call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key })
        dataOf(answer)
        expectHeaders(answer)
        expect(answer.headers.get("x-ratelimit-limit")).toBe("3")
        remaining.push(answer.headers.get("x-ratelimit-remaining"))
      }
      expect(remaining).toEqual(["2", "1", "0"])
      const refused = yield* call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key })
      const details = expectError(refused, 429, "rate_limit_exceeded")
      expect(details?.retry_after).toBeGreaterThanOrEqual(1)
      expect(refused.headers.get("retry-after")).toBe(String(details?.retry_after))
      expect(refused.headers.get("x-ratelimit-remaining")).toBe("0")
      expectHeaders(refused)
      // Even an unknown route is refused while the key is over its limit (rate limit comes first).
      const unknown = yield* call(baseUrl, "GET", "/v1/nowhere", { key: tenant.key })
      expectError(unknown, 429, "rate_limit_exceeded")
    })
  )
})
