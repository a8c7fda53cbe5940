import { expect, layer } from "@effect/vitest"
import { captureLogs } from "@intake/testing"
import { Effect, Layer } from "effect"
import { BaseUrl, call, testServer } from "./harness.js"
import { STUB_KEY, StubServices } from "./stubs.js"

layer(testServer(StubServices), { excludeTestServices: true })("a defect inside a use case", (it) => {
  it.effect("answers 500 internal_error without the driver's text, in the envelope with every header", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const answer = yield* call(baseUrl, "GET", "/v1/intake-bots/bot_any", { key: STUB_KEY })
      expect(answer.status).toBe(500)
      expect(answer.body).toEqual({
        success: false,
        error: { code: "internal_error", message: "An unexpected error occurred." }
      })
      expect(JSON.stringify(answer.body)).not.toMatch(/SELECT|intake_bots|stack/)
      expect(answer.headers.get("x-request-id")).toMatch(/^req_/)
      expect(answer.headers.get("x-ratelimit-limit")).toBe("100")
    })
  )

  it.effect("a defect while authenticating answers the same sanitized 500, rate-limit headers included", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const answer = yield* call(baseUrl, "GET", "/v1/intake-bots", { key: "boom" })
      expect(answer.status).toBe(500)
      expect(answer.body).toEqual({
        success: false,
        error: { code: "internal_error", message: "An unexpected error occurred." }
      })
      expect(answer.headers.get("x-ratelimit-remaining")).toBe("99")
      expect(answer.headers.get("x-request-id")).toMatch(/^req_/)
    })
  )
})

const logs = captureLogs()

layer(testServer(StubServices).pipe(Layer.provide(logs.layer)), { excludeTestServices: true })(
  "the logs of a failed request",
  (it) => {
    it.effect("every line the request writes carries its request id, the cause's line too", () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const answer = yield* call(baseUrl, "GET", "/v1/intake-bots/bot_any", { key: STUB_KEY })
        expect(answer.status).toBe(500)
        const requestId = answer.headers.get("x-request-id")
        const mine = logs.parsed().filter((line) => line.requestId === requestId)
        expect(mine.map((line) => line.message)).toEqual(["request failed", "request"])
        expect(mine[0]).toMatchObject({ level: "error", cause: expect.any(String) })
      })
    )
  }
)
