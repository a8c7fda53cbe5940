/** CORS on /v1: off by default; with INTAKE_CORS_ORIGINS, preflights answered without a key. */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { parseCorsOrigins } from "../src/cors.js"
import { BaseUrl, call } from "./harness.js"
import { provision, realServer } from "./support.js"

const DOCS = "https://docs.example.com"

const preflight = (baseUrl: string, origin: string, path = "/v1/intake-bots/bot_1/submissions") =>
  call(baseUrl, "OPTIONS", path, {
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type, idempotency-key"
    }
  })

layer(realServer({ corsOrigins: new Set([DOCS]) }), { excludeTestServices: true })(
  "CORS with INTAKE_CORS_ORIGINS set",
  (it) => {
    it.effect("answers a preflight from an allowed origin with 204, before authentication", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const answer = yield* preflight(baseUrl, DOCS)
        expect(answer.status).toBe(204)
        expect(answer.headers.get("access-control-allow-origin")).toBe(DOCS)
        expect(answer.headers.get("access-control-allow-methods")).toContain("POST")
        expect(answer.headers.get("access-control-allow-headers")?.toLowerCase()).toBe(
          "authorization, content-type, idempotency-key, x-request-id"
        )
        expect(answer.headers.get("vary")).toBe("Origin")
        // Another origin is not allowed: the browser refuses, and nothing says otherwise.
        const other = yield* preflight(baseUrl, "https://evil.example.com")
        expect(other.headers.get("access-control-allow-origin")).toBeNull()
      })
    )

    it.effect("exposes the rate-limit, request-id and idempotency headers on /v1 answers", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const created = yield* call(baseUrl, "POST", `/v1/intake-bots/${tenant.botId}/submissions`, {
          key: tenant.key,
          headers: { origin: DOCS, "idempotency-key": "cors-1" },
          body: { data: { name: "Ada", email: "ada@example.com" } }
        })
        expect(created.status).toBe(201)
        expect(created.headers.get("access-control-allow-origin")).toBe(DOCS)
        const exposed = created.headers.get("access-control-expose-headers")?.split(", ") ?? []
        expect(exposed).toEqual(
          expect.arrayContaining([
            "X-Request-Id",
            "X-RateLimit-Limit",
            "X-RateLimit-Remaining",
            "X-RateLimit-Reset",
            "Retry-After",
            "Idempotent-Replayed"
          ])
        )
        // An error answer (no key) is readable too: the browser shows the caller the 401.
        const refused = yield* call(baseUrl, "GET", "/v1/intake-bots", { headers: { origin: DOCS } })
        expect(refused.status).toBe(401)
        expect(refused.headers.get("access-control-allow-origin")).toBe(DOCS)
      })
    )
  }
)

layer(realServer(), { excludeTestServices: true })("CORS by default", (it) => {
  it.effect("is off: a preflight is a /v1 request like any other (401 without a key), no CORS header", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const answer = yield* preflight(baseUrl, DOCS)
      expect(answer.status).toBe(401)
      expect(answer.headers.get("access-control-allow-origin")).toBeNull()
    })
  )
})

describe("INTAKE_CORS_ORIGINS", () => {
  it("takes a comma list of origins or `*`, and refuses what is not an origin", () => {
    expect(parseCorsOrigins("")).toEqual({ origins: undefined })
    expect(parseCorsOrigins("*")).toEqual({ origins: "*" })
    expect(parseCorsOrigins(`${DOCS}, http://localhost:5173`)).toEqual({
      origins: new Set([DOCS, "http://localhost:5173"])
    })
    expect(parseCorsOrigins("docs.example.com")).toHaveProperty("error")
    expect(parseCorsOrigins(`${DOCS}/`)).toHaveProperty("error")
  })
})
