/** A unit of work on PostgreSQL: one client of the pool, in a transaction (directTransaction). */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type { StorageUnavailable } from "@intake/domain/internal"
import { Context, Effect, Exit, FiberRef } from "effect"
import type { QueryConfig } from "pg"
import { cancelStatement } from "./cancel.js"
import type { PgReads } from "./direct-pool.js"
import { preparedQuery } from "./prepared-query.js"
import { failed } from "./send.js"
import { BEGIN, BEGIN_NAME, TransactionClient } from "./transaction-client.js"

/** The error a client is released with when its BEGIN came back to no one: the pool drops it. */
const unclaimed = new Error("a transaction's client came back to a fiber that was interrupted")

/**
 * A client of the pool for a unit of work, its BEGIN deferred to the unit's first statement
 * (TransactionClient.defer): one round trip less. On a connection that has not prepared
 * BEGIN yet, BEGIN is sent now, on its own, as a named statement to be carried next time;
 * unnamed (behind a transaction-mode pooler), it is always carried, parsed with it.
 * A client that arrives, or whose BEGIN is answered, after the fiber waiting for it was
 * interrupted goes back to the pool at once (dropped once BEGIN was sent: its session is in
 * a transaction).
 */
const checkoutInTransaction = ({ pool, poolMode }: PgReads["Type"]) =>
  Effect.async<TransactionClient, SqlError>((resume) => {
    let abandoned = false
    pool.connect((error, client, release) => {
      if (error || client === undefined)
        return resume(
          Exit.fail(
            failed(error ?? new Error("No client returned"), "Failed to acquire connection for transaction")
          )
        )
      if (abandoned) return release()
      const connection = new TransactionClient(client, poolMode === "transaction")
      if (connection.deferBegin()) return resume(Exit.succeed(connection))
      connection.sent = true
      client.query(
        preparedQuery(BEGIN_NAME, BEGIN.text, []) as unknown as QueryConfig,
        (beginError: Error | undefined) => {
          if (beginError) {
            connection.release(beginError)
            return resume(Exit.fail(failed(beginError)))
          }
          if (abandoned) return connection.release(unclaimed)
          resume(Exit.succeed(connection))
        }
      )
    })
    return Effect.sync(() => {
      abandoned = true
    })
  })

/**
 * `self` in a transaction on one client of the pool: BEGIN, then COMMIT when it succeeds,
 * ROLLBACK otherwise (an interruption included; a statement it left running is cancelled
 * first). The client goes back to the pool, or is dropped when a COMMIT or ROLLBACK failed
 * or it reported an error: a session in an unknown state never serves another statement.
 * A COMMIT that failed fails with its SqlError. The client is set in the fiber's context as
 * `@effect/sql`'s transaction connection for `self`, and the context restored after it: by
 * hand, in this uninterruptible region, where `Effect.provideService` would wrap `self` in
 * a region of its own (about fifteen steps of the fiber; docs/performance.md).
 */
export const directTransaction = <A, E, R>(
  reads: PgReads["Type"],
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError | StorageUnavailable, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(restore(checkoutInTransaction(reads)), (connection) =>
      Effect.withFiberRuntime<A, E | SqlError | StorageUnavailable, R>((fiber) => {
        const release = (error?: Error) => connection.release(error)
        const outer = fiber.currentContext
        const inside = Context.add(outer, SqlClient.TransactionConnection, [connection, 0] as const)
        /** Ends the transaction as `exit` says, then answers `exit` (or the COMMIT's failure). */
        const end = (
          exit: Exit.Exit<A, E | StorageUnavailable>
        ): Effect.Effect<A, E | SqlError | StorageUnavailable> => {
          // Committed with its last statement: nothing left to send, whatever came after it.
          // Nothing sent, and nothing to send but BEGIN or a failed unit's statements: nothing
          // to commit or roll back.
          if (
            connection.committed ||
            (!connection.sent && (Exit.isFailure(exit) || !connection.deferredBeyondBegin))
          ) {
            connection.discardDeferred()
            release()
            return exit
          }
          // Statements still deferred go with the COMMIT; when one fails, the unit rolls back.
          if (Exit.isSuccess(exit) && connection.hasDeferred)
            return Effect.flatMap(Effect.exit(connection.flushDeferred(true)), (flushed) =>
              end(Exit.isSuccess(flushed) ? exit : (flushed as Exit.Exit<never, StorageUnavailable>))
            )
          connection.discardDeferred()
          if (Exit.isSuccess(exit))
            return connection.sendThen<A, E | SqlError | StorageUnavailable>({ text: "COMMIT" }, (error) => {
              release(error)
              return error ? Exit.fail(failed(error)) : exit
            })
          const rollback = connection.sendThen<A, E | SqlError | StorageUnavailable>(
            { text: "ROLLBACK" },
            (error) => {
              release(error)
              return exit
            }
          )
          // Interrupted mid-statement: the statement is ended first, or the ROLLBACK queued
          // behind it would wait for it (a lock wait, a slow query).
          return connection.pending > 0
            ? Effect.zipRight(cancelStatement(connection.client), rollback)
            : rollback
        }
        return Effect.zipRight(
          FiberRef.set(FiberRef.currentContext, inside),
          Effect.flatMap(Effect.exit(restore(self)), (exit) =>
            Effect.zipRight(FiberRef.set(FiberRef.currentContext, outer), end(exit))
          )
        )
      })
    )
  )
