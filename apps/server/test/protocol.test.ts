/**
 * What never reaches a route: a body that does not arrive in time (INTAKE_BODY_TIMEOUT) and
 * what node's HTTP parser refuses (oversized headers or target, a bad method, no Host, a
 * header timeout). Each answers 400 validation_failed in the envelope with an X-Request-Id,
 * the per-address bucket's rate-limit headers, `Connection: close`, and the connection
 * closes. Sent over raw sockets, byte for byte.
 */
import { expect, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { BaseUrl, call, testServer } from "./harness.js"
import { rawConnection } from "./raw-http.js"
import { expectError, expectHeaders, provision, runtimeFor } from "./support.js"

const BODY_TIMEOUT = Duration.millis(400)
const HEADERS_TIMEOUT_MS = 400
/** Well past the body timeout: a body answered by the request deadline fails the test. */
const REQUEST_TIMEOUT = Duration.seconds(5)

const server = testServer(runtimeFor({ webhookAllowPrivateNetworks: false }), {
  bodyTimeout: BODY_TIMEOUT,
  requestTimeout: REQUEST_TIMEOUT,
  headersTimeoutMs: HEADERS_TIMEOUT_MS
})

/** Sends `head` on a fresh connection; the answer, and whether the server then closed it. */
const refused = (baseUrl: string, head: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const connection = yield* rawConnection(baseUrl)
      connection.write(head)
      const answer = yield* connection.answer
      yield* connection.whenClosed
      return answer
    })
  )

/**
 * A refused request: 400 validation_failed naming `path`, X-Request-Id, the rate-limit
 * headers of the address's bucket (100 a minute for requests without a valid key), Connection: close.
 */
const expectRefused = (answer: Parameters<typeof expectHeaders>[0], path: string, message: RegExp) => {
  const details = expectError(answer, 400, "validation_failed")
  expect(details?.issues).toEqual([{ path, message: expect.stringMatching(message) }])
  expectHeaders(answer)
  expect(answer.headers.get("x-ratelimit-limit")).toBe("100")
  expect(answer.headers.get("connection")).toBe("close")
  expect(answer.headers.get("content-type")).toBe("application/json")
}

layer(server, { excludeTestServices: true })("requests that never reach a route", (it) => {
  it.scoped(
    "a body sent a byte at a time answers 400 at the body timeout, with its rate-limit headers, and the connection closes",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const tenant = yield* provision(baseUrl)
        const connection = yield* rawConnection(baseUrl)
        const startedAt = performance.now()
        connection.write(
          [
            "POST /v1/webhooks HTTP/1.1",
            "Host: 127.0.0.1",
            `Authorization: Bearer ${tenant.key}`,
            "Content-Type: application/json",
            "Content-Length: 100",
            "",
            "{"
          ].join("\r\n")
        )
        // One byte every 50 ms: the body would need 5 s, past the deadline.
        const trickle = setInterval(() => {
          if (!connection.closed()) connection.write(" ")
        }, 50)
        yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(trickle)))

        const answer = yield* connection.answer
        const elapsedMs = performance.now() - startedAt
        const details = expectError(answer, 400, "validation_failed")
        expect(details?.issues).toEqual([{ path: "", message: "the body did not arrive within 400ms" }])
        expectHeaders(answer)
        expect(answer.headers.get("connection")).toBe("close")
        expect(elapsedMs).toBeGreaterThanOrEqual(Duration.toMillis(BODY_TIMEOUT) - 5)
        expect(elapsedMs).toBeLessThan(Duration.toMillis(REQUEST_TIMEOUT))
        yield* connection.whenClosed
      })
  )

  it.effect("oversized headers or request target answer 400 naming the headers", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const bigHeader = yield* refused(
        baseUrl,
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${"a".repeat(20_000)}\r\n\r\n`
      )
      expectRefused(bigHeader, "headers", /^the request line and headers are larger than \d+ bytes$/)
      const bigTarget = yield* refused(
        baseUrl,
        `GET /v1/intake-bots/${"a".repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`
      )
      expectRefused(bigTarget, "headers", /^the request line and headers are larger than \d+ bytes$/)
    })
  )

  it.effect(
    "a bad request line, a 40 KB header and a header name with a space carry the address's rate-limit headers, counting nothing",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        // A request without a valid key counts against the address: its remaining is the one to see.
        const unauthenticated = yield* call(baseUrl, "GET", "/v1/intake-bots")
        expect(unauthenticated.status).toBe(401)
        const remaining = unauthenticated.headers.get("x-ratelimit-remaining")
        const reset = unauthenticated.headers.get("x-ratelimit-reset")

        const badLine = yield* refused(baseUrl, "this is not http\r\n\r\n")
        expectRefused(badLine, "method", /not an HTTP method/)
        const bigHeader = yield* refused(
          baseUrl,
          `GET /v1/intake-bots HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${"a".repeat(40_000)}\r\n\r\n`
        )
        expectRefused(bigHeader, "headers", /larger than/)
        const spacedName = yield* refused(
          baseUrl,
          "GET /v1/intake-bots HTTP/1.1\r\nHost: 127.0.0.1\r\nX Bad Name: 1\r\n\r\n"
        )
        expectRefused(spacedName, "headers", /characters HTTP does not allow/)
        for (const answer of [badLine, bigHeader, spacedName]) {
          expect(answer.headers.get("x-ratelimit-remaining")).toBe(remaining)
          expect(answer.headers.get("x-ratelimit-reset")).toBe(reset)
        }
      })
  )

  it.effect("an Expect other than 100-continue answers 400 naming the header, in the envelope", () =>
    Effect.gen(function* () {
      const answer = yield* refused(
        yield* BaseUrl,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 200-ok\r\n\r\n"
      )
      expectRefused(answer, "Expect", /only 100-continue/)
    })
  )

  it.effect("a method HTTP does not know answers 400 naming the method", () =>
    Effect.gen(function* () {
      const answer = yield* refused(
        yield* BaseUrl,
        "FROB /v1/intake-bots HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
      )
      expectRefused(answer, "method", /not an HTTP method/)
    })
  )

  it.effect("an HTTP/1.1 request without Host answers 400 naming Host", () =>
    Effect.gen(function* () {
      const answer = yield* refused(yield* BaseUrl, "GET /healthz HTTP/1.1\r\n\r\n")
      expectRefused(answer, "Host", /Host header is required/)
    })
  )

  it.effect("headers that do not arrive in time answer 400 naming the request", () =>
    Effect.gen(function* () {
      // The blank line that ends the headers never comes.
      const answer = yield* refused(yield* BaseUrl, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
      expectRefused(answer, "request", /did not arrive in time/)
    })
  )

  it.effect("a client that resets mid-request gets nothing written and the server goes on", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      yield* Effect.scoped(
        Effect.gen(function* () {
          const connection = yield* rawConnection(baseUrl)
          connection.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half")
          // Let the server read the start before the reset.
          yield* Effect.sleep("50 millis")
          connection.reset()
        })
      )
      const answer = yield* refused(
        baseUrl,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
      )
      expect(answer.status).toBe(200)
    })
  )
})
