import { afterAll, expect, layer } from "@effect/vitest"
import { ApiKeyFormat, Crypto } from "@intake/domain/internal"
import { NodeCryptoLive } from "@intake/node"
import { Effect } from "effect"
import { BaseUrl, call } from "./harness.js"
import { admin, dataOf, expectError, expectHeaders, provision, realServer, shift } from "./support.js"

const unknownKey = Effect.map(Effect.provide(Crypto, NodeCryptoLive), (crypto) =>
  ApiKeyFormat.generateApiKey(crypto.randomBytes)
)

// The server clock this file moves is shared with the files after it in the worker (docs/testing.md).
afterAll(() => {
  shift.millis = 0
})

layer(realServer(), { excludeTestServices: true })("authentication and workspace checks", (it) => {
  it.effect("answers 401 authentication_required for every key defect, with every header", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const last = tenant.key.at(-1) === "A" ? "B" : "A"
      const badChecksum = `${tenant.key.slice(0, -1)}${last}`
      const testKey = tenant.key.replace("svc_live_", "svc_test_")
      const revoked = yield* admin(baseUrl, "POST", `/admin/workspaces/${tenant.workspaceId}/api-keys`, {
        scopes: ["read:intake-bots"]
      })
      const revokedKey = dataOf(revoked, 201).api_key
      dataOf(yield* admin(baseUrl, "POST", `/admin/api-keys/${revokedKey.id}/revoke`))
      const headers: Array<Record<string, string>> = [
        {},
        { authorization: `Basic ${tenant.key}` },
        { authorization: tenant.key },
        { authorization: `Bearer ${testKey}` },
        { authorization: `Bearer ${badChecksum}` },
        { authorization: `Bearer ${yield* unknownKey}` },
        { authorization: `Bearer ${revokedKey.key}` }
      ]
      for (const header of headers) {
        const answer = yield* call(baseUrl, "GET", "/v1/intake-bots", { headers: header })
        expectError(answer, 401, "authentication_required")
        expectHeaders(answer)
      }
      // The valid key still works: the failures above were about the keys themselves.
      dataOf(yield* call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key }))
      const record = dataOf(yield* admin(baseUrl, "GET", `/admin/api-keys/${tenant.keyId}`)).api_key
      expect(record.last_used_at).toMatch(/^\d{4}-\d{2}-\d{2}T.*\.\d{3}Z$/)
      expect(record.revoked_at).toBeNull()
      expect(JSON.stringify(record)).not.toContain(tenant.key)
      const revokedRecord = dataOf(yield* admin(baseUrl, "GET", `/admin/api-keys/${revokedKey.id}`)).api_key
      expect(revokedRecord.revoked_at).not.toBeNull()
    })
  )

  it.effect("refuses a key from its expires_at on", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const expiresAt = new Date(Date.now() + shift.millis + 60_000).toISOString()
      const issued = dataOf(
        yield* admin(baseUrl, "POST", `/admin/workspaces/${tenant.workspaceId}/api-keys`, {
          scopes: ["read:intake-bots"],
          expires_at: expiresAt
        }),
        201
      ).api_key
      expect(issued.expires_at).toBe(expiresAt)
      dataOf(yield* call(baseUrl, "GET", "/v1/intake-bots", { key: issued.key }))
      shift.millis += 61_000
      const answer = yield* call(baseUrl, "GET", "/v1/intake-bots", { key: issued.key })
      expectError(answer, 401, "authentication_required")
      expectHeaders(answer)
    })
  )

  it.effect(
    "answers 403 feature_not_available for a Free workspace and workspace_archived once archived",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        dataOf(yield* admin(baseUrl, "PATCH", `/admin/workspaces/${tenant.workspaceId}`, { plan: "free" }))
        const free = yield* call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key })
        expect(expectError(free, 403, "feature_not_available")).toEqual({ feature: "api_access" })
        expectHeaders(free)

        const other = yield* provision(baseUrl)
        dataOf(
          yield* admin(baseUrl, "PATCH", `/admin/workspaces/${other.workspaceId}`, { status: "archived" })
        )
        const archived = yield* call(baseUrl, "GET", `/v1/intake-bots/${other.botId}`, { key: other.key })
        expectError(archived, 403, "workspace_archived")
        expectHeaders(archived)
      })
  )

  it.effect(
    "answers 403 insufficient_scopes with the required and granted scopes on each scoped endpoint",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl, { scopes: ["read:contacts"] })
        const cases: Array<[string, string, string, unknown?]> = [
          ["GET", "/v1/intake-bots", "read:intake-bots"],
          ["GET", `/v1/intake-bots/${tenant.botId}`, "read:intake-bots"],
          ["GET", `/v1/intake-bots/${tenant.botId}/submissions`, "read:submissions"],
          ["GET", `/v1/intake-bots/${tenant.botId}/submissions/sub_x`, "read:submissions"],
          ["POST", `/v1/intake-bots/${tenant.botId}/submissions`, "write:intake-bots", { data: {} }],
          ["GET", "/v1/webhooks", "manage:webhooks"],
          ["POST", "/v1/webhooks", "manage:webhooks", { url: "https://example.com", events: [] }],
          ["GET", "/v1/webhooks/wh_x", "manage:webhooks"],
          ["PATCH", "/v1/webhooks/wh_x", "manage:webhooks", {}],
          ["DELETE", "/v1/webhooks/wh_x", "manage:webhooks"]
        ]
        for (const [method, path, scope, body] of cases) {
          const answer = yield* call(baseUrl, method, path, { key: tenant.key, ...(body ? { body } : {}) })
          expect(expectError(answer, 403, "insufficient_scopes")).toEqual({
            required: [scope],
            granted: ["read:contacts"]
          })
          expectHeaders(answer)
        }
      })
  )

  it.effect("keeps the admin API behind its token, compared whole", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      for (const authorization of [undefined, "Bearer wrong", "Bearer test-admin-token-012345678"]) {
        const answer = yield* call(baseUrl, "POST", "/admin/workspaces", {
          body: { name: "x", plan: "pro" },
          ...(authorization ? { headers: { authorization } } : {})
        })
        expectError(answer, 401, "authentication_required")
        expectHeaders(answer, { rateLimit: false })
      }
    })
  )
})

