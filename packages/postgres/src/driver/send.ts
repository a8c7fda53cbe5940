/** One statement sent on pg, its answer resumed as an Effect. */
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit } from "effect"
import type { Pool, PoolClient, Query, QueryConfig, QueryResult } from "pg"
import "./pg-internals.js"

/** What is sent: one of this driver's queries, or a statement's text and values (`@effect/sql`'s, a COMMIT). */
export type Sendable =
  | Query
  | { readonly text: string; readonly values?: ReadonlyArray<unknown>; readonly rowMode?: "array" }

export const failed = (cause: unknown, message = "Failed to execute statement") =>
  new SqlError({ cause, message })

/**
 * One statement, resumed with what `complete` makes of its answer. It registers no canceler:
 * an `Effect.async` with one costs an `onInterrupt` region (a mask, a match and a cleanup
 * step) per statement, and only a unit of work has something to cancel, which
 * `directTransaction` does once, when it is interrupted.
 */
export const sendThen = <A, E>(
  target: Pool | PoolClient,
  config: Sendable,
  inFlight: { pending: number } | undefined,
  complete: (error: Error | undefined, result: QueryResult) => Effect.Effect<A, E>
) =>
  Effect.async<A, E>((resume) => {
    if (inFlight !== undefined) inFlight.pending++
    target.query(config as QueryConfig, (error: Error | undefined, result: QueryResult) => {
      if (inFlight !== undefined) inFlight.pending--
      let next: Effect.Effect<A, E>
      try {
        next = complete(error, result)
      } catch (defect) {
        next = Effect.die(defect)
      }
      resume(next)
    })
  })

export const asResult = <R extends QueryResult>(error: Error | undefined, result: QueryResult) =>
  error ? Exit.fail(failed(error)) : Exit.succeed(result as R)
