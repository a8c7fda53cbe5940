import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { type StorageUnavailable, UnitOfWork } from "@intake/domain"
import { Context, Effect, Layer, Option } from "effect"
import { PgReads } from "./driver/direct-pool.js"
import { directTransaction } from "./driver/direct-transaction.js"
import { TransactionClient } from "./driver/transaction-client.js"
import { sqlDefectsAsFailures, storageFailure } from "./storage.js"

/** The unit of work's own client on PostgreSQL (none on PGlite, or outside a unit of work). */
const clientOf = (enclosing: Option.Option<Context.Tag.Service<typeof SqlClient.TransactionConnection>>) =>
  Option.isSome(enclosing) && enclosing.value[0] instanceof TransactionClient ? enclosing.value[0] : undefined
/** The enclosing unit of work's transaction connection, read from the fiber's context in one step. */
const withEnclosing = <A, E, R>(
  f: (
    enclosing: Option.Option<Context.Tag.Service<typeof SqlClient.TransactionConnection>>
  ) => Effect.Effect<A, E, R>
) =>
  Effect.withFiberRuntime<A, E, R>((fiber) =>
    f(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))
  )

/**
 * Marks `step` as its unit of work's (or transaction's) last: on PostgreSQL, in a unit of
 * work of its own (not nested), its final statement carries the COMMIT (driver/README.md); elsewhere
 * it runs as it is.
 */
export const commitWithFinal = <A, E, R>(step: Effect.Effect<A, E, R>) =>
  withEnclosing((enclosing) => {
    const client = clientOf(enclosing)
    if (client !== undefined && client.nesting === 0) client.commitsWithFinalStatement = true
    return step
  })

/**
 * A unit of work is one database transaction (READ COMMITTED: the repositories take
 * the locks their rules need). One nested in another runs in it as it is: a savepoint
 * would cost a round trip, and nothing undoes part of a unit of work (see ports.ts).
 * On PostgreSQL it is a client of the pool checked out for it (driver/README.md); on PGlite,
 * `@effect/sql`'s transaction. `commitWith` marks a step as the unit's last: on PostgreSQL
 * its final statement is sent with the COMMIT, unless it runs in a nested unit of work.
 */
export const PgUnitOfWork = Layer.effect(
  UnitOfWork,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const direct = yield* Effect.serviceOption(PgReads)
    const inTransaction = <A, E, R>(
      self: Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | SqlError | StorageUnavailable, R> =>
      Option.isSome(direct) ? directTransaction(direct.value, self) : sql.withTransaction(self)
    return UnitOfWork.of({
      transaction: <A, E, R>(self: Effect.Effect<A, E, R>) =>
        withEnclosing((enclosing) => {
          if (Option.isNone(enclosing)) return runOwn(self)
          // Nested: part of the enclosing unit, whose last statement is not the end of this one.
          const client = clientOf(enclosing)
          if (client === undefined) return self
          client.nesting++
          // Not `ensuring` (a region of its own): an interrupted unit of work is rolled back
          // whole, and its client with its count is not used again.
          return Effect.flatMap(Effect.exit(self), (exit) => {
            client.nesting--
            return exit
          })
        }),
      commitWith: commitWithFinal
    })
    function runOwn<A, E, R>(self: Effect.Effect<A, E, R>) {
      return inTransaction(self).pipe(
        Effect.mapError((error) =>
          error instanceof SqlError ? storageFailure("transaction", error) : error
        ),
        sqlDefectsAsFailures("transaction")
      ) as Effect.Effect<A, E | StorageUnavailable, R>
    }
  })
)
