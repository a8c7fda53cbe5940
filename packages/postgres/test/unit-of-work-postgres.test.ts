/**
 * A unit of work on PostgreSQL interrupted while one of its statements runs (a request past
 * its deadline, a client gone): the statement is cancelled, the transaction rolls back at
 * once and its locks go with it, instead of the ROLLBACK waiting behind the statement.
 * And its last statement, under UnitOfWork.commitWith, sent with the COMMIT; and a statement
 * deferred to the next one (`statementSteps`' `deferred`), sent with it.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { UnitOfWork } from "@intake/domain"
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Schedule } from "effect"
import { PgReads } from "../src/driver/direct-pool.js"
import { type SqlText, statement } from "../src/driver/statement.js"
import { statementSteps } from "../src/driver/statement-steps.js"
import { StatementAfterCommit } from "../src/driver/transaction-client.js"
import { PostgresTestDatabase } from "../src/testing.js"
import { PgUnitOfWork } from "../src/unit-of-work.js"
import { statementsOf } from "./statements.js"
import { describePostgres } from "./support.js"

const database = PostgresTestDatabase(undefined, {
  maxConnections: 3,
  // Far longer than the test waits: only a cancel can end the statement in time.
  queryTimeout: Duration.seconds(60)
})

/** Statements as the repositories run them, answering their rows: any one, and a unit of work's last. */
const statementsAndRows = Effect.map(statementSteps, ({ step, final, deferred }) => ({
  rowsOf: (sql: SqlText) => step("test", sql, Exit.succeed),
  finalRowsOf: (sql: SqlText) => final("test", sql, Exit.succeed),
  deferredOf: (sql: SqlText) => deferred("deferred test", sql)
}))

