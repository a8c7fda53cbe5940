/**
 * Statements on `pg` directly, as named prepared statements (`statementSteps`). `@effect/sql` costs about as
 * much CPU again as the driver per statement (measured: 510 against 250 us for a page of
 * fifty rows; docs/performance.md, "Statements on pg"): the hot reads and every
 * statement of a create go through here on PostgreSQL.
 *
 * A unit of work on PostgreSQL is one client of the pool checked out for it
 * (`directTransaction`): its statements, these and `@effect/sql`'s alike, run on that client,
 * which it offers to `@effect/sql` as its transaction connection. Outside a unit of work
 * these statements run on the pool. PGlite has one session, shared with any open
 * transaction: there they go through SqlClient, as do statements inside a transaction
 * `@effect/sql` opened itself.
 *
 * A unit of work's last statement may carry its COMMIT (`statementSteps`' `final`,
 * `UnitOfWork.commitWith`): both go in one write and PostgreSQL runs the COMMIT as soon as
 * the statement is done, without waiting for this process to answer. A create's last
 * statement locks the workspace's usage counter, so that lock is held for the statement and
 * the commit only, not for a turn of a busy event loop in between (docs/performance.md, "Round
 * trips of a create"). A statement whose answer nothing waits for (`statementSteps`'
 * `deferred`: a create's claim, contact and events and stored response, every unit's
 * BEGIN) goes with the unit's next statement, in its write, or with its COMMIT.
 *
 * Behind a transaction-mode pooler (PgReads' `poolMode`, docs/deploy-postgres.md) no
 * statement is named: each is parsed with its run, in the same write (Parse, Bind, Execute
 * for each carried one, then its own, one Sync), so a unit of work takes as many round trips
 * as on a direct connection; the choice is made once, when the layer is built.
 */
import { createHash } from "node:crypto"
import { connect } from "node:net"
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { type StorageUnavailable, TraceContext, WireShapes } from "@intake/domain/internal"
import { Context, Effect, Exit, FiberRef, Option, Stream } from "effect"
import {
  DatabaseError,
  type Pool,
  type PoolClient,
  Query,
  type QueryArrayConfig,
  type QueryConfig,
  type QueryResult
} from "pg"
import pgUtils from "pg/lib/utils.js"
import { serialize } from "pg-protocol"
import { type Row, storageFailure } from "./storage.js"

export interface SqlText {
  readonly text: string
  readonly values: ReadonlyArray<unknown>
}

const texts = new WeakMap<TemplateStringsArray, string>()

/** A statement written as a template: each value becomes a parameter (`$1`, `$2`...), never text. */
export const statement = (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): SqlText => {
  let text = texts.get(strings)
  if (text === undefined) {
    text = strings.reduce((joined, part, index) => `${joined}$${index}${part}`)
    texts.set(strings, text)
  }
  return { text, values }
}

/**
 * What sits between Intake and PostgreSQL (docs/deploy-postgres.md, PgBouncer): `session`, a
 * direct connection or a session-mode pooler, where a connection keeps its session; or
 * `transaction`, a transaction-mode pooler (PgBouncer), which may give each transaction, and
 * each statement outside one, another server session. There no statement is named: a
 * statement prepared under a name on one session is not prepared on the next.
 */
export type PoolMode = "session" | "transaction"

/** The pg pool of a PostgreSQL database, for statements sent to it directly, and what is between them. */
export class PgReads extends Context.Tag("@intake/postgres/PgReads")<
  PgReads,
  { readonly pool: Pool; readonly poolMode: PoolMode }
>() {}

export const makePgReads = (pool: Pool, poolMode: PoolMode = "session"): PgReads["Type"] => ({
  pool,
  poolMode
})

// One name per statement text: pg prepares it once per connection, then only binds.
const names = new Map<string, string>()
const nameOf = (text: string) => {
  let name = names.get(text)
  if (name === undefined) {
    name = `intake_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`
    names.set(text, name)
  }
  return name
}

const failed = (cause: unknown, message = "Failed to execute statement") => new SqlError({ cause, message })

/** How long a cancel request may take to be delivered (connect, send, PostgreSQL closes). */
const CANCEL_TIMEOUT_MS = 5_000

