/**
 * The pool under PostgresPortsLive: a statement whose answer does not come within the
 * query timeout fails, and its connection, still waiting for that answer, is dropped
 * rather than handed to the next statement (which would wait behind it).
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted } from "effect"
import { layerPostgres } from "../src/pg-pool.js"
import { freshDatabaseUrl } from "../src/test-database.js"
import { describePostgres } from "./support.js"

const QUERY_TIMEOUT = Duration.millis(300)

/** One connection only, so that the next statement could only run on the same one, or a new one. */
const onePooledConnection = Layer.unwrapScoped(
  Effect.map(freshDatabaseUrl(), (database) =>
    layerPostgres({
      url: Redacted.make(database.url),
      maxConnections: 1,
      connectTimeout: Duration.seconds(5),
      queryTimeout: QUERY_TIMEOUT
    })
  )
)

describePostgres("the pool on PostgreSQL", () => {
  layer(onePooledConnection, { excludeTestServices: true, timeout: Duration.seconds(30) })(
    "with a query timeout",
    (it) => {
      it.effect(
        "a statement not answered in time fails, and the next one runs at once on a new connection",
        () =>
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const pid = sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.pipe(
              Effect.map((rows) => rows[0]!.pid)
            )
            const before = yield* pid

            const [waited, failure] = yield* Effect.timed(Effect.flip(sql`SELECT pg_sleep(5)`))
            expect(String((failure.cause as Error).message)).toMatch(/timeout/i)
            expect(Duration.toMillis(waited)).toBeLessThan(2_000)

            const [elapsed, after] = yield* Effect.timed(pid)
            expect(after).not.toBe(before)
            expect(Duration.toMillis(elapsed)).toBeLessThan(2_000)
          })
      )
    }
  )
})
