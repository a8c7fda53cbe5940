/**
 * The PostgreSQL client of the ports: @effect/sql-pg over a `pg` pool built here, so that
 * a connection whose network went silent (packets swallowed, nothing closed) leaves the
 * pool instead of hanging every statement that lands on it next.
 *
 * - `query_timeout`: pg gives up waiting for a statement's answer after `queryTimeout`.
 * - A connection released while a statement on it still waits for its answer (one given
 *   up by `query_timeout`, or interrupted, e.g. by a request's deadline) is destroyed,
 *   not put back: the next statement would queue behind the unanswered one. The pool
 *   opens a fresh connection in its place.
 * - TCP keepalive, so that the kernel notices a peer gone away from an idle connection.
 * - LISTEN on connections that come back when lost (listen.ts).
 * - `idle_in_transaction_session_timeout` and `lock_timeout` on every session: a process
 *   that stalls inside a transaction (a GC or VM pause, SIGSTOP, a partition) has its
 *   session ended by PostgreSQL, its locks (a workspace's usage row, a bot's counter row)
 *   released, and the other servers' writes go on within seconds; a lock still not granted
 *   after `lockTimeout` fails its statement, which answers the sanitized 500 (docs/choices.md).
 * - `poolMode: "transaction"`: `url` is a transaction-mode pooler (PgBouncer): statements go
 *   unnamed (driver/README.md), the two timeouts above are not sent as startup parameters (PgBouncer
 *   1.18 refuses a connection that sends them; set them on the role or in the pooler), and
 *   LISTEN and the migrations use `directUrl`, straight to PostgreSQL (docs/deploy-postgres.md).
 */

import { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { ConnectionPool } from "@intake/domain"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { Pool, type PoolClient } from "pg"
import { makePgReads, PgReads, type PoolMode } from "./driver/direct-pool.js"
import "./driver/pg-internals.js"
import { reconnectingListen } from "./listen.js"
import { poolTypes } from "./pg-types.js"

export type { PoolMode } from "./driver/direct-pool.js"

export interface PostgresConfig {
  readonly url: Redacted.Redacted
  /** What `url` points at: PostgreSQL or a session-mode pooler (`session`, the default), or a transaction-mode pooler. */
  readonly poolMode?: PoolMode
  /** Straight to PostgreSQL, for LISTEN and the migrations (runtime.ts); `url` when omitted. */
  readonly directUrl?: Redacted.Redacted
  /** How long to wait for a connection (a new one, or a turn on a busy one); DEFAULT_CONNECT_TIMEOUT when omitted. */
  readonly connectTimeout?: Duration.DurationInput
  /** Longest wait for a statement's answer; DEFAULT_QUERY_TIMEOUT when omitted. */
  readonly queryTimeout?: Duration.DurationInput
  readonly maxConnections?: number
  /** How long a session may sit idle inside a transaction; DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT when omitted. */
  readonly idleInTransactionTimeout?: Duration.DurationInput
  /** How long a statement waits for a lock; DEFAULT_LOCK_TIMEOUT when omitted. */
  readonly lockTimeout?: Duration.DurationInput
}

/**
 * How long a statement waits for a pool connection (a new one, or a turn for a busy one).
 * Without a bound, a database that stops answering (a host gone, packets dropped) holds
 * every request open; with it they answer 500 and /readyz 503 until it returns.
 */
export const DEFAULT_CONNECT_TIMEOUT = Duration.seconds(5)

/**
 * Longer than any statement Intake runs outside its migrations (which run on a client of
 * their own, without it): past it, the database is not slow but unreachable.
 */
export const DEFAULT_QUERY_TIMEOUT = Duration.seconds(30)

/**
 * Intake's transactions run their statements back to back: a session idle inside one this
 * long belongs to a process that stalled. Shorter than DEFAULT_LOCK_TIMEOUT, so a write
 * queued behind one stalled holder gets its lock rather than an error.
 */
export const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT = Duration.seconds(3)

/**
 * A write that waits this long for a lock gives up and answers the sanitized 500: behind
 * a queue of stalled holders (each freed only by the idle timeout) it would wait for all.
 */
export const DEFAULT_LOCK_TIMEOUT = Duration.seconds(5)

/** When the kernel starts probing an idle connection (libuv then probes every second, ten times). */
const KEEPALIVE_DELAY_MS = 10_000

/** The error a connection is released with when it still waits for an answer: the pool drops it. */
const abandoned = new Error("released while a statement still waits for its answer")

/**
 * pg sets `readyForQuery` false when it sends a statement and true when the server says
 * it is done with it (driver/pg-internals.ts).
 */
const awaitsAnswer = (client: PoolClient) => client.readyForQuery === false

/** `release()` without an error puts a connection back; with one, the pool destroys it. */
const guarded = (client: PoolClient) => {
  const release = client.release
  client.release = (error) => release(error || (awaitsAnswer(client) ? abandoned : undefined))
  return client
}

type Checkout = (
  error: Error | undefined,
  client: PoolClient | undefined,
  done: PoolClient["release"]
) => void

/**
 * A pool whose connections are guarded on every checkout. @effect/sql-pg and `pool.query`
 * check out with the callback form; the promise form is guarded alike.
 */
class GuardedPool extends Pool {
  override connect(): Promise<PoolClient>
  override connect(callback: Checkout): void
  override connect(callback?: Checkout): Promise<PoolClient> | undefined {
    if (callback === undefined) return super.connect().then(guarded)
    super.connect((error, client, done) =>
      client === undefined ? callback(error, client, done) : callback(error, guarded(client), client.release)
    )
    return undefined
  }
}

/**
 * The options of a connection to `url`: the pool's, and LISTEN's (listen.ts). `pooled`: to
 * a transaction-mode pooler, which is sent no startup parameter it would refuse.
 */
const connectionOptions = (config: PostgresConfig, url: Redacted.Redacted, pooled: boolean) => ({
  connectionString: Redacted.value(url),
  application_name: "@effect/sql-pg",
  connectionTimeoutMillis: Duration.toMillis(config.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT),
  query_timeout: Duration.toMillis(config.queryTimeout ?? DEFAULT_QUERY_TIMEOUT),
  keepAlive: true,
  keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  // Sent as startup parameters: every session has them from its first statement.
  ...(pooled
    ? {}
    : {
        idle_in_transaction_session_timeout: Duration.toMillis(
          config.idleInTransactionTimeout ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT
        ),
        lock_timeout: Duration.toMillis(config.lockTimeout ?? DEFAULT_LOCK_TIMEOUT)
      })
})

const makePool = (config: PostgresConfig) => {
  const pool = new GuardedPool({
    ...connectionOptions(config, config.url, config.poolMode === "transaction"),
    ...(config.maxConnections === undefined ? {} : { max: config.maxConnections }),
    types: poolTypes
  })
  // An idle connection's error is the pool's to handle (it drops the connection); unheard, it would crash the process.
  pool.on("error", () => {})
  return pool
}

/**
 * PgClient and SqlClient on a guarded pool, as `PgClient.layer` would build them: the
 * layer fails when the database does not answer `SELECT 1` within the connect timeout.
 */
export const layerPostgres = (config: PostgresConfig) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => makePool(config)),
        (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
      )
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: config.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT,
          onTimeout: () =>
            new SqlError({
              cause: new Error("Connection timed out"),
              message: "PgClient: Connection timed out"
            })
        })
      )
      // The pool is this layer's: PgClient borrows it, and the hot reads use it directly.
      return Layer.mergeAll(
        PgClient.layerFromPool({ acquire: Effect.succeed(pool) }).pipe(
          // LISTEN that comes back after its connection is lost (listen.ts), in place of the one
          // @effect/sql-pg keeps, which goes silent for good.
          Layer.tap((context) =>
            Effect.sync(() => {
              Object.assign(Context.get(context, PgClient.PgClient), {
                listen: reconnectingListen(
                  config.directUrl === undefined
                    ? connectionOptions(config, config.url, config.poolMode === "transaction")
                    : connectionOptions(config, config.directUrl, false)
                )
              })
            })
          )
        ),
        Layer.succeed(PgReads, makePgReads(pool, config.poolMode)),
        Layer.succeed(ConnectionPool, {
          connections: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount })
        })
      )
    })
  )