/** What pg's client knows of its session (not all of it in @types/pg). */
interface SessionOf {
  readonly processID?: number | null
  readonly secretKey?: number | null
  readonly host?: string
  readonly port?: number
}

/**
 * PostgreSQL ends the statement a transaction's client still runs (best effort): its answer
 * comes, and the ROLLBACK queued behind it runs. The cancel goes as the protocol's
 * CancelRequest on a connection of its own, never as a statement on a session of the pool:
 * when every session of the pool is held by a unit of work being interrupted (a burst of
 * clients gone, of deadlines passed), a cancel that needed one would wait for the
 * statements it should end, and their locks with them. Settled when PostgreSQL closes that
 * connection (it has signalled the session), on an error, or after CANCEL_TIMEOUT_MS.
 */
const cancelStatement = (client: PoolClient) =>
  Effect.async<void>((resume) => {
    const { processID, secretKey, host, port } = client as unknown as SessionOf
    if (processID == null || secretKey == null || host === undefined || port === undefined)
      return resume(Effect.void)
    const socket = host.startsWith("/") ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host)
    let settled = false
    const settle = () => {
      if (settled) return
      settled = true
      socket.destroy()
      resume(Effect.void)
    }
    socket.setTimeout(CANCEL_TIMEOUT_MS, settle)
    socket.once("error", settle)
    socket.once("close", settle)
    socket.once("connect", () => socket.end(serialize.cancel(processID, secretKey)))
    return Effect.sync(settle)
  })

/** What pg keeps of a statement's row description to read its rows (not in @types/pg). */
interface RowDescription {
  readonly fields: Array<unknown>
  readonly _parsers: Array<unknown> | undefined
  readonly _prebuiltEmptyResultObject: object | null
}

/** pg's Query and Result, as far as PreparedQuery uses them (internals, not in @types/pg). */
interface QueryInternals {
  readonly name: string
  readonly values: Array<unknown> | undefined
  readonly portal: string
  readonly binary: boolean | undefined
  readonly rows: number | undefined
  _accumulateRows: boolean
  _canceledDueToError: unknown
  readonly _result: { -readonly [K in keyof RowDescription]: RowDescription[K] }
  hasBeenParsed(connection: PgConnection): boolean
  _getRows(connection: PgConnection, rows: number | undefined): void
}

/** pg's own Query methods that PreparedQuery goes on to (not in @types/pg). */
const pgQuery = Query.prototype as unknown as {
  prepare(this: Query, connection: PgConnection): void
  handleError(this: Query, error: unknown, connection: PgConnection): void
  handleRowDescription(this: Query, message: unknown): void
  handleDataRow(this: Query, message: unknown): void
  handleCommandComplete(this: Query, message: unknown, connection: PgConnection): void
}

/** A statement's values as pg sends them (text, bytes or null); throws what pg throws for one it cannot send. */
const sendable = (values: Array<unknown> | undefined): Array<unknown> => {
  if (values === undefined) return []
  const sent = new Array<unknown>(values.length)
  for (let index = 0; index < values.length; index++) sent[index] = pgUtils.prepareValue(values[index])
  return sent
}

/** The row description of a statement without rows, as pg starts every result. */
const noRows: RowDescription = { fields: [], _parsers: undefined, _prebuiltEmptyResultObject: null }

/**
 * The row description of each named statement a connection has run, by statement name, as
 * PostgreSQL gave it there: prepared statements, and their result columns, are a session's
 * own (two databases in one process may answer the same text with other columns).
 */
const rowDescriptions = new WeakMap<PgConnection, Map<string, RowDescription>>()

/**
 * A named prepared statement whose rows are described once per connection. pg asks
 * PostgreSQL to describe every execution's rows and rebuilds its reading of them from that
 * answer (the column parsers, the row template). Once a connection has prepared a
 * statement, PostgreSQL keeps its result columns fixed there (a schema change that would
 * alter them fails the execution with "cached plan must not change result type"), so on
 * that connection this sends Bind and Execute only, and reads the rows with the
 * description kept from the statement's first run on it (docs/performance.md, Statements on pg).
 */
