/**
 * A downgrade below what a workspace already holds (docs/choices.md): its existing keys and
 * webhook endpoints keep working; new ones are refused while it is over the new cap.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BaseUrl, call } from "./harness.js"
import { ALL_SCOPES, admin, dataOf, expectError, provision, realServer } from "./support.js"

layer(realServer(), { excludeTestServices: true })("plan changes", (it) => {
  it.effect(
    "past the key and endpoint caps: existing ones keep working, new ones are 429 until under the cap",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl, { plan: "business" })
        const newKey = () =>
          admin(baseUrl, "POST", `/admin/workspaces/${tenant.workspaceId}/api-keys`, { scopes: ALL_SCOPES })
        const keys = [{ id: tenant.keyId, key: tenant.key }]
        for (let i = 0; i < 3; i++) keys.push(dataOf(yield* newKey(), 201).api_key)
        const newWebhook = (i: number) =>
          call(baseUrl, "POST", "/v1/webhooks", {
            key: tenant.key,
            body: { url: `https://8.8.8.8/hooks/${i}`, events: ["submission.completed"] }
          })
        const webhooks: Array<{ id: string }> = []
        for (let i = 0; i < 11; i++) webhooks.push(dataOf(yield* newWebhook(i)).webhook)

        dataOf(yield* admin(baseUrl, "PATCH", `/admin/workspaces/${tenant.workspaceId}`, { plan: "pro" }))

        for (const { key } of keys) dataOf(yield* call(baseUrl, "GET", "/v1/intake-bots", { key }))
        expect(expectError(yield* newKey(), 429, "plan_limit_exceeded")).toEqual({
          resource: "api_keys",
          current: 4,
          max: 3
        })
        expect(expectError(yield* newWebhook(11), 429, "plan_limit_exceeded")).toEqual({
          resource: "webhook_endpoints",
          current: 11,
          max: 10
        })
        const patched = yield* call(baseUrl, "PATCH", `/v1/webhooks/${webhooks[10]!.id}`, {
          key: keys[3]!.key,
          body: { description: "still mine" }
        })
        expect(dataOf(patched).webhook.description).toBe("still mine")

        // Back under the cap, a new one is taken again.
        for (const { id } of keys.slice(0, 2))
          dataOf(yield* admin(baseUrl, "POST", `/admin/api-keys/${id}/revoke`))
        dataOf(yield* newKey(), 201)
        for (const { id } of webhooks.slice(0, 2))
          dataOf(yield* call(baseUrl, "DELETE", `/v1/webhooks/${id}`, { key: keys[3]!.key }))
        dataOf(
          yield* call(baseUrl, "POST", "/v1/webhooks", {
            key: keys[3]!.key,
            body: { url: "https://8.8.8.8/hooks/again", events: ["submission.completed"] }
          })
        )
      })
  )
})
