import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { type StorageUnavailable, UnitOfWork } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { sqlDefectsAsFailures, storageFailure } from "./storage.js"

/**
 * A unit of work is one database transaction (READ COMMITTED: the repositories take
 * the locks their rules need). One nested in another runs in it as it is: a savepoint
 * would cost a round trip, and nothing undoes part of a unit of work (see ports.ts).
 */
export const PgUnitOfWork = Layer.effect(
  UnitOfWork,
  Effect.map(SqlClient.SqlClient, (sql) =>
    UnitOfWork.of({
      transaction: <A, E, R>(self: Effect.Effect<A, E, R>) =>
        Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (enclosing) =>
          Option.isSome(enclosing)
            ? self
            : (sql.withTransaction(self).pipe(
                Effect.mapError((error) =>
                  error instanceof SqlError ? storageFailure("transaction", error) : error
                ),
                sqlDefectsAsFailures("transaction")
              ) as Effect.Effect<A, E | StorageUnavailable, R>)
        )
    })
  )
)
