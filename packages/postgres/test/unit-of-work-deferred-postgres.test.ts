/**
 * A statement deferred to the next one on PostgreSQL (`statementSteps`' `deferred`): sent in
 * the write of the unit's next statement, or with its COMMIT (docs/performance.md, Round
 * trips of a create).
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { UnitOfWork } from "@intake/domain"
import { Cause, Deferred, Effect, Exit, Fiber, Option } from "effect"
import { PgReads } from "../src/driver/direct-pool.js"
import { statement } from "../src/driver/statement.js"
import { statementsOf } from "./statements.js"
import { describePostgres } from "./support.js"
import { onPostgres, statementsAndRows } from "./unit-of-work-support.js"

describePostgres("a unit of work on PostgreSQL", () => {
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