layer(realServer({ admin: false }), { excludeTestServices: true })(
  "health, docs and the disabled admin API",
  (it) => {
    it.effect("serves the OpenAPI document of v1 and the docs page without a key", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const document = yield* call(baseUrl, "GET", "/openapi.json")
        expect(document.status).toBe(200)
        expect(document.headers.get("content-type")).toMatch(/^application\/json/)
        expect(Object.keys((document.body as { paths: object }).paths)).toContain(
          "/v1/intake-bots/{id}/submissions"
        )
        expectHeaders(document, { rateLimit: false })
        const docs = yield* call(baseUrl, "GET", "/docs")
        expect(docs.status).toBe(200)
        expect(docs.headers.get("content-type")).toMatch(/^text\/html/)
        expect(docs.body).toMatch(/data-url="\/openapi.json"/)
        // Everything the page loads comes from this server: it works on a closed network.
        expect(docs.body).not.toMatch(/https?:\/\//)
        const src = /<script src="([^"]+)"><\/script>/.exec(docs.body as string)?.[1]
        expect(src).toMatch(/^\/docs\/scalar\.js\?v=\d+\.\d+\.\d+$/)

        const script = yield* call(baseUrl, "GET", src!)
        expect(script.status).toBe(200)
        expect(script.headers.get("content-type")).toMatch(/^text\/javascript/)
        expect(script.headers.get("cache-control")).toMatch(/max-age=31536000/)
        expectHeaders(script, { rateLimit: false })
        // Scalar's whole browser bundle (about 4 MB), the one that defines its script-tag API.
        const code = script.body as string
        expect(code.length).toBeGreaterThan(1_000_000)
        expect(code).toContain("api-reference")
        // Served from memory after the first read: the same bytes again.
        expect((yield* call(baseUrl, "GET", "/docs/scalar.js")).body).toBe(code)
      })
    )

    it.effect("answers 404 route on /admin/* when INTAKE_ADMIN_TOKEN is not set", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const answer = yield* admin(baseUrl, "POST", "/admin/workspaces", { name: "x", plan: "pro" })
        expect(expectError(answer, 404, "resource_not_found")).toEqual({ resource: "route" })
        expectHeaders(answer, { rateLimit: false })
      })
    )

    it.effect("answers /healthz and /readyz without a key", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        for (const [path, data] of [
          ["/healthz", { status: "ok" }],
          ["/readyz", { status: "ok", database: "ok", rate_limiter: "enforcing" }]
        ] as const) {
          const answer = yield* call(baseUrl, "GET", path)
          expect(answer.status).toBe(200)
          expect(answer.body).toEqual({ success: true, data })
          expectHeaders(answer, { rateLimit: false })
        }
      })
    )
  }
)
