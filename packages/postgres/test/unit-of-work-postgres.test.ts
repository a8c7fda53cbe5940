/**
 * A unit of work on PostgreSQL interrupted while one of its statements runs (a request past
 * its deadline, a client gone): the statement is cancelled, the transaction rolls back at
 * once and its locks go with it, instead of the ROLLBACK waiting behind the statement.
 * And its last statement, under UnitOfWork.commitWith, sent with the COMMIT. A statement
 * deferred to the next one: unit-of-work-deferred-postgres.test.ts.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { UnitOfWork } from "@intake/domain"
import { Cause, Duration, Effect, Exit, Fiber, Option, Schedule } from "effect"
import { PgReads } from "../src/driver/direct-pool.js"
import { statement } from "../src/driver/statement.js"
import { StatementAfterCommit } from "../src/driver/transaction-client.js"
import { describePostgres } from "./support.js"
import { onPostgres, statementsAndRows } from "./unit-of-work-support.js"

describePostgres("a unit of work on PostgreSQL", () => {
  onPostgres("interrupted", (it) => {
    it.effect(
      "mid-statement: the statement is cancelled, the work rolled back and its row lock freed at once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const unitOfWork = yield* UnitOfWork
          const { rowsOf } = yield* statementsAndRows
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

  onPostgres("interrupted while they hold every connection of the pool", (it) => {
    it.effect(
      "each statement is cancelled without a connection of the pool, and the pool serves again at once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const unitOfWork = yield* UnitOfWork
          const { rowsOf } = yield* statementsAndRows
          const { pool } = Option.getOrThrow(yield* Effect.serviceOption(PgReads))
          const tag = `held_${Math.random().toString(36).slice(2, 10)}`
          // The pool has 3 connections: two units of work sleep, the third is this watcher's.
          const watcher = yield* Effect.promise(() => pool.connect())
          const sleeping = Effect.promise(() =>
            watcher
              .query<{ n: number }>(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1`,
                [`SELECT pg_sleep($1) AS ${tag}%`]
              )
              .then((result) => result.rows[0]!.n)
          )
          const running = yield* Effect.forEach(
            [1, 2],
            () =>
              Effect.fork(
                unitOfWork.transaction(rowsOf({ text: `SELECT pg_sleep($1) AS ${tag}`, values: [30] }))
              ),
            { concurrency: "unbounded" }
          )
          yield* Effect.repeat(sleeping, {
            until: (n) => n === 2,
            schedule: Schedule.spaced("20 millis")
          }).pipe(Effect.timeout("10 seconds"))

          // A cancel that waited for a connection of the pool would wait out the connect timeout (5 s).
          const [stoppedAfter] = yield* Effect.timed(Fiber.interruptAll(running))
          expect(Duration.toMillis(stoppedAfter)).toBeLessThan(2_000)
          expect(yield* sleeping).toBe(0)
          watcher.release()
          const [served] = yield* Effect.timed(sql`SELECT 1`)
          expect(Duration.toMillis(served)).toBeLessThan(2_000)
        })
    )
  })

  onPostgres("its connection lost before BEGIN is answered", (it) => {
    it.effect("fails as a storage failure, the process hears the client's error, the pool serves again", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const unitOfWork = yield* UnitOfWork
        const { rowsOf } = yield* statementsAndRows
        const { pool } = Option.getOrThrow(yield* Effect.serviceOption(PgReads))
        // pg emits a lost connection as an `error` event on the client, beside the BEGIN's
        // failure: with no listener it would be an uncaught exception (this test's run fails).
        const uncaught: Array<unknown> = []
        const onUncaught = (error: unknown) => uncaught.push(error)
        process.on("uncaughtException", onUncaught)
        pool.once("acquire", (client) => {
          ;(
            client as unknown as { readonly connection: { readonly stream: { destroy(): void } } }
          ).connection.stream.destroy()
        })
        const exit = yield* Effect.exit(
          unitOfWork.transaction(rowsOf({ text: "SELECT 1 AS one", values: [] }))
        )
        yield* Effect.sleep("100 millis")
        process.off("uncaughtException", onUncaught)
        expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause)).toMatchObject({
          _tag: "Some",
          value: { _tag: "StorageUnavailable" }
        })
        expect(uncaught).toEqual([])
        expect(yield* sql`SELECT 1 AS one`).toEqual([{ one: 1 }])
      })
    )
  })

  onPostgres("its last statement under commitWith", (it) => {
    const setUp = Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const table = `notes_${Math.random().toString(36).slice(2, 10)}`
      yield* sql.unsafe(`CREATE TABLE ${table} (id int PRIMARY KEY)`)
      const { rowsOf, finalRowsOf } = yield* statementsAndRows
      // The test database is PostgreSQL, whose layer provides the pool (not in its type).
      const { pool } = Option.getOrThrow(yield* Effect.serviceOption(PgReads))
      const insert = (id: number) => ({ text: `INSERT INTO ${table} VALUES ($1) RETURNING id`, values: [id] })
      /** The committed rows, as another session sees them. */
      const committed = Effect.promise(() =>
        pool
          .query<{ id: number }>(`SELECT id FROM ${table} ORDER BY id`)
          .then((result) => result.rows.map((row) => row.id))
      )
      return { unitOfWork: yield* UnitOfWork, rowsOf, finalRowsOf, insert, committed }
    })

    it.effect(
      "carries the COMMIT: its writes are committed when it answers, before the unit's effect ends",
      () =>
        Effect.gen(function* () {
          const { unitOfWork, rowsOf, finalRowsOf, insert, committed } = yield* setUp
          const seenRightAfter = yield* unitOfWork.transaction(
            Effect.zipRight(
              rowsOf(insert(1)),
              Effect.zipRight(unitOfWork.commitWith(finalRowsOf(insert(2))), committed)
            )
          )
          expect(seenRightAfter).toEqual([1, 2])
          expect(yield* committed).toEqual([1, 2])
        })
    )

    it.effect("fails: the COMMIT sent with it is skipped and the whole unit rolls back", () =>
      Effect.gen(function* () {
        const { unitOfWork, rowsOf, finalRowsOf, insert, committed } = yield* setUp
        const exit = yield* Effect.exit(
          unitOfWork.transaction(
            Effect.zipRight(rowsOf(insert(1)), unitOfWork.commitWith(finalRowsOf(insert(1))))
          )
        )
        expect(Exit.isFailure(exit)).toBe(true)
        expect(yield* committed).toEqual([])
        // The connection went back to the pool clean: the next unit of work commits.
        yield* unitOfWork.transaction(unitOfWork.commitWith(finalRowsOf(insert(3))))
        expect(yield* committed).toEqual([3])
      })
    )

    it.effect("a statement sent after it is refused as a defect, never run outside the unit", () =>
      Effect.gen(function* () {
        const { unitOfWork, rowsOf, finalRowsOf, insert, committed } = yield* setUp
        const exit = yield* Effect.exit(
          unitOfWork.transaction(
            Effect.zipRight(unitOfWork.commitWith(finalRowsOf(insert(1))), rowsOf(insert(2)))
          )
        )
        expect(Exit.isFailure(exit) && Cause.dieOption(exit.cause)).toMatchObject({
          _tag: "Some",
          value: expect.any(StatementAfterCommit)
        })
        expect(yield* committed).toEqual([1])
      })
    )

    it.effect(
      "in a nested unit of work it commits nothing: the enclosing unit goes on and can still roll back",
      () =>
        Effect.gen(function* () {
          const { unitOfWork, rowsOf, finalRowsOf, insert, committed } = yield* setUp
          const exit = yield* Effect.exit(
            unitOfWork.transaction(
              Effect.zipRight(
                unitOfWork.transaction(unitOfWork.commitWith(finalRowsOf(insert(1)))),
                Effect.zipRight(rowsOf(insert(2)), Effect.fail("the enclosing unit fails" as const))
              )
            )
          )
          expect(exit).toEqual(Exit.fail("the enclosing unit fails"))
          expect(yield* committed).toEqual([])
        })
    )
  })
})
