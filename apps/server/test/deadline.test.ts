/**
 * REQUEST_TIMEOUT: a request that has not answered within its deadline answers the
 * sanitized 500 in the envelope, with every header, and the work it was waiting for is
 * interrupted. The slow handlers here never finish: only the deadline can answer.
 */
import { expect, layer } from "@effect/vitest"
import { Access, IntakeBots } from "@intake/domain"
import { captureLogs } from "@intake/testing"
import { Duration, Effect, Layer } from "effect"
import { embeddedRuntime } from "../src/runtime.js"
import { type Answer, BaseUrl, call, testServer } from "./harness.js"
import { StubServices } from "./stubs.js"
import { dataOf, expectHeaders, provision } from "./support.js"

const TIMEOUT = Duration.millis(300)

const logs = captureLogs()

/** How many of the never-ending lists were interrupted. */
const interrupted = { lists: 0 }

/** The memory store, with listing bots never finishing (until interrupted). */
const slowList = Layer.effect(
  IntakeBots,
  Effect.map(IntakeBots, (bots) => ({
    ...bots,
    list: () =>
      Effect.never.pipe(
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            interrupted.lists += 1
          })
        )
      )
  }))
)

const slowServer = testServer(
  Layer.provideMerge(slowList, embeddedRuntime({ webhookAllowPrivateNetworks: false, dispatcher: false })),
  { requestTimeout: TIMEOUT }
).pipe(Layer.provide(logs.layer))

/** The sanitized 500 of every fault, after the deadline and not long after it. */
const expectDeadline500 = (answer: Answer, elapsedMs: number) => {
  expect(answer.status).toBe(500)
  expect(answer.body).toEqual({
    success: false,
    error: { code: "internal_error", message: "An unexpected error occurred." }
  })
  expect(elapsedMs).toBeGreaterThanOrEqual(Duration.toMillis(TIMEOUT) - 5)
  expect(elapsedMs).toBeLessThan(Duration.toMillis(TIMEOUT) + 3_000)
}

const timed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.timed(effect), ([elapsed, answer]) => ({ answer, elapsedMs: Duration.toMillis(elapsed) }))

layer(slowServer, { excludeTestServices: true })("a handler slower than the deadline", (it) => {
  it.effect(
    "answers 500 internal_error in the envelope with x-request-id and rate-limit headers, logs it once, and is interrupted",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const before = interrupted.lists

        const { answer, elapsedMs } = yield* timed(
          call(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key })
        )
        expectDeadline500(answer, elapsedMs)
        expectHeaders(answer)

        const requestId = answer.headers.get("x-request-id")
        const logged = logs.parsed().filter((line) => line.requestId === requestId)
        expect(logged).toEqual([
          expect.objectContaining({
            level: "error",
            message: "request exceeded its deadline",
            method: "GET",
            route: "/v1/intake-bots",
            timeoutMs: Duration.toMillis(TIMEOUT)
          }),
          expect.objectContaining({ level: "info", message: "request", status: 500, keyId: tenant.keyId })
        ])
        expect(logs.printed()).not.toContain(tenant.key)

        // The answer does not wait for the work to stop; the work stops all the same.
        yield* Effect.sleep(Duration.millis(20)).pipe(
          Effect.repeat({ until: () => interrupted.lists > before }),
          Effect.timeoutFail({
            duration: Duration.seconds(2),
            onTimeout: () => new Error("never interrupted")
          })
        )

        // The server is not stuck: what is not slow still answers at once.
        dataOf(yield* call(baseUrl, "GET", `/v1/intake-bots/${tenant.botId}`, { key: tenant.key }))
      })
  )
})

/** Stubs whose authentication never finishes for `Bearer slow`. */
const slowAuthentication = Layer.effect(
  Access,
  Effect.map(Access, (access) => ({
    ...access,
    authenticate: (header: string | undefined) =>
      header === "Bearer slow" ? Effect.never : access.authenticate(header)
  }))
)

layer(
  testServer(Layer.provideMerge(slowAuthentication, StubServices), { requestTimeout: TIMEOUT }).pipe(
    Layer.provide(logs.layer)
  ),
  { excludeTestServices: true }
)("an authentication slower than the deadline", (it) => {
  it.effect("answers the same 500, still with the rate-limit headers of the caller's address", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const { answer, elapsedMs } = yield* timed(call(baseUrl, "GET", "/v1/intake-bots", { key: "slow" }))
      expectDeadline500(answer, elapsedMs)
      expect(answer.headers.get("x-request-id")).toMatch(/^req_/)
      expect(answer.headers.get("x-ratelimit-limit")).toBe("100")
      expect(logs.parsed().filter((line) => line.requestId === answer.headers.get("x-request-id"))).toEqual([
        expect.objectContaining({ message: "request exceeded its deadline", route: null }),
        expect.objectContaining({ message: "request", status: 500 })
      ])
      // Another caller is not held up.
      const other = yield* call(baseUrl, "GET", "/healthz", {})
      expect(other.status).toBe(200)
    })
  )
})
