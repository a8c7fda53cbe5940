/**
 * The database goes away under load and comes back: the server on PostgreSQL (the
 * DATABASE_URL path of `pnpm start`) reaches it through a TCP proxy the test can cut.
 * While it is away every answer is a success or a sanitized 500 in the envelope, promptly;
 * /readyz says 503; afterwards the same server answers 200 again without a restart. The
 * server logs the database going away and coming back, once each, before anyone asks /readyz.
 */
import { describe, expect, layer } from "@effect/vitest"
import { freshDatabaseUrl, probeTestServer, testServerUrl } from "@intake/postgres/testing"
import { captureLogs } from "@intake/testing"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { postgresRuntime } from "../src/runtime.js"
import { type Answer, BaseUrl, call, testServer } from "./harness.js"
import { admin, dataOf, expectError, expectHeaders, provision } from "./support.js"
import { type TcpProxy, tcpProxy } from "./tcp-proxy.js"

/** Under CI a missing PostgreSQL fails the run; elsewhere these tests are skipped, saying why. */
const postgresAvailable: boolean = await (async () => {
  const probe = await probeTestServer()
  if (probe._tag === "Right") return true
  const message = `PostgreSQL is unreachable at ${testServerUrl()} (${probe.left})`
  if (process.env.CI === "true") throw new Error(`${message}; CI needs it.`)
  console.warn(`${message}: skipping the outage tests. Set INTAKE_TEST_DATABASE_URL to run them.`)
  return false
})()

class DatabaseProxy extends Context.Tag("test/DatabaseProxy")<DatabaseProxy, TcpProxy>() {}

/** The server's log lines, kept instead of printed. */
// Each failed request is logged with its cause (as it should be); hundreds of them on the console say nothing.
const logs = captureLogs()
const databaseLines = () => logs.parsed().filter((line) => line.database !== undefined)

/** A password in DATABASE_URL (ignored by the test server's trust auth) that no log line may show. */
const PASSWORD = "outage-test-password"

/** Short, so that the watcher notices within the test's bounds. */
const WATCH_INTERVAL = Duration.millis(300)

/**
 * The server on a fresh database whose DATABASE_URL points at the proxy; with a request
 * timeout and a bound on each statement's answer when given.
 */
const serverBehindProxy = (
  timeouts: { readonly request?: Duration.Duration; readonly query?: Duration.Duration } = {}
) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const upstream = new URL(testServerUrl())
      const proxy = yield* tcpProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) })
      const database = yield* freshDatabaseUrl()
      const viaProxy = new URL(database.url)
      viaProxy.hostname = "127.0.0.1"
      viaProxy.port = String(proxy.port)
      if (viaProxy.password === "" && process.env.PGPASSWORD === undefined) viaProxy.password = PASSWORD
      const runtime = postgresRuntime(Redacted.make(viaProxy.toString()), {
        webhookAllowPrivateNetworks: false,
        databaseWatchInterval: WATCH_INTERVAL,
        ...(timeouts.query === undefined ? {} : { databaseQueryTimeout: timeouts.query })
      })
      const server = testServer(runtime, {
        admin: true,
        ...(timeouts.request === undefined ? {} : { requestTimeout: timeouts.request })
      }).pipe(Layer.provide(logs.layer))
      return Layer.merge(server, Layer.succeed(DatabaseProxy, proxy))
    })
  )

/** Longer than any answer may take, database or not. */
const ANSWER_BOUND = Duration.seconds(10)

const answered = (baseUrl: string, method: string, path: string, options: Parameters<typeof call>[3]) =>
  call(baseUrl, method, path, options).pipe(
    Effect.timeoutFail({
      duration: ANSWER_BOUND,
      onTimeout: () => new Error(`${method} ${path} did not answer within ${Duration.format(ANSWER_BOUND)}`)
    })
  )

const SANITIZED = "An unexpected error occurred."

/** A 500 internal_error in the envelope, with every header, and nothing of the database in it. */
const expectSanitized500 = (answer: Answer, options: { readonly rateLimit?: boolean } = {}) => {
  expectError(answer, 500, "internal_error")
  expect(answer.body).toEqual({ success: false, error: { code: "internal_error", message: SANITIZED } })
  expectHeaders(answer, options)
}

