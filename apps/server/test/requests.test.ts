import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BaseUrl, call } from "./harness.js"
import { rawPost, rawRequest, submissionBodyOfSize } from "./raw-http.js"
import { dataOf, expectError, expectHeaders, provision, realServer } from "./support.js"

const LIMIT = 1_048_576

layer(realServer(), { excludeTestServices: true })("routes, parameters and bodies", (it) => {
  it.effect(
    "unknown routes: 401 without a key, 404 route with one, also for a known path's other method",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const anonymous = yield* call(baseUrl, "GET", "/v1/nothing-here")
        expectError(anonymous, 401, "authentication_required")
        expectHeaders(anonymous)
        for (const [method, path] of [
          ["GET", "/v1/nothing-here"],
          ["GET", "/v1"],
          ["PUT", "/v1/intake-bots"],
          ["DELETE", `/v1/intake-bots/${tenant.botId}`],
          ["GET", "/v1/webhooks/wh_1/test"],
          ["POST", "/v1/webhooks/wh_1/deliveries"],
          ["GET", "/v1/webhooks/wh_1/deliveries/dlv_1/redeliver"],
          ["GET", "/v1/intake-bots/%E0%A4%A"]
        ] as const) {
          const answer = yield* call(baseUrl, method, path, { key: tenant.key })
          expect(expectError(answer, 404, "resource_not_found")).toEqual({ resource: "route" })
          expectHeaders(answer)
        }
        const outside = yield* call(baseUrl, "GET", "/favicon.ico")
        expect(expectError(outside, 404, "resource_not_found")).toEqual({ resource: "route" })
        expectHeaders(outside, { rateLimit: false })
      })
  )

  it.effect("dot segments are not resolved: a path under /v1 never reaches /admin", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      for (const path of [
        "/v1/%2e%2e/admin/workspaces",
        "/v1/../admin/workspaces",
        "/v1/%2E%2E/%2E%2E/admin/workspaces"
      ]) {
        const anonymous = yield* rawRequest(baseUrl, "GET", path, {
          authorization: "Bearer test-admin-token-0123456789"
        })
        expect(anonymous.status).toBe(401)
        const keyed = yield* rawRequest(baseUrl, "GET", path, { authorization: `Bearer ${tenant.key}` })
        expect(keyed.status).toBe(404)
        expect(keyed.body).toMatchObject({
          error: { code: "resource_not_found", details: { resource: "route" } }
        })
        expect(keyed.headers["x-request-id"]).toMatch(/^req_/)
      }
    })
  )

  it.effect("checks limit, cursor and the date bounds; ignores unknown parameters", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const submissions = `/v1/intake-bots/${tenant.botId}/submissions`
      for (const query of ["limit=0", "limit=101", "limit=abc", "limit=1.5", "limit=-1", "limit="]) {
        for (const path of ["/v1/intake-bots", submissions, "/v1/webhooks"]) {
          const answer = yield* call(baseUrl, "GET", `${path}?${query}`, { key: tenant.key })
          const details = expectError(answer, 400, "validation_failed")
          expect(details?.issues).toEqual([{ path: "limit", message: expect.any(String) }])
          expectHeaders(answer)
        }
      }
      for (const query of [
        "created_after=yesterday",
        "created_before=2026-13-01T00:00:00Z",
        "created_after=2026-11-21"
      ]) {
        const answer = yield* call(baseUrl, "GET", `${submissions}?${query}`, { key: tenant.key })
        const details = expectError(answer, 400, "validation_failed")
        expect(details?.issues[0].path).toBe(query.split("=")[0])
      }
      for (const path of ["/v1/intake-bots", submissions, "/v1/webhooks"]) {
        const answer = yield* call(baseUrl, "GET", `${path}?cursor=not-a-cursor`, { key: tenant.key })
        expect(expectError(answer, 400, "validation_failed")?.issues[0].path).toBe("cursor")
      }
      const fine = yield* call(baseUrl, "GET", "/v1/intake-bots?limit=100&color=blue", { key: tenant.key })
      expect(dataOf(fine).intake_bots).toHaveLength(1)
      expectHeaders(fine)
    })
  )

  it.effect("a cursor of another list is refused", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const other = yield* provision(baseUrl)
      for (let i = 0; i < 3; i++) {
        dataOf(
          yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
            key: tenant.key,
            body: { data: { name: "A", email: `a${i}@example.com` } }
          }),
          201
        )
      }
      const page = dataOf(
        yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}/submissions?limit=1`, {
          key: tenant.key
        })
      )
      const cursor = page.pagination.next_cursor as string
      const elsewhere = yield* call(
        baseUrl,
        "GET",
        `/v1/intake-bots/${other.botId}/submissions?cursor=${encodeURIComponent(cursor)}`,
        { key: other.key }
      )
      expectError(elsewhere, 400, "validation_failed")
      const bots = yield* call(baseUrl, "GET", `/v1/intake-bots?cursor=${encodeURIComponent(cursor)}`, {
        key: tenant.key
      })
      expectError(bots, 400, "validation_failed")
    })
  )

  it.effect("bodies: malformed JSON, another content type, unknown keys, wrong types", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const path = `/v1/intake-bots/${tenant.botId}/submissions`
      const malformed = yield* call(baseUrl, "POST", path, { key: tenant.key, body: '{"data": {' })
      expect(expectError(malformed, 400, "validation_failed")?.issues).toEqual([
        { path: "", message: expect.any(String) }
      ])
      expectHeaders(malformed)
      for (const contentType of ["text/plain", "application/x-www-form-urlencoded"]) {
        const answer = yield* call(baseUrl, "POST", path, {
          key: tenant.key,
          body: '{"data":{}}',
          headers: { "content-type": contentType }
        })
        expectError(answer, 400, "validation_failed")
        expectHeaders(answer)
      }
      const patchType = yield* call(baseUrl, "PATCH", "/v1/webhooks/wh_1", {
        key: tenant.key,
        body: "{}",
        headers: { "content-type": "text/plain" }
      })
      expectError(patchType, 400, "validation_failed")

      const unknown = yield* call(baseUrl, "POST", path, {
        key: tenant.key,
        body: { data: { name: "A", email: "a@example.com" }, colour: "red", extra: 1 }
      })
      expect(expectError(unknown, 400, "validation_failed")?.unknown_keys).toEqual(["colour", "extra"])
      expectHeaders(unknown)

      const wrongTypes = yield* call(baseUrl, "POST", path, {
        key: tenant.key,
        body: { data: "nope", status: "DONE", is_test: "yes" }
      })
      const issues = expectError(wrongTypes, 400, "validation_failed")?.issues as Array<{ path: string }>
      expect(issues.map((issue) => issue.path).sort()).toEqual(["data", "is_test", "status"])
    })
  )

  it.effect("validates each field type over HTTP with dotted paths", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl, {
        botSchema: [
          { name: "t", label: "T", type: "text" },
          { name: "lt", label: "LT", type: "long_text" },
          { name: "e", label: "E", type: "email" },
          { name: "p", label: "P", type: "phone" },
          { name: "u", label: "U", type: "url" },
          { name: "n", label: "N", type: "number" },
          { name: "b", label: "B", type: "boolean" },
          { name: "d", label: "D", type: "date" },
          { name: "s", label: "S", type: "select", options: ["a", "b"] },
          { name: "m", label: "M", type: "multi_select", options: ["a", "b"] },
          { name: "r", label: "R", type: "text", required: true }
        ]
      })
      const path = `/v1/intake-bots/${tenant.botId}/submissions`
      const invalidValues: Record<string, unknown> = {
        t: 5,
        lt: false,
        e: "not-an-email",
        p: "call me",
        u: "not a url",
        n: "12",
        b: "true",
        d: "2026-02-30",
        s: "c",
        m: ["a", "c"]
      }
      for (const [field, value] of Object.entries(invalidValues)) {
        const answer = yield* call(baseUrl, "POST", path, {
          key: tenant.key,
          body: { data: { r: "present", [field]: value } }
        })
        const issues = expectError(answer, 400, "validation_failed")?.issues as Array<{ path: string }>
        expect(issues.map((issue) => issue.path)[0], field).toMatch(new RegExp(`^data\\.${field}`))
        expectHeaders(answer)
      }
      const missing = yield* call(baseUrl, "POST", path, { key: tenant.key, body: { data: {} } })
      expect(expectError(missing, 400, "validation_failed")?.issues).toContainEqual({
        path: "data.r",
        message: expect.any(String)
      })
      const unknownField = yield* call(baseUrl, "POST", path, {
        key: tenant.key,
        body: { data: { r: "x", nope: 1 } }
      })
      expectError(unknownField, 400, "validation_failed")
      const valid = yield* call(baseUrl, "POST", path, {
        key: tenant.key,
        body: {
          data: {
            t: "x",
            lt: "long",
            e: "a@example.com",
            p: "+44 20 7946 0958",
            u: "https://example.com",
            n: 12,
            b: true,
            d: "2026-02-28",
            s: "a",
            m: ["a", "b"],
            r: "present"
          }
        }
      })
      dataOf(valid, 201)
    })
  )

  for (const chunked of [false, true]) {
    it.effect(
      `${chunked ? "chunked" : "declared"} bodies: 1,048,576 bytes pass, one byte more is a 400 envelope`,
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const tenant = yield* provision(baseUrl, {
            botSchema: [{ name: "message", label: "Message", type: "long_text" }]
          })
          const path = `/v1/intake-bots/${tenant.botId}/submissions`
          const fits = yield* rawPost(baseUrl, path, submissionBodyOfSize(LIMIT), {
            key: tenant.key,
            chunked
          })
          // Accepted by the size check: created, or judged on its values (never on its size).
          const fitIssues = (fits.body as { error?: { details?: { issues?: Array<{ path: string }> } } })
            .error?.details?.issues
          expect(fits.status === 201 || fitIssues?.every((issue) => issue.path !== "")).toBe(true)
          for (const size of [LIMIT + 1, 3 * LIMIT]) {
            const over = yield* rawPost(baseUrl, path, submissionBodyOfSize(size), {
              key: tenant.key,
              chunked
            })
            expect(over.status).toBe(400)
            expect(over.body).toMatchObject({
              success: false,
              error: { code: "validation_failed", details: { issues: [{ path: "" }] } }
            })
            expect(over.headers["x-request-id"]).toMatch(/^req_/)
            expect(over.headers["x-ratelimit-limit"]).toMatch(/^\d+$/)
          }
        })
    )
  }
})
