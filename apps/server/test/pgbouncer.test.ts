/**
 * The server behind PgBouncer in transaction pooling mode (docs/deploy-postgres.md): the
 * DATABASE_URL path of `pnpm start` with DATABASE_POOL_MODE=transaction and
 * DATABASE_DIRECT_URL, through a pgbouncer of the test's own whose two server sessions every
 * request shares. Creates made ten at a time are all answered 201 and all listed.
 */
import { describe, expect, layer } from "@effect/vitest"
import { freshDatabaseUrl, probeTestServer, testServerUrl } from "@intake/postgres/testing"
import { startPgBouncer, withPgBouncer } from "@intake/postgres/testing-pgbouncer"
import { Duration, Effect, Layer, Redacted } from "effect"
import { postgresRuntime } from "../src/runtime.js"
import { BaseUrl, call, testServer } from "./harness.js"
import { dataOf, provision } from "./support.js"

/** Under CI a missing PostgreSQL fails the run; elsewhere these tests are skipped, saying why. */
const postgresAvailable: boolean = await (async () => {
  const probe = await probeTestServer()
  if (probe._tag === "Right") return true
  const message = `PostgreSQL is unreachable at ${testServerUrl()} (${probe.left})`
  if (process.env.CI === "true") throw new Error(`${message}; CI needs it.`)
  console.warn(`${message}: skipping the PgBouncer tests. Set INTAKE_TEST_DATABASE_URL to run them.`)
  return false
})()

const serverBehindBouncer = Layer.unwrapScoped(
  Effect.gen(function* () {
    const bouncer = yield* startPgBouncer({ poolSize: 2 })
    const database = yield* freshDatabaseUrl()
    return testServer(
      postgresRuntime(Redacted.make(bouncer.urlOf(database.name)), {
        webhookAllowPrivateNetworks: false,
        databasePool: { poolMode: "transaction", directUrl: Redacted.make(database.url) }
      }),
      { admin: true }
    )
  })
)

withPgBouncer("the server behind PgBouncer", () =>
  (postgresAvailable ? describe : (describe.skip as typeof describe))("the server behind PgBouncer", () => {
    layer(serverBehindBouncer, { excludeTestServices: true, timeout: Duration.seconds(30) })(
      "DATABASE_POOL_MODE=transaction, a pool of 2",
      (it) => {
        it.effect("answers creates made ten at a time, then lists every one", () =>
          Effect.gen(function* () {
            const baseUrl = yield* BaseUrl
            const tenant = yield* provision(baseUrl)
            const submissions = `/v1/intake-bots/${tenant.botId}/submissions`
            const created = yield* Effect.forEach(
              Array.from({ length: 30 }, (_, i) => i),
              (i) =>
                Effect.map(
                  call(baseUrl, "POST", submissions, {
                    key: tenant.key,
                    body: { data: { name: "Ada", email: `ada${i}@example.com` } }
                  }),
                  (answer) => dataOf(answer, 201).submission.id as string
                ),
              { concurrency: 10 }
            )
            const listed = dataOf(
              yield* call(baseUrl, "GET", `${submissions}?limit=100`, { key: tenant.key })
            )
            expect(new Set(listed.submissions.map((s: { id: string }) => s.id))).toEqual(new Set(created))
          })
        )
      }
    )
  })
)