class PreparedQuery extends Query {
  /** Statements of the unit of work sent ahead of this one, in the same write (TransactionClient.defer). */
  carried: ReadonlyArray<DeferredStatement> = []
  /** The carried statement that failed, when PostgreSQL failed one of them (the rest were skipped). */
  failedCarried: DeferredStatement | undefined = undefined
  /** Carried statements not yet answered: each answers one CommandComplete, before this one's. */
  private carriedLeft = 0
  prepare(connection: PgConnection) {
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
  handleError(error: unknown, connection: PgConnection) {
    // PostgreSQL answers the first failure and skips the rest up to the Sync: a carried
    // statement not yet complete is the one that failed.
    if (this.carriedLeft > 0 && error instanceof DatabaseError && !this.hasOwnFailure())
      this.failedCarried = this.carried[this.carried.length - this.carriedLeft]
    pgQuery.handleError.call(this, error, connection)
  }
  private hasOwnFailure() {
    return Boolean((this as unknown as QueryInternals)._canceledDueToError)
  }
  private prepareOwn(connection: PgConnection) {
    const self = this as unknown as QueryInternals
    const described = rowDescriptions.get(connection)?.get(self.name)
    if (described === undefined || !self.hasBeenParsed(connection))
      return pgQuery.prepare.call(this, connection)
    this.known = true
    let values: Array<unknown>
    try {
      values = sendable(self.values)
    } catch (error) {
      // Nothing was written: the statement fails when PostgreSQL answers the Sync, as pg
      // fails one whose row it cannot read, and stays prepared on this connection.
      self._canceledDueToError = error
      connection.sync()
      return
    }
    connection.bind({ portal: self.portal, statement: self.name, values, binary: self.binary })
    self._result.fields = described.fields
    self._result._parsers = described._parsers
    self._result._prebuiltEmptyResultObject = described._prebuiltEmptyResultObject
    // As pg's handleRowDescription sets it: the rows go into the result (a callback is given).
    self._accumulateRows = true
    self._getRows(connection, self.rows)
  }
  handleDataRow(message: unknown) {
    // A carried statement answers no rows (defer); were one to, its rows are not this one's.
    if (this.carriedLeft > 0) return
    pgQuery.handleDataRow.call(this, message)
  }
  handleRowDescription(message: unknown) {
    pgQuery.handleRowDescription.call(this, message)
    if (this.described === undefined) {
      const { fields, _parsers, _prebuiltEmptyResultObject } = (this as unknown as QueryInternals)._result
      this.described = { fields, _parsers, _prebuiltEmptyResultObject }
    }
  }
  handleCommandComplete(message: unknown, connection: PgConnection) {
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
      const { name } = this as unknown as QueryInternals
      if (!kept.has(name)) kept.set(name, this.described ?? noRows)
    }
    pgQuery.handleCommandComplete.call(this, message, connection)
  }
  /** Whether this connection already holds the statement's description (or this run has kept it). */
  private known = false
  /** The description PostgreSQL gave this run, when it was asked for one. */
  private described: RowDescription | undefined = undefined
}

/**
 * How many runs of a named statement PostgreSQL plans for their values before it may settle
 * on a generic plan, one made for no value in particular (its documentation of PREPARE:
 * "the first five executions are done with custom plans").
 */
const CUSTOM_PLAN_RUNS = 5

/** The runs each replanned statement had on a connection; every fifth run starts a new name. */
const replannedRuns = new WeakMap<PgConnection, Map<string, number>>()

/**
 * A named statement that PostgreSQL plans for the values of each run: after five runs under
 * one name on a connection, that name is closed and the statement prepared under the next
 * one, in the same write as its run. With the text kept under one name, a page of a bot's
 * submissions got a generic plan after its fifth run, and in a database of many small bots
 * that plan read and sorted all of a bot's submissions for each page: 6.6 ms for a bot of
 * 20,000 against 0.2 (docs/performance.md, Statements on pg). Sent unnamed, PostgreSQL would
 * parse it on every run: 45 us more CPU a page in PostgreSQL, 5 to 8% more in this process.
 */
