/**
 * A named prepared statement as pg's Query (PreparedQuery): described once per connection,
 * carrying the unit of work's deferred statements in its write (TransactionClient.defer).
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { StorageUnavailable } from "@intake/domain/internal"
import type { Effect } from "effect"
import { DatabaseError, Query } from "pg"
import { sendable, withIsoDates } from "./parameters.js"
import type { PgConnection, RowDescription } from "./pg-internals.js"
import { UNNAMED } from "./statement.js"

/** The row description of a statement without rows, as pg starts every result. */
const noRows: RowDescription = { fields: [], _parsers: undefined, _prebuiltEmptyResultObject: null }

/**
 * The row description of each named statement a connection has run, by statement name, as
 * PostgreSQL gave it there: prepared statements, and their result columns, are a session's
 * own (two databases in one process may answer the same text with other columns).
 */
export const rowDescriptions = new WeakMap<PgConnection, Map<string, RowDescription>>()

/**
 * A named prepared statement whose rows are described once per connection. pg asks
 * PostgreSQL to describe every execution's rows and rebuilds its reading of them from that
 * answer (the column parsers, the row template). Once a connection has prepared a
 * statement, PostgreSQL keeps its result columns fixed there (a schema change that would
 * alter them fails the execution with "cached plan must not change result type"), so on
 * that connection this sends Bind and Execute only, and reads the rows with the
 * description kept from the statement's first run on it (docs/performance.md, Statements on pg).
 */
export class PreparedQuery extends Query {
  /** Statements of the unit of work sent ahead of this one, in the same write (TransactionClient.defer). */
  carried: ReadonlyArray<DeferredStatement> = []
  /** The carried statement that failed, when PostgreSQL failed one of them (the rest were skipped). */
  failedCarried: DeferredStatement | undefined = undefined
  /** Carried statements not yet answered: each answers one CommandComplete, before this one's. */
  private carriedLeft = 0
  override prepare(connection: PgConnection) {
    // pg's Query.submit corks the socket around prepare: all of it goes in one write.
    this.carriedLeft = this.carried.length
    // Bind and Execute only: a statement is carried once it is prepared on this connection;
    // unnamed (behind a transaction-mode pooler), it is parsed first, in the same write.
    for (const carried of this.carried) {
      if (carried.name === UNNAMED) connection.parse({ text: carried.text, name: UNNAMED, types: [] })
      connection.bind({ portal: "", statement: carried.name, values: carried.values, binary: false })
      connection.execute({ portal: "", rows: undefined })
    }
    this.prepareOwn(connection)
  }
  override handleError(error: unknown, connection: PgConnection) {
    // PostgreSQL answers the first failure and skips the rest up to the Sync: a carried
    // statement not yet complete is the one that failed.
    if (this.carriedLeft > 0 && error instanceof DatabaseError && !this.hasOwnFailure())
      this.failedCarried = this.carried[this.carried.length - this.carriedLeft]
    super.handleError(error, connection)
  }
  private hasOwnFailure() {
    return Boolean(this._canceledDueToError)
  }
  private prepareOwn(connection: PgConnection) {
    const described = rowDescriptions.get(connection)?.get(this.name)
    if (described === undefined || !this.hasBeenParsed(connection)) return super.prepare(connection)
    this.known = true
    let values: Array<unknown>
    try {
      values = sendable(this.values)
    } catch (error) {
      // Nothing was written: the statement fails when PostgreSQL answers the Sync, as pg
      // fails one whose row it cannot read, and stays prepared on this connection.
      this._canceledDueToError = error
      connection.sync()
      return
    }
    connection.bind({ portal: this.portal, statement: this.name, values, binary: this.binary })
    this._result.fields = described.fields
    this._result._parsers = described._parsers
    this._result._prebuiltEmptyResultObject = described._prebuiltEmptyResultObject
    // As pg's handleRowDescription sets it: the rows go into the result (a callback is given).
    this._accumulateRows = true
    this._getRows(connection, this.rows)
  }
  override handleDataRow(message: unknown) {
    // A carried statement answers no rows (defer); were one to, its rows are not this one's.
    if (this.carriedLeft > 0) return
    super.handleDataRow(message)
  }
  override handleRowDescription(message: unknown) {
    super.handleRowDescription(message)
    if (this.described === undefined) {
      const { fields, _parsers, _prebuiltEmptyResultObject } = this._result
      this.described = { fields, _parsers, _prebuiltEmptyResultObject }
    }
  }
  override handleCommandComplete(message: unknown, connection: PgConnection) {
    if (this.carriedLeft > 0) {
      this.carriedLeft--
      return
    }
    // The statement's first run on this connection is done: its rows' description is kept,
    // or that it has none (PostgreSQL answered Describe with NoData).
    if (!this.known) {
      this.known = true
      let kept = rowDescriptions.get(connection)
      if (kept === undefined) {
        kept = new Map()
        rowDescriptions.set(connection, kept)
      }
      if (!kept.has(this.name)) kept.set(this.name, this.described ?? noRows)
    }
    super.handleCommandComplete(message, connection)
  }
  /** Whether this connection already holds the statement's description (or this run has kept it). */
  private known = false
  /** The description PostgreSQL gave this run, when it was asked for one. */
  private described: RowDescription | undefined = undefined
}

/**
 * A named prepared statement as a PreparedQuery, built from its text: given a config
 * object, pg copies it (every property descriptor) on each statement, which cost about 2%
 * of a create's CPU; given a text it copies nothing, and the name is set on the query.
 * Named "" (UNNAMED, behind a transaction-mode pooler), it is PostgreSQL's unnamed statement,
 * parsed with each run and in the same write (Parse, Bind, Describe, Execute, Sync), on the
 * extended protocol even without values, so that a CommittingQuery still carries its COMMIT.
 */
export const preparedQuery = (
  name: string,
  text: string,
  values: ReadonlyArray<unknown>,
  kind: new (text: string, values: ReadonlyArray<unknown>) => PreparedQuery = PreparedQuery
): PreparedQuery => {
  const query = new kind(text, withIsoDates(values))
  query.name = name
  if (name === UNNAMED) query.queryMode = "extended"
  return query
}

/**
 * A statement of a unit of work whose answer nothing waits for (an INSERT that returns no
 * rows), held back to go with the unit's next statement, in the same write
 * (TransactionClient.defer).
 */
export interface DeferredStatement {
  readonly name: string
  readonly text: string
  /** Its values as pg sends them. */
  readonly values: ReadonlyArray<unknown>
  /**
   * Its failure as its own step reports it: the statement that carried it fails with this,
   * typed as that statement's StorageUnavailable (DeferredStep).
   */
  readonly onError: (error: SqlError) => Effect.Effect<never, StorageUnavailable>
}

/** The texts of the statements `query` carries ahead of its own (TransactionClient.defer; for counting round trips). */
export const carriedStatements = (query: unknown): ReadonlyArray<string> =>
  query instanceof PreparedQuery ? query.carried.map((carried) => carried.text) : []
