/** The wording of validation failures an integrator reads first: the top-level message. */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BaseUrl, call } from "./harness.js"
import { expectError, provision, realServer } from "./support.js"

layer(realServer(), { excludeTestServices: true })("validation messages", (it) => {
  it.effect("an enum failure names every allowed value, as the other messages do", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const created = yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
        key: tenant.key,
        body: { data: { name: "Ada", email: "ada@example.com" }, status: "DONE" }
      })
      const details = expectError(created, 400, "validation_failed")
      expect(details?.issues).toEqual([
        { path: "status", message: 'must be one of "IN_PROGRESS", "COMPLETED"' }
      ])
      expect(created.body).toMatchObject({
        error: { message: 'status: must be one of "IN_PROGRESS", "COMPLETED"' }
      })
      const webhook = yield* call(baseUrl, "PATCH", "/v1/webhooks/wh_nope", {
        key: tenant.key,
        body: { status: "stopped" }
      })
      expect(expectError(webhook, 400, "validation_failed")?.issues).toEqual([
        { path: "status", message: 'must be one of "active", "paused"' }
      ])
    })
  )

  it.effect("field values sent without `data` are told to go under `data`", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const answer = yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
        key: tenant.key,
        body: { email: "ada@example.com" }
      })
      const details = expectError(answer, 400, "validation_failed")
      expect(details?.unknown_keys).toEqual(["email"])
      expect(answer.body).toMatchObject({
        error: {
          message:
            'email: is not a field of this request; field values go under "data", as in {"data":{"email":...}}'
        }
      })
      // With `data` present, an extra top-level key is only unknown.
      const extra = yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
        key: tenant.key,
        body: { data: { name: "Ada", email: "ada@example.com" }, colour: "red" }
      })
      expect(expectError(extra, 400, "validation_failed")?.issues).toEqual([
        { path: "colour", message: "is not a field of this request" }
      ])
    })
  )
})
