/** What every repository of this package shares: error mapping and value conversions at the edge. */

import { SqlError } from "@effect/sql/SqlError"
import { StorageUnavailable } from "@intake/domain"
import { Effect, Option } from "effect"

/** A database failure, as the domain sees it; the SqlError stays as the cause, for logs. */
export const storageFailure = (operation: string, cause: unknown): StorageUnavailable =>
  new StorageUnavailable({ operation, cause })

/** Whether `error` is a statement's failure with SQLSTATE `code` (as the driver reports it). */
export const hasSqlState = (error: unknown, code: string): error is SqlError =>
  error instanceof SqlError && (error.cause as { readonly code?: unknown } | undefined)?.code === code

/** Runs one repository step, turning SqlError into StorageUnavailable. */
export const stored =
  (operation: string) =>
  <A, E, R>(
    self: Effect.Effect<A, E | SqlError, R>
  ): Effect.Effect<A, Exclude<E, SqlError> | StorageUnavailable, R> =>
    Effect.catchIf(
      self,
      (error): error is SqlError => error instanceof SqlError,
      (error) => Effect.fail(storageFailure(operation, error))
    ) as Effect.Effect<A, Exclude<E, SqlError> | StorageUnavailable, R>

/**
 * `@effect/sql` turns a failed COMMIT or ROLLBACK into a defect (`Effect.orDie`); a
 * database that went away mid-transaction is still a storage failure, not a bug.
 */
export const sqlDefectsAsFailures =
  (operation: string) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | StorageUnavailable, R> =>
    Effect.catchSomeDefect(self, (defect) =>
      defect instanceof SqlError ? Option.some(Effect.fail(storageFailure(operation, defect))) : Option.none()
    )

export const toDate = (millis: number): Date => new Date(millis)
export const toDateOrNull = (millis: number | null): Date | null =>
  millis === null ? null : new Date(millis)

/** A timestamptz as the driver returned it (a Date from both pg and PGlite) to epoch ms. */
export const toMillis = (value: unknown): number =>
  value instanceof Date ? value.getTime() : Date.parse(String(value))
export const toMillisOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : toMillis(value)

/** int4 arrives as a number, int8 and numeric as strings. */
export const toNumber = (value: unknown): number => (typeof value === "number" ? value : Number(value))

/**
 * A json parameter as text. `sql.json` hands the value to `pg`, which sends a JS array
 * as a Postgres array literal; a string with a `::json` cast is the same on pg and PGlite.
 */
export const jsonText = (value: unknown): string => JSON.stringify(value)

/** A json column as the driver returned it (both parse json; a string is parsed here). */
export const fromJson = <A>(value: unknown): A => (typeof value === "string" ? JSON.parse(value) : value) as A

export type Row = Readonly<Record<string, unknown>>

/**
 * Runs a purge statement (one answering `purged`, the rows it deleted) until it deletes
 * fewer than `batchSize`: each batch its own short statement, so a large backlog holds no
 * long lock and stays within the pool's query timeout. Answers how many rows went in all.
 */
export const purgedInBatches = <E, R>(batchSize: number, batch: Effect.Effect<ReadonlyArray<Row>, E, R>) =>
  Effect.gen(function* () {
    let total = 0
    for (;;) {
      const rows = yield* batch
      const purged = toNumber(rows[0]?.purged ?? 0)
      total += purged
      if (purged < batchSize) return total
    }
  })