const onPostgres = layer(PgUnitOfWork.pipe(Layer.provideMerge(database)), {
  excludeTestServices: true,
  timeout: Duration.seconds(60)
})

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

  onPostgres("a statement deferred to the next one", (it) => {
    const setUp = Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const unitOfWork = yield* UnitOfWork
      const table = `deferred_${Math.random().toString(36).slice(2, 10)}`
      yield* sql.unsafe(`CREATE TABLE ${table} (id int PRIMARY KEY)`)
      const { rowsOf, finalRowsOf, deferredOf } = yield* statementsAndRows
      const { pool } = Option.getOrThrow(yield* Effect.serviceOption(PgReads))
      const insert = (id: number) => ({ text: `INSERT INTO ${table} VALUES ($1)`, values: [id] })
      const insertReturning = (id: number) => ({
        text: `INSERT INTO ${table} VALUES ($1) RETURNING id`,
        values: [id]
      })
      const committed = Effect.promise(() =>
        pool
          .query<{ id: number }>(`SELECT id FROM ${table} ORDER BY id`)
          .then((result) => result.rows.map((row) => row.id))
      )
      // A statement is deferred once it is prepared on the connection: run it first on each of
      // the pool's three connections at once (each unit holds its own), then roll back.
      const warmUp = Effect.forEach(
        [1, 2, 3],
        (id) =>
          Effect.exit(
            unitOfWork.transaction(
              Effect.zipRight(
                deferredOf(insert(id)),
                Effect.zipRight(rowsOf(statement`SELECT pg_sleep(${0.3})`), Effect.fail("undone" as const))
              )
            )
          ),
        { concurrency: "unbounded" }
      )
      // BEGIN alone, prepared on each connection: a unit of work's BEGIN goes with its first statement.
      const warmUpBegin = Effect.forEach(
        [1, 2, 3],
        () => unitOfWork.transaction(rowsOf(statement`SELECT pg_sleep(${0.3})`)),
        { concurrency: "unbounded" }
      )
      /** The statements `work` sends (one entry a round trip) and its exit. */
      const sentBy = <A, E>(work: Effect.Effect<A, E, UnitOfWork | SqlClient.SqlClient>) =>
        Effect.flatMap(Effect.context<UnitOfWork | SqlClient.SqlClient>(), (context) =>
          Effect.promise(() => statementsOf(() => Effect.runPromiseExit(Effect.provide(work, context))))
        )
      return {
        unitOfWork,
        sql,
        table,
        rowsOf,
        finalRowsOf,
        deferredOf,
        insert,
        insertReturning,
        committed,
        warmUp,
        warmUpBegin,
        sentBy
      }
    })

    it.effect("its first run on a connection goes on its own, to be prepared there", () =>
      Effect.gen(function* () {
        const { unitOfWork, rowsOf, deferredOf, insert, insertReturning, committed, warmUpBegin, sentBy } =
          yield* setUp
        yield* warmUpBegin
        const { statements } = yield* sentBy(
          unitOfWork.transaction(Effect.zipRight(deferredOf(insert(1)), rowsOf(insertReturning(2))))
        )
        expect(statements).toEqual([
          expect.stringMatching(/^BEGIN \+ INSERT INTO deferred_\w+ VALUES \(\$1\)$/),
          expect.stringMatching(/^INSERT INTO deferred_\w+ VALUES \(\$1\) RETURNING id$/),
          "COMMIT"
        ])
        expect(yield* committed).toEqual([1, 2])
      })
    )

    it.effect(
      "prepared: it goes in the next statement's write, one round trip, and commits with the unit",
      () =>
        Effect.gen(function* () {
          const { unitOfWork, rowsOf, deferredOf, insert, insertReturning, committed, warmUp, sentBy } =
            yield* setUp
          yield* warmUp
          const { value, statements } = yield* sentBy(
            unitOfWork.transaction(Effect.zipRight(deferredOf(insert(1)), rowsOf(insertReturning(2))))
          )
          // The carrying statement answers its own rows.
          expect(value).toEqual(Exit.succeed([{ id: 2 }]))
          // BEGIN too: the unit's first statement carries it.
          expect(statements).toEqual([
            expect.stringMatching(
              /^BEGIN \+ INSERT INTO deferred_\w+ VALUES \(\$1\) \+ INSERT INTO deferred_\w+ VALUES \(\$1\) RETURNING id$/
            ),
            "COMMIT"
          ])
          expect(yield* committed).toEqual([1, 2])
        })
    )

    it.effect("several, then the unit's last statement: all of them and the COMMIT in one round trip", () =>
      Effect.gen(function* () {
        const { unitOfWork, finalRowsOf, deferredOf, insert, insertReturning, committed, warmUp, sentBy } =
          yield* setUp
        yield* warmUp
        const { statements } = yield* sentBy(
          unitOfWork.transaction(
            Effect.zipRight(
              Effect.zipRight(deferredOf(insert(1)), deferredOf(insert(2))),
              unitOfWork.commitWith(finalRowsOf(insertReturning(3)))
            )
          )
        )
        // The whole unit of work, BEGIN to COMMIT, in one write.
        expect(statements).toEqual([
          expect.stringMatching(
            /^BEGIN \+ (INSERT INTO deferred_\w+ VALUES \(\$1\) \+ ){2}INSERT .* RETURNING id \+ COMMIT$/
          )
        ])
        expect(yield* committed).toEqual([1, 2, 3])
      })
    )

    it.effect(
      "when it fails, the statement that carried it fails with its failure and the whole unit rolls back",
      () =>
        Effect.gen(function* () {
          const { unitOfWork, rowsOf, finalRowsOf, deferredOf, insert, insertReturning, committed, warmUp } =
            yield* setUp
          yield* warmUp
          for (const next of [
            rowsOf(insertReturning(3)),
            unitOfWork.commitWith(finalRowsOf(insertReturning(3)))
          ]) {
            const exit = yield* Effect.exit(
              unitOfWork.transaction(
                Effect.zipRight(rowsOf(insertReturning(1)), Effect.zipRight(deferredOf(insert(1)), next))
              )
            )
            // The duplicate key is the deferred statement's: its step's operation, not the carrier's.
            expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause)).toMatchObject({
              _tag: "Some",
              value: { _tag: "StorageUnavailable", operation: "deferred test" }
            })
            expect(yield* committed).toEqual([])
          }
          // The connections went back to the pool clean: the next unit of work commits.
          yield* unitOfWork.transaction(Effect.zipRight(deferredOf(insert(4)), rowsOf(insertReturning(5))))
          expect(yield* committed).toEqual([4, 5])
        })
    )

    it.effect("the carrier's own failure is still its own", () =>
      Effect.gen(function* () {
        const { unitOfWork, rowsOf, deferredOf, insert, insertReturning, committed, warmUp } = yield* setUp
        yield* warmUp
        const exit = yield* Effect.exit(
          unitOfWork.transaction(
            Effect.zipRight(
              rowsOf(insertReturning(1)),
              Effect.zipRight(deferredOf(insert(2)), rowsOf(insertReturning(1)))
            )
          )
        )
        expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause)).toMatchObject({
          _tag: "Some",
          value: { _tag: "StorageUnavailable", operation: "test" }
        })
        expect(yield* committed).toEqual([])
      })
    )

    it.effect("last in its unit of work: sent with the COMMIT, and its failure rolls the unit back", () =>
      Effect.gen(function* () {
        const { unitOfWork, rowsOf, deferredOf, insert, insertReturning, committed, warmUp, sentBy } =
          yield* setUp
        yield* warmUp
        // The whole unit of work, BEGIN to COMMIT, in one write.
        const { statements } = yield* sentBy(
          unitOfWork.transaction(Effect.zipRight(deferredOf(insert(1)), deferredOf(insert(2))))
        )
        expect(statements).toEqual([
          expect.stringMatching(/^BEGIN \+ INSERT INTO deferred_\w+ VALUES \(\$1\) \+ INSERT .* \+ COMMIT$/)
        ])
        expect(yield* committed).toEqual([1, 2])
        for (const duplicate of [
          Effect.zipRight(deferredOf(insert(1)), deferredOf(insert(3))),
          Effect.zipRight(deferredOf(insert(3)), deferredOf(insert(1)))
        ]) {
          const failed = yield* sentBy(
            unitOfWork.transaction(Effect.zipRight(rowsOf(insertReturning(4)), duplicate))
          )
          expect(Exit.isFailure(failed.value) && Cause.failureOption(failed.value.cause)).toMatchObject({
            _tag: "Some",
            value: { _tag: "StorageUnavailable", operation: "deferred test" }
          })
          expect(failed.statements.at(-2)).toMatch(/ \+ COMMIT$/)
          expect(failed.statements.at(-1)).toBe("ROLLBACK")
          expect(yield* committed).toEqual([1, 2])
        }
        // The connections went back to the pool clean: the next unit of work commits.
        yield* unitOfWork.transaction(deferredOf(insert(5)))
        expect(yield* committed).toEqual([1, 2, 5])
      })
    )

    it.effect("before a statement of @effect/sql, it is sent first, so that statement sees its write", () =>
      Effect.gen(function* () {
        const { unitOfWork, sql, table, deferredOf, insert, committed, warmUp } = yield* setUp
        yield* warmUp
        const counted = yield* unitOfWork.transaction(
          Effect.zipRight(
            deferredOf(insert(1)),
            sql.unsafe<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)
          )
        )
        expect(counted).toEqual([{ n: 1 }])
        expect(yield* committed).toEqual([1])
      })
    )

    it.effect("when the unit fails before a next statement, it is never sent, nor its BEGIN", () =>
      Effect.gen(function* () {
        const { unitOfWork, deferredOf, insert, committed, warmUp, sentBy } = yield* setUp
        yield* warmUp
        const { value, statements } = yield* sentBy(
          unitOfWork.transaction(
            Effect.zipRight(deferredOf(insert(1)), Effect.fail("changed its mind" as const))
          )
        )
        expect(value).toEqual(Exit.fail("changed its mind"))
        expect(statements).toEqual([])
        expect(yield* committed).toEqual([])
      })
    )

    it.effect("a unit of work that runs no statement sends nothing, not even its BEGIN", () =>
      Effect.gen(function* () {
        const { unitOfWork, warmUpBegin, sentBy } = yield* setUp
        yield* warmUpBegin
        const { value, statements } = yield* sentBy(unitOfWork.transaction(Effect.succeed("done" as const)))
        expect(value).toEqual(Exit.succeed("done"))
        expect(statements).toEqual([])
      })
    )

    it.effect(
      "interrupted before its first statement: nothing is sent, and the connection serves the next unit",
      () =>
        Effect.gen(function* () {
          const { unitOfWork, rowsOf, deferredOf, insert, insertReturning, committed, warmUp, sentBy } =
            yield* setUp
          yield* warmUp
          const { statements } = yield* sentBy(
            Effect.gen(function* () {
              const started = yield* Deferred.make<void>()
              const running = yield* Effect.fork(
                unitOfWork.transaction(
                  Effect.zipRight(
                    Deferred.succeed(started, undefined),
                    Effect.zipRight(Effect.never, deferredOf(insert(9)))
                  )
                )
              )
              yield* Deferred.await(started)
              yield* Fiber.interrupt(running)
            })
          )
          expect(statements).toEqual([])
          yield* unitOfWork.transaction(Effect.zipRight(deferredOf(insert(1)), rowsOf(insertReturning(2))))
          expect(yield* committed).toEqual([1, 2])
        })
    )

    it.effect("outside a unit of work it runs at once, as any statement", () =>
      Effect.gen(function* () {
        const { deferredOf, insert, committed } = yield* setUp
        yield* deferredOf(insert(7))
        expect(yield* committed).toEqual([7])
      })
    )
  })
})
