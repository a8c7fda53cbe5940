/**
 * Hostile input answers a clear 4xx in the envelope, never a 500, on every store (this file
 * also runs on PostgreSQL and PGlite, which refuse NUL in text).
 */
import { gzipSync } from "node:zlib"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BaseUrl, call } from "./harness.js"
import { admin, dataOf, expectError, expectHeaders, provision, realServer, sendBytes } from "./support.js"

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`

layer(realServer(), { excludeTestServices: true })("hostile input", (it) => {
  it.effect("a NUL in a path id is not found; in any text of a body it is 400 naming the path", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      for (const path of [
        "/v1/intake-bots/%00",
        `/v1/intake-bots/${tenant.botId}%00`,
        `/v1/intake-bots/${tenant.botId}/submissions/sub_%00`,
        "/v1/webhooks/wh_%00",
        "/v1/webhooks/wh_%00/deliveries"
      ]) {
        const answer = yield* call(baseUrl, "GET", path, { key: tenant.key })
        expectError(answer, 404, "resource_not_found")
        expectHeaders(answer)
      }
      expectError(yield* admin(baseUrl, "GET", "/admin/api-keys/key_%00"), 404, "resource_not_found")

      const bad = [
        [
          `/v1/intake-bots/${tenant.botId}/submissions`,
          { data: { name: "Ada\u0000", email: "ada@example.com" } },
          "data.name"
        ],
        [
          "/v1/webhooks",
          { url: "https://8.8.8.8/h", events: ["contact.created"], description: "a\u0000" },
          "description"
        ],
        [
          "/v1/webhooks",
          { url: "https://8.8.8.8/h", events: ["contact.created"], intake_bot_ids: ["bot_\u0000"] },
          "intake_bot_ids.0"
        ]
      ] as const
      for (const [path, body, issuePath] of bad) {
        const answer = yield* call(baseUrl, "POST", path, { key: tenant.key, body })
        const details = expectError(answer, 400, "validation_failed")
        expect(details?.issues).toEqual([{ path: issuePath, message: expect.stringMatching(/NUL/) }])
      }
      const workspace = yield* admin(baseUrl, "POST", "/admin/workspaces", {
        name: "Ac\u0000me",
        plan: "pro"
      })
      expect(expectError(workspace, 400, "validation_failed")?.issues[0].path).toBe("name")
      const bot = yield* admin(baseUrl, "POST", `/admin/workspaces/${tenant.workspaceId}/intake-bots`, {
        name: "Form",
        schema: [{ name: "a", label: "A\u0000", type: "text" }]
      })
      expect(expectError(bot, 400, "validation_failed")?.issues[0].path).toBe("schema.0.label")
    })
  )

  it.effect("a body nested deeper than 64 levels is 400, with or without an Idempotency-Key", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const path = `/v1/intake-bots/${tenant.botId}/submissions`
      for (const headers of [{}, { "idempotency-key": "deep-1" }]) {
        const deep = yield* call(baseUrl, "POST", path, {
          key: tenant.key,
          headers,
          body: `{"data":{"name":${nested(10_000)}}}`
        })
        const details = expectError(deep, 400, "validation_failed")
        expect(details?.issues).toEqual([{ path: "", message: "the body nests deeper than 64 levels" }])
        expectHeaders(deep)
      }
      // 64 levels in all are still read: the answer names the field, not the depth.
      const shallow = yield* call(baseUrl, "POST", path, {
        key: tenant.key,
        body: `{"data":{"name":${nested(62)}}}`
      })
      expect(expectError(shallow, 400, "validation_failed")?.issues[0].path).toBe("data.name")
    })
  )

  it.effect("96,000 unknown keys answer the first 100 and how many there were, in a small answer", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const keys = Array.from({ length: 96_000 }, (_, i) => `"k${i}":1`).join(",")
      for (const [text, firstPath] of [
        [`{"data":{"name":"Ada","email":"ada@example.com",${keys}}}`, "data.k0"],
        [`{"data":{},${keys}}`, "k0"]
      ] as const) {
        expect(text.length).toBeLessThan(1_048_576)
        const answer = yield* sendBytes(
          baseUrl,
          `/v1/intake-bots/${tenant.botId}/submissions`,
          Buffer.from(text),
          {
            authorization: `Bearer ${tenant.key}`
          }
        )
        const details = expectError(answer, 400, "validation_failed")
        expect(details?.issues).toHaveLength(100)
        expect(details?.issues[0].path).toBe(firstPath)
        expect(details?.issue_count).toBe(96_000)
        expect(details?.unknown_keys).toHaveLength(100)
        expect(details?.unknown_key_count).toBe(96_000)
        expect(answer.size).toBeLessThan(20_000)
      }
    })
  )

  it.effect("date-times must name a real moment from 1970 to 9999", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const submissions = `/v1/intake-bots/${tenant.botId}/submissions`
      for (const query of [
        "created_after=0000-01-01T00:00:00.000Z",
        "created_after=1969-12-31T23:59:59.999Z",
        "created_before=2026-02-30T00:00:00.000Z",
        "created_before=2026-11-21T24:00:00.000Z",
        "created_after=2026-11-21T10:60:00Z",
        "created_after=2026-11-21T10:00:00+24:00"
      ]) {
        const answer = yield* call(baseUrl, "GET", `${submissions}?${query}`, { key: tenant.key })
        const details = expectError(answer, 400, "validation_failed")
        expect(details?.issues).toEqual([{ path: query.split("=")[0], message: expect.any(String) }])
      }
      for (const query of [
        "created_after=1970-01-01T00:00:00.000Z",
        "created_before=2028-02-29T23:59:59.999Z",
        "created_before=9999-12-31T23:59:59.999Z"
      ])
        dataOf(yield* call(baseUrl, "GET", `${submissions}?${query}`, { key: tenant.key }))
      const key = yield* admin(baseUrl, "POST", `/admin/workspaces/${tenant.workspaceId}/api-keys`, {
        scopes: ["read:intake-bots"],
        expires_at: "2027-02-30T00:00:00.000Z"
      })
      expect(expectError(key, 400, "validation_failed")?.issues[0].path).toBe("expires_at")
    })
  )

  it.effect(
    "__proto__ keys, lone surrogates and invalid UTF-8 are 400; gzip is read, other encodings are 400",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const path = `/v1/intake-bots/${tenant.botId}/submissions`
        const auth = { authorization: `Bearer ${tenant.key}` }
        const post = (text: string | Uint8Array, headers: Record<string, string> = {}) =>
          sendBytes(baseUrl, path, typeof text === "string" ? Buffer.from(text) : text, {
            ...auth,
            ...headers
          })

        const proto = yield* post('{"data":{"name":"Ada","email":"ada@example.com","__proto__":{"x":1}}}')
        const protoDetails = expectError(proto, 400, "validation_failed")
        expect(protoDetails?.issues).toEqual([{ path: "data.__proto__", message: expect.any(String) }])
        expect(protoDetails?.unknown_keys).toEqual(["__proto__"])

        const surrogate = yield* post('{"data":{"name":"Ada \\ud800","email":"ada@example.com"}}')
        expect(expectError(surrogate, 400, "validation_failed")?.issues).toEqual([
          { path: "data.name", message: expect.stringMatching(/surrogate/) }
        ])
        const surrogateKey = yield* post('{"data":{"name":"Ada","email":"ada@example.com","\\udc00":1}}')
        expectError(surrogateKey, 400, "validation_failed")

        const latin1 = Buffer.concat([
          Buffer.from('{"data":{"name":"Ren'),
          Buffer.from([0xe9]),
          Buffer.from('","email":"rene@example.com"}}')
        ])
        expect(expectError(yield* post(latin1), 400, "validation_failed")?.issues).toEqual([
          { path: "", message: "the body is not valid UTF-8" }
        ])

        const body = { data: { name: "Zoë", email: "zoe@example.com" } }
        const gzipped = yield* post(gzipSync(Buffer.from(JSON.stringify(body))), {
          "content-encoding": "gzip"
        })
        const created = dataOf(gzipped, 201).submission
        const read = dataOf(
          yield* call(baseUrl, "GET", `${path}/${created.id}`, { key: tenant.key })
        ).submission
        expect(read.data).toEqual(body.data)

        // 20 KB of gzip that would unpack to 20 MB: refused at the 1 MB limit of the decoded body.
        const bomb = gzipSync(
          Buffer.concat([
            Buffer.from('{"data":{"name":"'),
            Buffer.alloc(20_000_000, 0x61),
            Buffer.from('"}}')
          ])
        )
        expect(bomb.length).toBeLessThan(50_000)
        expect(
          expectError(yield* post(bomb, { "content-encoding": "gzip" }), 400, "validation_failed")?.issues
        ).toEqual([{ path: "", message: "the decoded body is larger than 1048576 bytes" }])
        expectError(yield* post("not gzip", { "content-encoding": "gzip" }), 400, "validation_failed")
        const brotli = yield* post(JSON.stringify(body), { "content-encoding": "br" })
        expect(expectError(brotli, 400, "validation_failed")?.issues[0].message).toMatch(
          /Content-Encoding br/
        )
      })
  )

  it.effect("Idempotency-Key applies to POST only: ignored on GET, PATCH and DELETE", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const tenant = yield* provision(baseUrl)
      const path = `/v1/intake-bots/${tenant.botId}/submissions`
      const headers = { "idempotency-key": "same-key" }
      const list = () => call(baseUrl, "GET", path, { key: tenant.key, headers })
      expect(dataOf(yield* list()).submissions).toEqual([])
      dataOf(
        yield* call(baseUrl, "POST", path, {
          key: tenant.key,
          body: { data: { name: "Ada", email: "ada@example.com" } }
        }),
        201
      )
      const again = yield* list()
      expect(dataOf(again).submissions).toHaveLength(1)
      expect(again.headers.get("idempotent-replayed")).toBeNull()

      const webhook = dataOf(
        yield* call(baseUrl, "POST", "/v1/webhooks", {
          key: tenant.key,
          body: { url: "https://8.8.8.8/hooks", events: ["contact.created"] }
        })
      ).webhook
      for (const description of ["first", "second"]) {
        const patched = yield* call(baseUrl, "PATCH", `/v1/webhooks/${webhook.id}`, {
          key: tenant.key,
          headers,
          body: { description }
        })
        expect(dataOf(patched).webhook.description).toBe(description)
      }
      // The key was never stored by those: a POST with it is fresh.
      const fresh = yield* call(baseUrl, "POST", path, {
        key: tenant.key,
        headers,
        body: { data: { name: "Bea", email: "bea@example.com" } }
      })
      dataOf(fresh, 201)
      expect(fresh.headers.get("idempotent-replayed")).toBeNull()
      const deleted = yield* call(baseUrl, "DELETE", `/v1/webhooks/${webhook.id}`, {
        key: tenant.key,
        headers
      })
      dataOf(deleted)
      expectError(
        yield* call(baseUrl, "DELETE", `/v1/webhooks/${webhook.id}`, { key: tenant.key, headers }),
        404,
        "resource_not_found"
      )
    })
  )
})
