import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { type StorageUnavailable, UnitOfWork } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { directTransaction, PgReads } from "./reads.js"
import { sqlDefectsAsFailures, storageFailure } from "./storage.js"

/**
 * A unit of work is one database transaction (READ COMMITTED: the repositories take
 * the locks their rules need). One nested in another runs in it as it is: a savepoint
 * would cost a round trip, and nothing undoes part of a unit of work (see ports.ts).
 * On PostgreSQL it is a client of the pool checked out for it (reads.ts); on PGlite,
 * `@effect/sql`'s transaction.
 */
export const PgUnitOfWork = Layer.effect(
  UnitOfWork,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const direct = yield* Effect.serviceOption(PgReads)
    const inTransaction = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Option.isSome(direct) ? directTransaction(direct.value.pool, self) : sql.withTransaction(self)
    return UnitOfWork.of({
      transaction: <A, E, R>(self: Effect.Effect<A, E, R>) =>
        Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (enclosing) =>
          Option.isSome(enclosing)
            ? self
            : (inTransaction(self).pipe(
                Effect.mapError((error) =>
                  error instanceof SqlError ? storageFailure("transaction", error) : error
                ),
                sqlDefectsAsFailures("transaction")
              ) as Effect.Effect<A, E | StorageUnavailable, R>)
        )
    })
  })
)
