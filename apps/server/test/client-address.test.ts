/**
 * Per-address limits over HTTP: failed keys on /v1 and failed operator tokens on /admin,
 * with the client address taken from X-Forwarded-For only behind a trusted proxy.
 */
import { expect, layer } from "@effect/vitest"
import { OPERATOR_AUTH_FAILURES_PER_MINUTE } from "@intake/domain"
import { Effect } from "effect"
import { embeddedRuntime } from "../src/runtime.js"
import { ADMIN_TOKEN, BaseUrl, call, testServer } from "./harness.js"
import { expectError, expectHeaders } from "./support.js"

const services = embeddedRuntime({ webhookAllowPrivateNetworks: false, dispatcher: false })

const failedKey = (baseUrl: string, forwardedFor: string) =>
  call(baseUrl, "GET", "/v1/intake-bots", {
    headers: { authorization: "Bearer nope", "x-forwarded-for": forwardedFor }
  })

const operator = (baseUrl: string, token: string, forwardedFor?: string) =>
  call(baseUrl, "POST", "/admin/workspaces", {
    key: token,
    body: { name: "Acme", plan: "pro" },
    ...(forwardedFor === undefined ? {} : { headers: { "x-forwarded-for": forwardedFor } })
  })

layer(testServer(services, { trustedProxies: "127.0.0.0/8, ::1" }), { excludeTestServices: true })(
  "behind a trusted proxy (INTAKE_TRUSTED_PROXIES)",
  (it) => {
    it.effect("each client behind the proxy has its own per-IP window for failed keys", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        for (let i = 0; i < 100; i++)
          expectError(yield* failedKey(baseUrl, "198.51.100.1"), 401, "authentication_required")
        const refused = yield* failedKey(baseUrl, "198.51.100.1")
        expectError(refused, 429, "rate_limit_exceeded")
        expectHeaders(refused)
        // Another client of the same proxy is not affected.
        expectError(yield* failedKey(baseUrl, "198.51.100.2"), 401, "authentication_required")
        // What the client writes itself, left of what the proxy appended, is not believed.
        expectError(yield* failedKey(baseUrl, "198.51.100.2, 198.51.100.1"), 429, "rate_limit_exceeded")
        expectError(yield* failedKey(baseUrl, "198.51.100.1, 198.51.100.3"), 401, "authentication_required")
      })
    )

    it.effect(
      "failed operator tokens are limited per client: past them 429 with Retry-After, the right token included",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          for (let i = 0; i < OPERATOR_AUTH_FAILURES_PER_MINUTE; i++) {
            const answer = yield* operator(baseUrl, `wrong-${i}`, "203.0.113.50")
            expectError(answer, 401, "authentication_required")
          }
          for (const token of ["wrong-again", ADMIN_TOKEN]) {
            const answer = yield* operator(baseUrl, token, "203.0.113.50")
            expect(expectError(answer, 429, "rate_limit_exceeded")?.retry_after).toBeGreaterThanOrEqual(59)
            expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(59)
            expectHeaders(answer, { rateLimit: false })
          }
          // The operator, from another address, is not locked out.
          expect((yield* operator(baseUrl, ADMIN_TOKEN, "203.0.113.51")).status).toBe(201)
        })
    )
  }
)

layer(testServer(services), { excludeTestServices: true })("without trusted proxies", (it) => {
  it.effect("X-Forwarded-For is ignored: the socket address carries every failed operator token", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      for (let i = 0; i < OPERATOR_AUTH_FAILURES_PER_MINUTE; i++) {
        expectError(yield* operator(baseUrl, "wrong", `198.51.100.${i + 1}`), 401, "authentication_required")
      }
      const refused = yield* operator(baseUrl, "wrong", "198.51.100.200")
      expectError(refused, 429, "rate_limit_exceeded")
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/)
    })
  )
})