class ReplannedQuery extends PreparedQuery {
  override prepare(connection: PgConnection) {
    const self = this as unknown as { name: string }
    let runs = replannedRuns.get(connection)
    if (runs === undefined) {
      runs = new Map()
      replannedRuns.set(connection, runs)
    }
    const run = runs.get(self.name) ?? 0
    runs.set(self.name, run + 1)
    const generation = Math.floor(run / CUSTOM_PLAN_RUNS)
    if (run > 0 && run % CUSTOM_PLAN_RUNS === 0) {
      const spent = `${self.name}_${generation - 1}`
      // Closing a name the session does not hold is no error: a first run that failed.
      connection.close({ type: "S", name: spent })
      delete connection.parsedStatements[spent]
      rowDescriptions.get(connection)?.delete(spent)
    }
    self.name = `${self.name}_${generation}`
    super.prepare(connection)
  }
}

/**
 * A named prepared statement as a PreparedQuery, built from its text: given a config
 * object, pg copies it (every property descriptor) on each statement, which cost about 2%
 * of a create's CPU; given a text it copies nothing, and the name is set on the query.
 * Named "" (UNNAMED, behind a transaction-mode pooler), it is PostgreSQL's unnamed statement,
 * parsed with each run and in the same write (Parse, Bind, Describe, Execute, Sync), on the
 * extended protocol even without values, so that a CommittingQuery still carries its COMMIT.
 */
const preparedQuery = (
  name: string,
  text: string,
  values: Array<unknown>,
  kind: new (text: string, values: Array<unknown>) => PreparedQuery = PreparedQuery
): PreparedQuery => {
  const query = new kind(text, withIsoDates(values))
  ;(query as { name?: string }).name = name
  if (name === UNNAMED) (query as { queryMode?: string }).queryMode = "extended"
  return query
}

/** The name of PostgreSQL's unnamed statement: it lasts until the session's next Parse. */
const UNNAMED = ""
const unnamed = (_text: string) => UNNAMED

/**
 * The values with each valid Date as its ISO text: the same instant as the text pg writes
 * for it (its local time and offset, built field by field), which cost about 1% of a
 * create's CPU. Rendered by WireShapes.isoTimestamp, from its cached days: a create sends
 * eight Dates, and `toISOString` cost about 1% more. Copied only when there is a Date.
 */
const withIsoDates = (values: Array<unknown>): Array<unknown> => {
  let converted: Array<unknown> | undefined
  for (let index = 0; index < values.length; index++) {
    const value = values[index]
    if (!(value instanceof Date)) continue
    const millis = value.getTime()
    if (Number.isNaN(millis)) continue
    converted ??= values.slice()
    converted[index] = WireShapes.isoTimestamp(millis)
  }
  return converted ?? values
}

/**
 * One statement, resumed with what `complete` makes of its answer. It registers no canceler:
 * an `Effect.async` with one costs an `onInterrupt` region (a mask, a match and a cleanup
 * step) per statement, and only a unit of work has something to cancel, which
 * `directTransaction` does once, when it is interrupted.
 */
