/**
 * The pool under PostgresPortsLive: a statement whose answer does not come within the
 * query timeout fails, and its connection, still waiting for that answer, is dropped
 * rather than handed to the next statement (which would wait behind it).
 */
import { SqlClient } from "@effect/sql"
import { expect, it, layer } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer, Redacted } from "effect"
import { layerPostgres, type PostgresConfig } from "../src/pg-pool.js"
import { freshDatabaseUrl } from "../src/testing.js"
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

/** Two pools on one fresh database, as two server processes would have, with `config`. */
const twoPools = (config: Omit<PostgresConfig, "url"> = {}) =>
  Effect.gen(function* () {
    const database = yield* freshDatabaseUrl()
    const pool = Effect.map(
      Layer.build(layerPostgres({ url: Redacted.make(database.url), ...config })),
      (context) => Context.get(context, SqlClient.SqlClient)
    )
    const first = yield* pool
    const second = yield* pool
    yield* first`CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)`
    yield* first`INSERT INTO counters VALUES (1, 0)`
    return [first, second] as const
  })

describePostgres("the pool's session limits on PostgreSQL", () => {
  it.scopedLive("every session of the pool has the idle-in-transaction and lock timeouts", () =>
    Effect.gen(function* () {
      const [sql] = yield* twoPools()
      const [settings] = yield* sql<{ idle: string; lock: string }>`SELECT
        current_setting('idle_in_transaction_session_timeout') AS idle, current_setting('lock_timeout') AS lock`
      expect(settings).toEqual({ idle: "3s", lock: "5s" })
    })
  )

  it.scopedLive(
    "a process stalled inside a transaction loses its session and its row lock: another's write to the row goes through",
    () =>
      Effect.gen(function* () {
        const [stalled, healthy] = yield* twoPools({
          idleInTransactionTimeout: Duration.millis(500),
          queryTimeout: Duration.seconds(4)
        })
        // Takes the row's lock, then does nothing more: a process paused mid-transaction.
        const paused = yield* Effect.fork(
          stalled.withTransaction(
            Effect.zipRight(stalled`UPDATE counters SET n = n + 1 WHERE id = 1`, Effect.never)
          )
        )
        yield* Effect.sleep("100 millis")
        const [elapsed] = yield* Effect.timed(healthy`UPDATE counters SET n = n + 10 WHERE id = 1`)
        expect(Duration.toMillis(elapsed)).toBeLessThan(2_000)
        // The stalled transaction was rolled back with its session.
        const [row] = yield* healthy<{ n: number }>`SELECT n FROM counters WHERE id = 1`
        expect(row!.n).toBe(10)
        yield* Fiber.interruptFork(paused)
      })
  )

  it.scopedLive(
    "a lock held by a statement still running: the waiting write fails after the lock timeout, not after the holder",
    () =>
      Effect.gen(function* () {
        const [holder, waiter] = yield* twoPools({ lockTimeout: Duration.millis(500) })
        const holding = yield* Effect.fork(
          holder.withTransaction(
            Effect.zipRight(holder`UPDATE counters SET n = n + 1 WHERE id = 1`, holder`SELECT pg_sleep(3)`)
          )
        )
        yield* Effect.sleep("100 millis")
        const [elapsed, failure] = yield* Effect.timed(
          Effect.flip(waiter`UPDATE counters SET n = n + 10 WHERE id = 1`)
        )
        expect(String((failure.cause as Error).message)).toMatch(/lock timeout/i)
        expect(Duration.toMillis(elapsed)).toBeLessThan(2_000)
        yield* Fiber.join(holding)
      })
  )
})
