/**
 * A unit of work on PostgreSQL interrupted while one of its statements runs (a request past
 * its deadline, a client gone): the statement is cancelled, the transaction rolls back at
 * once and its locks go with it, instead of the ROLLBACK waiting behind the statement.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { UnitOfWork } from "@intake/domain"
import { Duration, Effect, Fiber, Layer, Schedule } from "effect"
import { preparedStatements, statement } from "../src/reads.js"
import { PostgresTestDatabase } from "../src/testing.js"
import { PgUnitOfWork } from "../src/unit-of-work.js"
import { describePostgres } from "./support.js"

const database = PostgresTestDatabase(undefined, {
  maxConnections: 3,
  // Far longer than the test waits: only a cancel can end the statement in time.
  queryTimeout: Duration.seconds(60)
})

describePostgres("a unit of work on PostgreSQL", () => {
  layer(PgUnitOfWork.pipe(Layer.provideMerge(database)), {
    excludeTestServices: true,
    timeout: Duration.seconds(60)
  })("interrupted", (it) => {
    it.effect(
      "mid-statement: the statement is cancelled, the work rolled back and its row lock freed at once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const unitOfWork = yield* UnitOfWork
          const rowsOf = yield* preparedStatements
          yield* sql`CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)`
          yield* sql`INSERT INTO counters VALUES (1, 0)`

          const sleeping = Effect.map(
            sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE state = 'active' AND query LIKE 'SELECT pg_sleep%'`,
            (rows) => rows[0]!.n
          )

          const running = yield* Effect.fork(
            unitOfWork.transaction(
              Effect.zipRight(
                rowsOf(statement`UPDATE counters SET n = n + 1 WHERE id = ${1}`),
                rowsOf(statement`SELECT pg_sleep(${30})`)
              )
            )
          )
          // Until the sleep runs: the update holds the row's lock.
          yield* Effect.repeat(sleeping, {
            until: (n) => n === 1,
            schedule: Schedule.spaced("20 millis")
          }).pipe(Effect.timeout("10 seconds"))

          const [stoppedAfter] = yield* Effect.timed(Fiber.interrupt(running))
          expect(Duration.toMillis(stoppedAfter)).toBeLessThan(5_000)

          // Rolled back, and the row's lock is free: another write goes through at once.
          const [written, rows] = yield* Effect.timed(
            sql<{ n: number }>`UPDATE counters SET n = n + 10 WHERE id = 1 RETURNING n`
          )
          expect(rows[0]!.n).toBe(10)
          expect(Duration.toMillis(written)).toBeLessThan(2_000)
          expect(yield* sleeping).toBe(0)
        })
    )
  })
})
