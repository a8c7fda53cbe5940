/**
 * A unit of work's client of the pool (TransactionClient): `@effect/sql`'s transaction
 * connection and this driver's, with its deferred statements and the COMMIT its last
 * statement may carry.
 */
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import type { StorageUnavailable } from "@intake/domain/internal"
import { Effect, Exit, Stream } from "effect"
import type { PoolClient, QueryResult } from "pg"
import { type Row, storageFailure } from "../storage.js"
import { CommittingQuery } from "./committing-query.js"
import { sendable, withIsoDates } from "./parameters.js"
import { type DeferredStatement, PreparedQuery, preparedQuery, rowDescriptions } from "./prepared-query.js"
import { asResult, failed, type Sendable, sendThen } from "./send.js"
import { nameOf, type SqlText, UNNAMED } from "./statement.js"

/** A statement sent on a unit of work that has committed: a bug of the caller, never sent. */
export class StatementAfterCommit extends Error {
  constructor(readonly text: string) {
    super(`a statement was sent after its unit of work committed: ${text.slice(0, 80)}`)
  }
}

/**
 * A unit of work's client, as `@effect/sql` takes a transaction's connection (so its
 * `sql` statements inside run on it), and for this module's prepared statements.
 */
export class TransactionClient implements Connection {
  /** An error the client reported between statements: the pool drops it when released. */
  broken: Error | undefined
  /** Statements sent and not yet answered: more than none only when the unit of work was interrupted. */
  pending = 0
  /** Units of work running inside this one (UnitOfWork.transaction nested): their end is not this one's. */
  nesting = 0
  /** Set by UnitOfWork.commitWith: the next final statement outside any nested unit carries the COMMIT. */
  commitsWithFinalStatement = false
  /** The COMMIT went with a statement: nothing more may run on this unit of work. */
  committed = false
  /** Statements deferred to the next one sent (defer), in order. */
  private deferred: Array<DeferredStatement> = []
  /** Something was sent on this unit of work (its BEGIN at least). */
  sent = false
  /**
   * Listens for the client's errors from the moment it is checked out: a checked-out client
   * has no listener of the pool's, and pg emits a lost connection as an `error` event even
   * while a statement (BEGIN included) waits for its answer; unheard, it ends the process.
   */
  constructor(
    readonly client: PoolClient,
    /** Behind a transaction-mode pooler: its statements are unnamed, parsed with each run (PgReads' poolMode). */
    private readonly unnamed = false
  ) {
    client.on("error", this.onError)
  }
  private readonly onError = (error: Error) => {
    this.broken = error
  }
  /** Gives the client back to the pool; with an error (this one's, or one it reported), the pool drops it. */
  release(error?: Error) {
    this.client.off("error", this.onError)
    this.client.release(error ?? this.broken)
  }
  /**
   * A statement of `@effect/sql`'s (as its Connection): its failure is a SqlError, or the
   * StorageUnavailable of a deferred statement sent before it (defer), which the type of
   * `@effect/sql`'s Connection does not name.
   */
  send<R extends QueryResult>(config: Sendable) {
    return this.sendThen(config, asResult<R>) as Effect.Effect<R, SqlError>
  }
  /** `config` sent on this unit of work, after or with the statements deferred to it. */
  sendThen<A, E>(
    config: Sendable,
    complete: (error: Error | undefined, result: QueryResult) => Effect.Effect<A, E>
  ): Effect.Effect<A, E | StorageUnavailable> {
    if (this.committed) {
      return Effect.die(new StatementAfterCommit(config.text))
    }
    this.sent = true
    if (this.deferred.length === 0) return sendThen(this.client, config, this, complete)
    // Another kind of statement (`@effect/sql`'s, a COMMIT of its own): the deferred ones go first.
    if (!(config instanceof PreparedQuery))
      return Effect.zipRight(this.flushDeferred(false), sendThen(this.client, config, this, complete))
    const query = config
    query.carried = this.deferred
    this.deferred = []
    return sendThen<A, E | StorageUnavailable>(this.client, query, this, (error, result) =>
      error !== undefined && query.failedCarried !== undefined
        ? query.failedCarried.onError(failed(error))
        : complete(error, result)
    )
  }
  /**
   * A statement whose answer nothing waits for, sent with the unit of work's next statement
   * in the same write: one round trip less. Carried only once it is prepared on this
   * connection and known to answer no rows (a carried statement is bound and executed, not
   * described); its first run here is sent on its own. When it fails, PostgreSQL skips the
   * rest of the write and the statement that carried it fails with this one's failure.
   */
  defer(
    name: string,
    statement: SqlText,
    onError: (error: SqlError) => Effect.Effect<never, StorageUnavailable>
  ): Effect.Effect<void, StorageUnavailable> {
    if (this.committed) return Effect.die(new StatementAfterCommit(statement.text))
    if (!this.canCarry(name)) return this.step(name, statement, false, () => Exit.void, onError)
    let values: Array<unknown>
    try {
      values = sendable(withIsoDates(statement.values))
    } catch (error) {
      return onError(failed(error))
    }
    this.deferred.push({ name, text: statement.text, values, onError })
    return Exit.void
  }
  /** Defers this unit of work's BEGIN when the connection has it prepared (checkoutInTransaction); tells whether it did. */
  deferBegin(): boolean {
    const begin = this.unnamed ? UNNAMED_BEGIN : NAMED_BEGIN
    if (!this.canCarry(begin.name)) return false
    this.deferred.push(begin)
    return true
  }
  /**
   * Whether the statement `name` is prepared on this connection and known to answer no rows.
   * Unnamed, any is carried, parsed with its run: a deferred statement answers no rows (a
   * row it would answer is not read: PreparedQuery.handleDataRow).
   */
  private canCarry(name: string): boolean {
    if (this.unnamed) return true
    const connection = this.client.connection
    return (
      connection.parsedStatements[name] !== undefined &&
      rowDescriptions.get(connection)?.get(name)?.fields.length === 0
    )
  }
  /** Whether statements other than a deferred BEGIN wait for the next one. */
  get deferredBeyondBegin() {
    return this.deferred.some((deferred) => deferred !== NAMED_BEGIN && deferred !== UNNAMED_BEGIN)
  }
  /** Whether statements wait for the next one (defer). */
  get hasDeferred() {
    return this.deferred.length > 0
  }
  /**
   * The deferred statements sent now, the last one carrying the others; with `commit`, the
   * unit of work's COMMIT too, in the same write (CommittingQuery). When one fails,
   * PostgreSQL skips the rest, COMMIT included, and this fails with that statement's failure.
   */
  flushDeferred(commit: boolean): Effect.Effect<void, StorageUnavailable> {
    const last = this.deferred.pop()
    if (last === undefined) return Exit.void
    const query = preparedQuery(last.name, last.text, last.values, commit ? CommittingQuery : PreparedQuery)
    return this.sendThen(query, (error) => {
      if (error) return last.onError(failed(error))
      if (commit) this.committed = true
      return Exit.void
    })
  }
  /** Drops the deferred statements: the unit of work rolls back. */
  discardDeferred() {
    this.deferred = []
  }
  /**
   * A named statement as a repository step (StatementStep); as the unit of work's last,
   * with its COMMIT when commitWith asked for it.
   */
  step<A, E, R extends object = Row>(
    name: string,
    statement: SqlText,
    final: boolean,
    decode: (rows: ReadonlyArray<R>) => Effect.Effect<A, E>,
    onError: (error: SqlError) => Effect.Effect<A, E | StorageUnavailable>
  ): Effect.Effect<A, E | StorageUnavailable> {
    const values = statement.values
    if (!final || !this.commitsWithFinalStatement || this.nesting > 0)
      return this.sendThen(preparedQuery(name, statement.text, values), (error, result) =>
        error ? onError(failed(error)) : decode(result.rows)
      )
    return this.sendThen(preparedQuery(name, statement.text, values, CommittingQuery), (error, results) => {
      if (error) return onError(failed(error))
      this.committed = true
      const [result] = results as unknown as ReadonlyArray<QueryResult>
      return decode(result?.rows ?? [])
    })
  }
  rows<R extends object = Row>(config: Sendable): Effect.Effect<ReadonlyArray<R>, SqlError> {
    return Effect.map(this.send(config), (result) => result.rows)
  }
  execute(
    text: string,
    values: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const rows = this.rows({ text, values })
    return transformRows === undefined ? rows : Effect.map(rows, (rows) => transformRows(rows))
  }
  executeRaw(text: string, values: ReadonlyArray<unknown>) {
    return this.send({ text, values })
  }
  executeStream(
    text: string,
    values: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return Stream.flatMap(Stream.fromEffect(this.execute(text, values, transformRows)), Stream.fromIterable)
  }
  executeValues(text: string, values: ReadonlyArray<unknown>) {
    return this.rows<ReadonlyArray<unknown>>({ text, values, rowMode: "array" })
  }
  executeUnprepared(
    text: string,
    values: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return this.execute(text, values, transformRows)
  }
}

/** BEGIN as a named prepared statement: once prepared on a connection, a unit of work defers it. */
export const BEGIN: SqlText = { text: "BEGIN", values: [] }
export const BEGIN_NAME = nameOf(BEGIN.text)
const beginFailed = (error: SqlError) => Exit.fail(storageFailure("transaction", error))
/** BEGIN deferred to a unit of work's first statement (TransactionClient.deferBegin): named, or unnamed behind a transaction-mode pooler. */
const NAMED_BEGIN: DeferredStatement = {
  name: BEGIN_NAME,
  text: BEGIN.text,
  values: [],
  onError: beginFailed
}
const UNNAMED_BEGIN: DeferredStatement = { name: UNNAMED, text: BEGIN.text, values: [], onError: beginFailed }
