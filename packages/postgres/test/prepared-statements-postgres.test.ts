/**
 * A named statement run again on a connection that has prepared it is sent without asking
 * PostgreSQL to describe its rows again (driver/prepared-query.ts, PreparedQuery): its rows read exactly as
 * on its first run, and a value that cannot be sent fails that statement alone. A Date
 * parameter names the same instant on every run.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { StorageUnavailable, UnitOfWork } from "@intake/domain"
import { Context, Deferred, Duration, Effect, Exit, Layer } from "effect"
import type { PoolClient } from "pg"
import { type SqlText, statement } from "../src/driver/statement.js"
import { statementSteps } from "../src/driver/statement-steps.js"
import { TransactionClient } from "../src/driver/transaction-client.js"
import { PostgresTestDatabase } from "../src/testing.js"
import { PgUnitOfWork } from "../src/unit-of-work.js"
import { describePostgres } from "./support.js"

const onPostgres = layer(PgUnitOfWork.pipe(Layer.provideMerge(PostgresTestDatabase())), {
  excludeTestServices: true,
  timeout: Duration.seconds(60)
})

/** The unit of work's pg client, with a count of the Describe messages sent on its connection. */
const describesCounted = Effect.map(Effect.context<never>(), (context) => {
  const [connection] = Context.unsafeGet(context, SqlClient.TransactionConnection)
  if (!(connection instanceof TransactionClient)) throw new Error("not a unit of work on pg")
  const wire = (connection.client as PoolClient & { connection: { describe: (config: unknown) => void } })
    .connection
  const counted = { describes: 0 }
  const describe = wire.describe
  wire.describe = function (this: unknown, config: unknown) {
    counted.describes++
    return describe.call(this, config)
  }
  return counted
})

const rowsOf = (sql: SqlText) =>
  Effect.flatMap(statementSteps, ({ step }) => step("test", sql, (rows) => Exit.succeed(rows)))

const base = new Date(Date.UTC(2026, 10, 21, 10, 0, 0, 123))

/** One statement with columns of several types (an int, a jsonb, a timestamptz, a null) and a Date parameter. */
const typedRow = (n: unknown) =>
  statement`SELECT ${n}::int AS n, jsonb_build_object('n', ${n}::int) AS doc,
    ${base}::timestamptz + make_interval(secs => ${n}::int) AS at, NULL::text AS missing,
    ${base}::timestamptz = '2026-11-21 11:00:00.123+01'::timestamptz AS same_instant`

const expectedRow = (n: number) => ({
  n,
  doc: { n },
  at: new Date(Date.UTC(2026, 10, 21, 10, 0, n, 123)),
  missing: null,
  same_instant: true
})

describePostgres("named statements on PostgreSQL", () => {
  onPostgres("run again on the connection that prepared them", (it) => {
    it.effect("are described once: the later runs read their rows as the first did", () =>
      Effect.gen(function* () {
        const unitOfWork = yield* UnitOfWork
        const [rows, describes] = yield* unitOfWork.transaction(
          Effect.gen(function* () {
            const counted = yield* describesCounted
            const rows = [yield* rowsOf(typedRow(1)), yield* rowsOf(typedRow(2)), yield* rowsOf(typedRow(3))]
            return [rows, counted.describes] as const
          })
        )
        expect(rows).toEqual([[expectedRow(1)], [expectedRow(2)], [expectedRow(3)]])
        expect(describes).toBe(1)
      })
    )

    it.effect("without rows, are described once too", () =>
      Effect.gen(function* () {
        const unitOfWork = yield* UnitOfWork
        const sql = yield* SqlClient.SqlClient
        const [answers, describes, stored] = yield* unitOfWork.transaction(
          Effect.gen(function* () {
            yield* sql`CREATE TEMPORARY TABLE noted (n int NOT NULL) ON COMMIT DROP`
            const counted = yield* describesCounted
            const insert = (n: number) => rowsOf(statement`INSERT INTO noted (n) VALUES (${n})`)
            const answers = [yield* insert(1), yield* insert(2), yield* insert(3)]
            const stored = yield* rowsOf(statement`SELECT array_agg(n ORDER BY n) AS ns FROM noted`)
            return [answers, counted.describes, stored] as const
          })
        )
        expect(answers).toEqual([[], [], []])
        // The INSERT once, and the SELECT on its first run.
        expect(describes).toBe(2)
        expect(stored).toEqual([{ ns: [1, 2, 3] }])
      })
    )

    it.effect("answered with other columns on another connection: each connection reads its own", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const unitOfWork = yield* UnitOfWork
        yield* sql`CREATE SCHEMA one`
        yield* sql`CREATE TABLE one.t (x int NOT NULL)`
        yield* sql`INSERT INTO one.t VALUES (1)`
        yield* sql`CREATE SCHEMA two`
        yield* sql`CREATE TABLE two.t (y text NOT NULL, z int NOT NULL)`
        yield* sql`INSERT INTO two.t VALUES ('a', 2)`
        // Both units of work stay open until both have run the statement once: two connections.
        const firstRuns = yield* Deferred.make<void>()
        let ran = 0
        const inSchema = (schema: string) =>
          unitOfWork.transaction(
            Effect.gen(function* () {
              yield* sql.unsafe(`SET LOCAL search_path = ${schema}`)
              const first = yield* rowsOf(statement`SELECT * FROM t`)
              if (++ran === 2) yield* Deferred.succeed(firstRuns, undefined)
              yield* Deferred.await(firstRuns)
              return [first, yield* rowsOf(statement`SELECT * FROM t`)]
            })
          )
        const [one, two] = yield* Effect.all([inSchema("one"), inSchema("two")], { concurrency: 2 })
        expect(one).toEqual([[{ x: 1 }], [{ x: 1 }]])
        expect(two).toEqual([[{ y: "a", z: 2 }], [{ y: "a", z: 2 }]])
      })
    )

    it.effect(
      "a value that cannot be sent fails that statement alone; the next runs on the same transaction",
      () =>
        Effect.gen(function* () {
          const unitOfWork = yield* UnitOfWork
          const circular: { self?: unknown } = {}
          circular.self = circular
          const [failed, after] = yield* unitOfWork.transaction(
            Effect.gen(function* () {
              yield* rowsOf(typedRow(4))
              const failed = yield* Effect.exit(rowsOf(typedRow(circular)))
              return [failed, yield* rowsOf(typedRow(5))] as const
            })
          )
          expect(Exit.isFailure(failed) && failed.cause._tag === "Fail" && failed.cause.error).toBeInstanceOf(
            StorageUnavailable
          )
          expect(after).toEqual([expectedRow(5)])
        })
    )
  })
})