const sendThen = <A, E>(
  target: Pool | PoolClient,
  config: QueryConfig | QueryArrayConfig | Query,
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

const asResult = <R extends QueryResult>(error: Error | undefined, result: QueryResult) =>
  error ? Exit.fail(failed(error)) : Exit.succeed(result as R)

/**
 * A query whose COMMIT follows it in the same write (extended protocol: the statement's
 * Bind and Execute, then COMMIT's Parse, Bind and Execute, then one Sync). When the
 * statement fails, PostgreSQL skips everything up to the Sync, COMMIT included, and the
 * transaction stays open and failed for the ROLLBACK. Its result is the statement's and the
 * COMMIT's (pg answers an array of two).
 */
class CommittingQuery extends PreparedQuery {
  /** Read by the round-trip counters (bench/round-trips.ts, the tests'), which see pg's queries only. */
  readonly carriesCommit = true
  _getRows(connection: PgConnection, rows: number | undefined) {
    connection.execute({ portal: (this as { portal?: string }).portal ?? "", rows })
    connection.parse({ text: "COMMIT", name: "", types: [] })
    connection.bind({})
    connection.execute({})
    connection.sync()
  }
}

/** The texts of the statements `query` carries ahead of its own (TransactionClient.defer; for counting round trips). */
export const carriedStatements = (query: unknown): ReadonlyArray<string> =>
  query instanceof PreparedQuery ? query.carried.map((carried) => carried.text) : []

/** Whether `query` is a statement sent with its unit of work's COMMIT (for counting round trips). */
export const carriesCommit = (query: unknown): boolean =>
  (query as { readonly carriesCommit?: unknown } | undefined)?.carriesCommit === true

/** What CommittingQuery writes with: pg's connection (its methods, not in @types/pg). */
interface PgConnection {
  readonly execute: (config: { readonly portal?: string; readonly rows?: number | undefined }) => void
  readonly parse: (config: {
    readonly text: string
    readonly name: string
    readonly types: Array<never>
  }) => void
  readonly bind: (config: object) => void
  readonly sync: () => void
  readonly close: (config: { readonly type: "S"; readonly name: string }) => void
  /** The statements prepared on the connection, by name (pg's own record). */
  readonly parsedStatements: Record<string, string>
}

/**
 * A statement of a unit of work whose answer nothing waits for (an INSERT that returns no
 * rows), held back to go with the unit's next statement, in the same write
 * (TransactionClient.defer).
 */
interface DeferredStatement {
  readonly name: string
  readonly text: string
  /** Its values as pg sends them. */
  readonly values: Array<unknown>
  /**
   * Its failure as its own step reports it: the statement that carried it fails with this,
   * typed as that statement's StorageUnavailable (DeferredStep).
   */
  readonly onError: (error: SqlError) => Effect.Effect<never, StorageUnavailable>
}

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
  send<R extends QueryResult>(config: QueryConfig | QueryArrayConfig | Query) {
    return this.sendThen(config, asResult<R>) as Effect.Effect<R, SqlError>
  }
  /** `config` sent on this unit of work, after or with the statements deferred to it. */
  sendThen<A, E>(
    config: QueryConfig | QueryArrayConfig | Query,
    complete: (error: Error | undefined, result: QueryResult) => Effect.Effect<A, E>
  ): Effect.Effect<A, E | StorageUnavailable> {
    if (this.committed) {
      const text = (config as { readonly text?: unknown }).text
      return Effect.die(new StatementAfterCommit(typeof text === "string" ? text : "?"))
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
      values = sendable(withIsoDates(statement.values as Array<unknown>))
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
    const connection = (this.client as unknown as { readonly connection: PgConnection }).connection
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
  step<A, E>(
    name: string,
    statement: SqlText,
    final: boolean,
    decode: (rows: ReadonlyArray<Row>) => Effect.Effect<A, E>,
    onError: (error: SqlError) => Effect.Effect<A, E | StorageUnavailable>
  ): Effect.Effect<A, E | StorageUnavailable> {
    const values = statement.values as Array<unknown>
    if (!final || !this.commitsWithFinalStatement || this.nesting > 0)
      return this.sendThen(preparedQuery(name, statement.text, values), (error, result) =>
        error ? onError(failed(error)) : decode(result.rows as ReadonlyArray<Row>)
      )
    return this.sendThen(preparedQuery(name, statement.text, values, CommittingQuery), (error, results) => {
      if (error) return onError(failed(error))
      this.committed = true
      const [result] = results as unknown as ReadonlyArray<QueryResult>
      return decode((result?.rows ?? []) as ReadonlyArray<Row>)
    })
  }
  rows(config: QueryConfig | QueryArrayConfig | Query): Effect.Effect<ReadonlyArray<Row>, SqlError> {
    return Effect.map(this.send(config), (result) => result.rows as ReadonlyArray<Row>)
  }
  execute(
    text: string,
    values: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const rows = this.rows({ text, values: values as Array<unknown> })
    return transformRows === undefined ? rows : Effect.map(rows, (rows) => transformRows(rows as Array<Row>))
  }
  executeRaw(text: string, values: ReadonlyArray<unknown>) {
    return this.send({ text, values: values as Array<unknown> })
  }
  executeStream(
    text: string,
    values: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return Stream.flatMap(Stream.fromEffect(this.execute(text, values, transformRows)), Stream.fromIterable)
  }
  executeValues(text: string, values: ReadonlyArray<unknown>) {
    return this.rows({
      text,
      values: values as Array<unknown>,
      rowMode: "array"
    }) as unknown as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>
  }
  executeUnprepared(
    text: string,
    values: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return this.execute(text, values, transformRows)
  }
}

/** The error a client is released with when its BEGIN came back to no one: the pool drops it. */
const unclaimed = new Error("a transaction's client came back to a fiber that was interrupted")

/** BEGIN as a named prepared statement: once prepared on a connection, a unit of work defers it. */
const BEGIN: SqlText = { text: "BEGIN", values: [] }
const BEGIN_NAME = nameOf(BEGIN.text)
const beginFailed = (error: SqlError) => Exit.fail(storageFailure("transaction", error))
/** BEGIN deferred to a unit of work's first statement (TransactionClient.deferBegin): named, or unnamed behind a transaction-mode pooler. */
const NAMED_BEGIN: DeferredStatement = {
  name: BEGIN_NAME,
  text: BEGIN.text,
  values: [],
  onError: beginFailed
}
const UNNAMED_BEGIN: DeferredStatement = { name: UNNAMED, text: BEGIN.text, values: [], onError: beginFailed }

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

/**
 * One statement as a whole repository step: its rows made into the step's answer by
 * `decode` (a plain success or failure: `Exit.succeed`, `Exit.fail`), a database failure
 * turned into StorageUnavailable for `operation` unless `refine` names a failure of its own.
 * On PostgreSQL it is a named prepared statement on the current unit of work's client, else
 * on the pool, and costs the fiber three steps (find the unit of work in the fiber's context,
 * send, resume with the answer), where a statement followed by a map and a mapping of its
 * errors cost about a dozen (docs/performance.md, "Statements on pg"). On PGlite, and
 * inside a transaction `@effect/sql` opened itself, it goes through SqlClient.
 */
export type StatementStep = <A, E = never>(
  operation: string,
  statement: SqlText,
  decode: (rows: ReadonlyArray<Row>) => Effect.Effect<A, E>,
  refine?: (error: SqlError) => E | undefined
) => Effect.Effect<A, E | StorageUnavailable>

/**
 * A statement whose answer nothing waits for (no rows back), as a repository step that
 * succeeds once the statement is on its way. Its failure (StorageUnavailable, or the one
 * `refine` names) may come from the step of the unit of work's next statement, which
 * carried it, or from the unit of work's end: a failure the types of those do not name, so
 * a deferred step names one only for a caller that looks for it (IdempotencyStore.complete).
 */
export type DeferredStep = <E = never>(
  operation: string,
  statement: SqlText,
  refine?: (error: SqlError) => E | undefined
) => Effect.Effect<void, E | StorageUnavailable>

/** How a step's statement goes to PostgreSQL (statementSteps). */
type StepKind = "prepared" | "final" | "planned" | "deferred"

/**
 * The steps of this module's statements: `step` for any statement, `final` for a unit of
 * work's last one, which on PostgreSQL inside UnitOfWork.commitWith (and no nested unit of
 * work) is sent with the unit's COMMIT (TransactionClient.step), and `planned` for a
 * statement whose best plan depends on its values, which PostgreSQL then plans for the
 * values of every run (ReplannedQuery). `deferred` is for a statement that returns no rows
 * and whose failure only fails the unit of work: inside a unit of work on PostgreSQL it goes
 * with the unit's next statement, in the same write (TransactionClient.defer); elsewhere it
 * is a `step`.
 */
export const statementSteps: Effect.Effect<
  {
    readonly step: StatementStep
    readonly final: StatementStep
    readonly planned: StatementStep
    readonly deferred: DeferredStep
  },
  never,
  SqlClient.SqlClient
> = Effect.zipWith(
  Effect.all([SqlClient.SqlClient, Effect.serviceOption(PgReads)]),
  Effect.serviceOption(TraceContext.Tracing),
  ([sql, reads], tracing) => {
    // Chosen once, for the layer: behind a transaction-mode pooler every statement is unnamed,
    // which PostgreSQL plans for each run's values anyway (no ReplannedQuery needed).
    const pooled = Option.isSome(reads) && reads.value.poolMode === "transaction"
    const nameFor = pooled ? unnamed : nameOf
    const replanned = pooled ? PreparedQuery : ReplannedQuery
    const direct =
      (kind: StepKind): StatementStep =>
      <A, E = never>(
        operation: string,
        statement: SqlText,
        decode: (rows: ReadonlyArray<Row>) => Effect.Effect<A, E>,
        refine?: (error: SqlError) => E | undefined
      ): Effect.Effect<A, E | StorageUnavailable> => {
        const onError = (error: SqlError): Effect.Effect<A, E | StorageUnavailable> => {
          const refined = refine?.(error)
          return refined === undefined ? Exit.fail(storageFailure(operation, error)) : Exit.fail(refined as E)
        }
        const viaSqlClient = () =>
          Effect.matchEffect(sql.unsafe<Row>(statement.text, statement.values as Array<unknown>), {
            onFailure: onError,
            onSuccess: decode
          })
        if (Option.isNone(reads)) return viaSqlClient()
        const pool = reads.value.pool
        return Effect.withFiberRuntime<A, E | StorageUnavailable>((fiber) => {
          const transaction = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
          const connection = Option.isSome(transaction) ? transaction.value[0] : undefined
          if (connection !== undefined && !(connection instanceof TransactionClient)) return viaSqlClient()
          const answered = (error: Error | undefined, result: QueryResult) =>
            error ? onError(failed(error)) : decode(result.rows as ReadonlyArray<Row>)
          const name = nameFor(statement.text)
          if (kind === "planned") {
            const query = preparedQuery(name, statement.text, statement.values as Array<unknown>, replanned)
            return connection === undefined
              ? sendThen<A, E | StorageUnavailable>(pool, query, undefined, answered)
              : connection.sendThen(query, answered)
          }
          if (connection === undefined)
            return sendThen<A, E | StorageUnavailable>(
              pool,
              preparedQuery(name, statement.text, statement.values as Array<unknown>),
              undefined,
              answered
            )
          if (kind === "deferred")
            // Its own failure, refined or not, stands for a StorageUnavailable of the step that carries it.
            return connection.defer(
              name,
              statement,
              onError as (error: SqlError) => Effect.Effect<never, StorageUnavailable>
            ) as Effect.Effect<A, StorageUnavailable>
          return connection.step(name, statement, kind === "final", decode, onError)
        })
      }
    // Traces on (docs/operations.md, Traces): each statement sent on `pg` directly is a span,
    // named by its operation, with its text and never its values. Through SqlClient
    // (PGlite, @effect/sql's own transactions), @effect/sql makes the span. Decided once, here:
    // with traces off the steps are the plain ones; on, a statement of a request or attempt
    // that is not sampled (Effect's tracer off for its fiber) is the plain step too.
    const via =
      Option.isNone(tracing) || Option.isNone(reads)
        ? direct
        : (kind: StepKind): StatementStep => {
            const step = direct(kind)
            return (operation, statement, decode, refine) =>
              Effect.withFiberRuntime((fiber) =>
                fiber.getFiberRef(FiberRef.currentTracerEnabled)
                  ? // A leaf: the span is not made the parent of the step (useSpan, not withSpan), which
                    // spares a copy of the fiber's services per statement (docs/operations.md, Traces).
                    Effect.useSpan(
                      `sql ${operation}`,
                      {
                        kind: "client",
                        captureStackTrace: false,
                        attributes: {
                          "db.system.name": "postgresql",
                          "db.operation.name": operation,
                          "db.query.text": statement.text
                        }
                      },
                      () => step(operation, statement, decode, refine)
                    )
                  : step(operation, statement, decode, refine)
              )
          }
    const deferredVia = via("deferred")
    return {
      step: via("prepared"),
      final: via("final"),
      planned: via("planned"),
      deferred: (operation, statement, refine) => deferredVia(operation, statement, () => Exit.void, refine)
    }
  }
)