const expectUnavailable = (answer: Answer) => {
  expectError(answer, 503, "service_unavailable")
  expect(JSON.stringify(answer.body)).not.toMatch(/ECONN|terminated|timeout|SELECT|Sql|pg|5432/i)
  expectHeaders(answer, { rateLimit: false })
}

/** Polls until the server answers `path` with 200 again; fails after `within`. */
const recovered = (baseUrl: string, path: string, key: string | undefined, within: Duration.Duration) =>
  Effect.gen(function* () {
    const deadline = Date.now() + Duration.toMillis(within)
    for (;;) {
      const answer = yield* answered(baseUrl, "GET", path, key === undefined ? {} : { key })
      if (answer.status === 200) return answer
      if (Date.now() > deadline) {
        return yield* Effect.fail(
          new Error(
            `${path} still answers ${answer.status} ${Duration.format(within)} after the database returned`
          )
        )
      }
      yield* Effect.sleep(Duration.millis(200))
    }
  })

const RECOVERY_BOUND = Duration.seconds(15)

/** The request timeout of the server whose connections freeze. */
const REQUEST_TIMEOUT = Duration.seconds(2)

/**
 * Past the deadline, so that the deadline is what answers a request; it frees what cannot
 * be interrupted (a transaction's BEGIN, the dispatcher's claim) and the test's teardown.
 */
const QUERY_TIMEOUT = Duration.seconds(4)

/** An answer cut at the deadline comes by then, give or take a busy machine. */
const DEADLINE_BOUND = Duration.sum(REQUEST_TIMEOUT, Duration.seconds(2))

/**
 * Waits for the server's database log lines since `from` to be `states` (e.g. ["down"]);
 * fails with the lines it saw after `within`.
 */
const databaseLogged = (from: number, states: ReadonlyArray<"down" | "up">, within = Duration.seconds(10)) =>
  Effect.gen(function* () {
    const deadline = Date.now() + Duration.toMillis(within)
    for (;;) {
      const logged = databaseLines().slice(from)
      if (logged.length >= states.length || Date.now() > deadline) {
        expect(logged.map((line) => line.database)).toEqual(states)
        return logged
      }
      yield* Effect.sleep(Duration.millis(50))
    }
  })

/** One warning when the database went away (with why, and no password), one info line when it came back. */
const expectOutageLogged = (logged: ReadonlyArray<unknown>) => {
  expect(logged).toEqual([
    expect.objectContaining({
      level: "warn",
      message: "database does not answer",
      database: "down",
      error: expect.stringMatching(/^ping: ./)
    }),
    expect.objectContaining({ level: "info", message: "database answers again", database: "up" })
  ])
  expect(logs.printed()).not.toContain(PASSWORD)
}

const describeOutage = postgresAvailable ? describe : (describe.skip as typeof describe)

