/** A statement carrying its unit of work's COMMIT in the same write (UnitOfWork.commitWith). */
import type { PgConnection } from "./pg-internals.js"
import { PreparedQuery } from "./prepared-query.js"

/**
 * A query whose COMMIT follows it in the same write (extended protocol: the statement's
 * Bind and Execute, then COMMIT's Parse, Bind and Execute, then one Sync). When the
 * statement fails, PostgreSQL skips everything up to the Sync, COMMIT included, and the
 * transaction stays open and failed for the ROLLBACK. Its result is the statement's and the
 * COMMIT's (pg answers an array of two).
 */
export class CommittingQuery extends PreparedQuery {
  /** Read by the round-trip counters (bench/round-trips.ts, the tests'), which see pg's queries only. */
  readonly carriesCommit = true
  override _getRows(connection: PgConnection, rows: number | undefined) {
    connection.execute({ portal: this.portal ?? "", rows })
    connection.parse({ text: "COMMIT", name: "", types: [] })
    connection.bind({})
    connection.execute({})
    connection.sync()
  }
}

/** Whether `query` is a statement sent with its unit of work's COMMIT (for counting round trips). */
export const carriesCommit = (query: unknown): boolean => query instanceof CommittingQuery
