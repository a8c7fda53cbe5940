/**
 * Connections are bounded (docs/rules.md, Overload): requests on a connection opened past
 * INTAKE_MAX_CONNECTIONS are shed with 429 and the connection closed; past twice the bound a
 * new connection is closed unanswered; a connection that stays idle is closed at
 * INTAKE_IDLE_TIMEOUT, one that does not send its headers at INTAKE_HEADERS_TIMEOUT.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Either } from "effect"
import { describeConfigError, serverConfig } from "../src/config.js"
import { DEFAULT_ADMISSION } from "../src/server.js"
import { BaseUrl, testServer } from "./harness.js"
import { type RawConnection, rawConnection } from "./raw-http.js"
import { expectError, runtimeFor } from "./support.js"

const MAX_CONNECTIONS = 3
const IDLE_TIMEOUT_MS = 300

const server = testServer(runtimeFor({ webhookAllowPrivateNetworks: false }), {
  admission: { maxConnections: MAX_CONNECTIONS },
  idleTimeoutMs: IDLE_TIMEOUT_MS,
  headersTimeoutMs: IDLE_TIMEOUT_MS
})

const listBots = "GET /v1/intake-bots HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

/** A request without a key on `connection`, and its answer. */
const ask = (connection: RawConnection) =>
  Effect.suspend(() => {
    connection.write(listBots)
    return connection.answer
  })

layer(server, { excludeTestServices: true })("connections", (it) => {
  it.scoped(
    "past the bound: requests are shed with 429 and the connection closes; past twice the bound, a new connection is closed unanswered",
    () =>
      Effect.gen(function* () {
        const baseUrl = yield* BaseUrl
        const within = yield* Effect.forEach(Array.from({ length: MAX_CONNECTIONS }), () =>
          rawConnection(baseUrl)
        )
        for (const connection of within) expect((yield* ask(connection)).status).toBe(401)
        const past = yield* Effect.forEach(Array.from({ length: MAX_CONNECTIONS }), () =>
          rawConnection(baseUrl)
        )
        // Twice the bound are open: the next one is closed as soon as the server takes it.
        const beyond = yield* rawConnection(baseUrl)
        yield* beyond.whenClosed

        for (const connection of past) {
          const answer = yield* ask(connection)
          const details = expectError(answer, 429, "rate_limit_exceeded")
          expect(details?.retry_after).toBe(1)
          expect(answer.headers.get("retry-after")).toBe("1")
          expect(answer.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/)
          expect(answer.headers.get("x-ratelimit-limit")).toBe("100")
          expect(answer.headers.get("connection")).toBe("close")
          yield* connection.whenClosed
        }
        // The connections within the bound are served as before.
        for (const connection of within) expect((yield* ask(connection)).status).toBe(401)
      })
  )

  it.scoped("a connection left idle after an answer, or that sends nothing, is closed at its time-out", () =>
    Effect.gen(function* () {
      const baseUrl = yield* BaseUrl
      const served = yield* rawConnection(baseUrl)
      expect((yield* ask(served)).status).toBe(401)
      const silent = yield* rawConnection(baseUrl)
      // Far less than node's own defaults (5 s idle, 60 s for headers) allow.
      const closedBoth = yield* Effect.all([served.whenClosed, silent.whenClosed], {
        concurrency: "unbounded"
      }).pipe(Effect.timeout(IDLE_TIMEOUT_MS * 8), Effect.either)
      expect(Either.isRight(closedBoth)).toBe(true)
    })
  )
})

const read = (env: Record<string, string>) =>
  Effect.either(serverConfig).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.runSync
  )

describe("admission and connection variables", () => {
  it("default to bounds that fit a small instance, and a bad value names its variable", () => {
    const config = Either.getOrThrow(read({}))
    expect(config.admission).toEqual(DEFAULT_ADMISSION)
    expect(DEFAULT_ADMISSION).toEqual({
      maxConnections: 1_024,
      maxRequestsInFlight: 256,
      maxBodyBytesInFlight: 16 * 1_048_576
    })
    expect(Duration.toMillis(config.headersTimeout)).toBe(10_000)
    expect(Duration.toMillis(config.idleTimeout)).toBe(5_000)
    const set = Either.getOrThrow(
      read({
        INTAKE_MAX_CONNECTIONS: "64",
        INTAKE_MAX_REQUESTS_IN_FLIGHT: "16",
        INTAKE_MAX_BODY_BYTES_IN_FLIGHT: "4mb",
        INTAKE_HEADERS_TIMEOUT: "2s",
        INTAKE_IDLE_TIMEOUT: "1s"
      })
    )
    expect(set.admission).toEqual({
      maxConnections: 64,
      maxRequestsInFlight: 16,
      maxBodyBytesInFlight: 4 * 1_048_576
    })
    expect(Duration.toMillis(set.headersTimeout)).toBe(2_000)
    for (const [name, value] of [
      ["INTAKE_MAX_CONNECTIONS", "0"],
      ["INTAKE_MAX_REQUESTS_IN_FLIGHT", "many"],
      ["INTAKE_MAX_BODY_BYTES_IN_FLIGHT", "512kb"]
    ] as const) {
      const refused = read({ [name]: value })
      expect(Either.isLeft(refused)).toBe(true)
      if (Either.isLeft(refused))
        expect(describeConfigError(refused.left)).toMatch(new RegExp(`^Invalid configuration: ${name}: `))
    }
  })
})
