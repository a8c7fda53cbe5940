import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { type StorageUnavailable, UnitOfWork } from "@intake/domain"
import { Effect, Layer } from "effect"
import { sqlDefectsAsFailures, storageFailure } from "./storage.js"

/**
 * A unit of work is one database transaction (READ COMMITTED: the repositories take
 * the locks their rules need); a nested one is a savepoint, which Idempotency.run
 * relies on to undo a failed operation but keep the response it stores.
 */
export const PgUnitOfWork = Layer.effect(
  UnitOfWork,
  Effect.map(SqlClient.SqlClient, (sql) =>
    UnitOfWork.of({
      transaction: <A, E, R>(self: Effect.Effect<A, E, R>) =>
        sql.withTransaction(self).pipe(
          Effect.mapError((error) =>
            error instanceof SqlError ? storageFailure("transaction", error) : error
          ),
          sqlDefectsAsFailures("transaction")
        ) as Effect.Effect<A, E | StorageUnavailable, R>
    })
  )
)