describeOutage("the database goes away and comes back", () => {
  layer(serverBehindProxy(), { excludeTestServices: true, timeout: Duration.seconds(30) })(
    "server on PostgreSQL behind a proxy",
    (it) => {
      it.effect(
        "a stopped database under load: successes or sanitized 500s, /readyz 503, then 200 again without a restart",
        () =>
          Effect.gen(function* () {
            const baseUrl = yield* BaseUrl
            const proxy = yield* DatabaseProxy
            const logsFrom = databaseLines().length
            const tenant = yield* provision(baseUrl)
            // A key never used before the outage, so not in the key cache: its lookup needs the database.
            const coldKey = dataOf(
              yield* admin(baseUrl, "POST", `/admin/workspaces/${tenant.workspaceId}/api-keys`, {
                scopes: ["read:intake-bots"]
              }),
              201
            ).api_key.key as string
            dataOf(yield* answered(baseUrl, "GET", "/readyz", {}))

            const submissions = `/v1/intake-bots/${tenant.botId}/submissions`
            const REQUESTS = 200
            const CUT_AT = 60
            const results = yield* Effect.forEach(
              Array.from({ length: REQUESTS }, (_, i) => i),
              (i) => {
                // Requests start in order, ten at a time: from CUT_AT on, each starts after the cut.
                if (i === CUT_AT) proxy.cut("refuse")
                const request =
                  i % 3 === 0
                    ? answered(baseUrl, "POST", submissions, {
                        key: tenant.key,
                        body: { data: { name: "Ada", email: `ada${i}@example.com` } }
                      })
                    : answered(baseUrl, "GET", i % 3 === 1 ? "/v1/intake-bots" : `${submissions}?limit=5`, {
                        key: tenant.key
                      })
                return Effect.map(request, (answer) => ({ i, answer }))
              },
              { concurrency: 10 }
            )

            const created: Array<string> = []
            for (const { i, answer } of results) {
              if (answer.status === 500 || i >= CUT_AT) expectSanitized500(answer)
              else {
                expect(answer.status, JSON.stringify(answer.body)).toBe(i % 3 === 0 ? 201 : 200)
                expectHeaders(answer)
                if (i % 3 === 0)
                  created.push((answer.body as { data: { submission: { id: string } } }).data.submission.id)
              }
            }
            expect(results.filter(({ answer }) => answer.status < 300).length).toBeGreaterThanOrEqual(
              CUT_AT - 10
            )

            // Logged by the server itself, before anyone asks /readyz.
            yield* databaseLogged(logsFrom, ["down"])
            // Still down: /readyz says so; a key the cache does not hold is not "unknown" but unverifiable.
            expectUnavailable(yield* answered(baseUrl, "GET", "/readyz", {}))
            expectSanitized500(yield* answered(baseUrl, "GET", "/v1/intake-bots", { key: coldKey }))
            expectSanitized500(yield* answered(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key }))
            expectSanitized500(yield* admin(baseUrl, "GET", `/admin/api-keys/${tenant.keyId}`), {
              rateLimit: false
            })

            proxy.resume()
            expectHeaders(yield* recovered(baseUrl, "/v1/intake-bots", tenant.key, RECOVERY_BOUND))
            yield* databaseLogged(logsFrom, ["down", "up"])
            expect(dataOf(yield* answered(baseUrl, "GET", "/readyz", {}))).toEqual({
              status: "ok",
              database: "ok",
              rate_limiter: "enforcing"
            })
            expect(
              dataOf(yield* answered(baseUrl, "GET", "/v1/intake-bots", { key: coldKey })).intake_bots
            ).toHaveLength(1)
            // Every submission acknowledged before the cut is there.
            const listed = dataOf(
              yield* answered(baseUrl, "GET", `${submissions}?limit=100`, { key: tenant.key })
            ).submissions as Array<{ id: string }>
            expect(listed.map((submission) => submission.id)).toEqual(expect.arrayContaining(created))
            dataOf(
              yield* answered(baseUrl, "POST", submissions, {
                key: tenant.key,
                body: { data: { name: "Ada", email: "after@example.com" } }
              }),
              201
            )
            // /readyz saw the same outage and the same return: still one line each.
            expectOutageLogged(databaseLines().slice(logsFrom))
          })
      )

      it.effect(
        "a database that stops answering (connections hang): 500s within the connect timeout, then 200 again",
        () =>
          Effect.gen(function* () {
            const baseUrl = yield* BaseUrl
            const proxy = yield* DatabaseProxy
            const tenant = yield* provision(baseUrl)
            dataOf(yield* answered(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key }))
            const logsFrom = databaseLines().length

            proxy.cut("silent")
            const started = Date.now()
            const answers = yield* Effect.forEach(
              Array.from({ length: 10 }),
              () => answered(baseUrl, "GET", "/v1/intake-bots", { key: tenant.key }),
              { concurrency: "unbounded" }
            )
            for (const answer of answers) expectSanitized500(answer)
            expect(Date.now() - started).toBeLessThan(Duration.toMillis(ANSWER_BOUND))
            // The probe gives up on its own two-second bound, not on the pool's connect timeout.
            const probed = Date.now()
            expectUnavailable(yield* answered(baseUrl, "GET", "/readyz", {}))
            expect(Date.now() - probed).toBeLessThan(3_000)

            yield* databaseLogged(logsFrom, ["down"])

            proxy.resume()
            yield* recovered(baseUrl, "/v1/intake-bots", tenant.key, RECOVERY_BOUND)
            yield* databaseLogged(logsFrom, ["down", "up"])
            dataOf(yield* answered(baseUrl, "GET", "/readyz", {}))
            expectOutageLogged(databaseLines().slice(logsFrom))
          })
      )
    }
  )

  layer(serverBehindProxy({ request: REQUEST_TIMEOUT, query: QUERY_TIMEOUT }), {
    excludeTestServices: true,
    timeout: Duration.seconds(30)
  })(`server on PostgreSQL behind a proxy, REQUEST_TIMEOUT=${Duration.format(REQUEST_TIMEOUT)}`, (it) => {
    it.effect(
      "established connections go silent: every answer a sanitized 500 by the deadline; the server drops them and answers 200 again without a restart",
      () =>
        Effect.gen(function* () {
          const baseUrl = yield* BaseUrl
          const proxy = yield* DatabaseProxy
          const tenant = yield* provision(baseUrl)
          const submissions = `/v1/intake-bots/${tenant.botId}/submissions`
          // Several pooled connections, open and idle: the ones the freeze catches.
          yield* Effect.forEach(
            Array.from({ length: 6 }),
            () => answered(baseUrl, "GET", submissions, { key: tenant.key }),
            { concurrency: "unbounded" }
          )
          expect(proxy.frozenOpen()).toBe(0)

          proxy.cut("freeze")
          const requests = Array.from({ length: 8 }, (_, i) =>
            i % 4 === 0
              ? answered(baseUrl, "POST", submissions, {
                  key: tenant.key,
                  body: { data: { name: "Ada", email: `frozen${i}@example.com` } }
                })
              : answered(baseUrl, "GET", i % 2 === 0 ? "/v1/intake-bots" : submissions, { key: tenant.key })
          )
          const timedAnswers = yield* Effect.forEach(requests, (request) => Effect.timed(request), {
            concurrency: "unbounded"
          })
          expect(proxy.frozenOpen()).toBeGreaterThan(0)
          for (const [elapsed, answer] of timedAnswers) {
            expectSanitized500(answer)
            expect(Duration.toMillis(elapsed)).toBeLessThan(Duration.toMillis(DEADLINE_BOUND))
          }
          // The deadline is what answered: logged once per request, with its id and route.
          const exceeded = logs.parsed().filter((line) => line.message === "request exceeded its deadline")
          for (const [, answer] of timedAnswers) {
            expect(exceeded.filter((line) => line.requestId === answer.headers.get("x-request-id"))).toEqual([
              expect.objectContaining({ level: "error", route: expect.stringMatching(/^\/v1\//) })
            ])
          }

          // New connections work again; the frozen ones stay frozen for good.
          proxy.resume()
          yield* recovered(baseUrl, submissions, tenant.key, RECOVERY_BOUND)
          // No frozen connection is left in the pool: nothing waits for a deadline any more.
          const after = yield* Effect.forEach(
            Array.from({ length: 10 }),
            () => Effect.timed(answered(baseUrl, "GET", submissions, { key: tenant.key })),
            { concurrency: "unbounded" }
          )
          for (const [elapsed, answer] of after) {
            dataOf(answer)
            expect(Duration.toMillis(elapsed)).toBeLessThan(Duration.toMillis(REQUEST_TIMEOUT))
          }
          dataOf(
            yield* answered(baseUrl, "POST", submissions, {
              key: tenant.key,
              body: { data: { name: "Ada", email: "thawed@example.com" } }
            }),
            201
          )
          dataOf(yield* answered(baseUrl, "GET", "/readyz", {}))
          // The server closed every pooled connection that went silent. One stays open: the
          // LISTEN connection of the delivery wake-ups waits for no answer (TCP keepalive ends
          // it on a real network; behind this proxy the probes are answered).
          yield* Effect.sleep(Duration.millis(100)).pipe(
            Effect.repeat({ until: () => proxy.frozenOpen() <= 1 }),
            Effect.timeoutFail({
              duration: RECOVERY_BOUND,
              onTimeout: () => new Error(`${proxy.frozenOpen()} frozen connections still open`)
            })
          )
        })
    )
  })
})
