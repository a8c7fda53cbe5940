/**
 * An `@effect/sql` client over one embedded PGlite instance, offered as the same
 * `SqlClient` and `PgClient` services as `@effect/sql-pg`, so that the repositories and
 * the migrations are the same code on both. What it does differently, and why:
 * - an Effect transaction is PGlite's own `transaction()`, whose lock queues the other
 *   fibers' statements (a semaphore around every statement would halve throughput);
 * - every statement first yields to the event loop: PGlite runs a query to completion
 *   without yielding, so a burst of queries would otherwise freeze the server;
 * - int8 comes back as a string, as `pg` returns it;
 * - a data directory is created if missing and locked (see data-dir-lock.ts).
 * It is not put behind pglite-socket with a `pg` pool: under concurrency that mixes up
 * parameters and rows between connections, and LISTEN/NOTIFY does not work through it.
 */
import { existsSync } from "node:fs"
import * as Path from "node:path"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import * as PgClient from "@effect/sql-pg/PgClient"
import { PGlite, type Transaction, types } from "@electric-sql/pglite"
import { ConnectionPool } from "@intake/domain"
import { Context, Effect, Layer, type Scope, Stream } from "effect"
import { type DataDirectoryLocked, type DataDirectoryUnusable, lockDataDirectory } from "./data-dir-lock.js"

export interface PgliteClientOptions {
  /** Where the data lives (PGlite's files go to `<dataDir>/pgdata`); none means in memory. */
  readonly dataDir?: string | undefined
}

/** What runs a statement: the instance itself, or the transaction that holds its lock. */
interface Runner {
  readonly query: Transaction["query"]
}

/** Lets timers and I/O callbacks run before the next query monopolizes the thread. */
const yieldToEventLoop = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

const failed = (message: string) => (cause: unknown) => new SqlError({ cause, message })

const runQuery = (runner: Runner, sql: string, params: ReadonlyArray<unknown>, rowMode: "object" | "array") =>
  Effect.zipRight(
    yieldToEventLoop,
    Effect.tryPromise({
      try: () => runner.query<object>(sql, params as Array<unknown>, { rowMode }),
      catch: failed("Failed to execute statement")
    })
  )

const connectionOver = (
  runner: Runner,
  onUnprepared: (sql: string) => Effect.Effect<ReadonlyArray<never>, SqlError> | undefined = () => undefined
): Connection => {
  const execute: Connection["execute"] = (sql, params, transformRows) =>
    Effect.map(runQuery(runner, sql, params, "object"), (result) =>
      transformRows ? transformRows(result.rows) : result.rows
    )
  return {
    execute,
    executeRaw: (sql, params) => runQuery(runner, sql, params, "object"),
    executeValues: (sql, params) =>
      Effect.map(
        runQuery(runner, sql, params, "array"),
        (result) => result.rows as unknown as ReadonlyArray<ReadonlyArray<unknown>>
      ),
    executeUnprepared: (sql, params, transformRows) =>
      onUnprepared(sql) ?? execute(sql, params, transformRows),
    executeStream: (sql, params, transformRows) =>
      Stream.fromIterableEffect(execute(sql, params, transformRows))
  }
}

/**
 * A connection inside `PGlite.transaction()`. The transaction is opened when the
 * connection is acquired; `@effect/sql`'s BEGIN is then a no-op, and its COMMIT or
 * ROLLBACK settle the callback. Closing the scope without either rolls back.
 */
const transactionConnection = (db: PGlite) =>
  Effect.acquireRelease(
    Effect.async<
      {
        readonly tx: Transaction
        readonly finish: (outcome: "commit" | "rollback") => Promise<void>
      },
      SqlError
    >((resume) => {
      let cancelled = false
      let begun = false
      let settle: (outcome: "commit" | "rollback") => void = () => {}
      const outcome = new Promise<"commit" | "rollback">((resolve) => {
        settle = resolve
      })
      const settled = db.transaction(async (tx) => {
        if (cancelled) return
        begun = true
        resume(Effect.succeed({ tx, finish }))
        if ((await outcome) === "rollback" && !tx.closed) await tx.rollback()
      })
      let finished: Promise<void> | undefined
      const finish = (result: "commit" | "rollback") => {
        settle(result)
        finished ??= settled.then(() => undefined)
        return finished
      }
      settled.catch((cause) => {
        if (!cancelled && !begun) resume(Effect.fail(failed("Failed to begin transaction")(cause)))
      })
      return Effect.sync(() => {
        cancelled = true
        settle("rollback")
      })
    }),
    ({ finish }) => Effect.promise(() => finish("rollback").catch(() => undefined))
  ).pipe(
    Effect.map(({ tx, finish }) =>
      connectionOver(tx, (sql) => {
        switch (sql) {
          case "BEGIN":
            return Effect.succeed([])
          case "COMMIT":
          case "ROLLBACK": {
            const outcome = sql === "COMMIT" ? "commit" : "rollback"
            return Effect.as(
              Effect.tryPromise({ try: () => finish(outcome), catch: failed(`Failed to ${outcome}`) }),
              []
            )
          }
          default:
            return undefined
        }
      })
    )
  )

/** `PgClient.json` builds this fragment; `PgClient.makeCompiler` binds its value as a parameter. */
const PgJson = Statement.custom<Statement.Custom<"PgJson", unknown>>("PgJson")

/**
 * One full garbage collection. A closed PGlite's WebAssembly memory lives outside V8's heap,
 * which it does not weigh on: nothing prompts a full collection to free it, and a server
 * under a light load kept it for good (over 300 MB after creating a database).
 */
const collectGarbage = () => {
  setFlagsFromString("--expose-gc")
  ;(runInNewContext("gc") as () => void)()
}

export const makePgliteClient = (
  options: PgliteClientOptions
): Effect.Effect<
  PgClient.PgClient,
  SqlError | DataDirectoryLocked | DataDirectoryUnusable,
  Scope.Scope | Reactivity.Reactivity
> =>
  Effect.gen(function* () {
    if (options.dataDir !== undefined) yield* lockDataDirectory(options.dataDir)
    const pgdata = options.dataDir === undefined ? undefined : Path.join(options.dataDir, "pgdata")
    const open = () =>
      PGlite.create({
        ...(pgdata === undefined ? {} : { dataDir: pgdata }),
        parsers: { [types.INT8]: (value: string) => value },
        // PostgreSQL's 128 MB of shared buffers live in PGlite's WebAssembly memory, which never
        // shrinks: the embedded default reads a demo's data from the OS's file cache as well
        // with 16 MB, and its resident memory under load drops by about 100 MB.
        startParams: [...PGlite.defaultStartParams, "-c", "shared_buffers=16MB"]
      })
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          // Creating the database (initdb) grows PGlite's WebAssembly memory to about twice
          // what serving needs, and that memory never shrinks: a fresh instance over the
          // files just made runs at half the RSS for the life of the process.
          const creating = pgdata !== undefined && !existsSync(Path.join(pgdata, "PG_VERSION"))
          if (creating) await (await open()).close()
          const db = await open()
          // The creating instance is unreachable by now: its memory goes at once, not at some
          // later collection (collected before this open, it was still held).
          if (creating) collectGarbage()
          return db
        },
        catch: failed("PGlite: failed to open the database")
      }),
      (db) => Effect.promise(() => db.close().catch(() => undefined))
    )

    const client = yield* SqlClient.make({
      acquirer: Effect.succeed(connectionOver(db)),
      transactionAcquirer: transactionConnection(db),
      compiler: PgClient.makeCompiler(),
      spanAttributes: [["db.system.name", "postgresql"]]
    })

    return Object.assign(client, {
      [PgClient.TypeId]: PgClient.TypeId,
      config: { database: options.dataDir ?? "memory" },
      json: (value: unknown) => PgJson(value),
      listen: (channel: string) =>
        Stream.asyncPush<string, SqlError>((emit) =>
          Effect.acquireRelease(
            Effect.tryPromise({
              try: () => db.listen(channel, (payload) => emit.single(payload)),
              catch: failed("Failed to listen")
            }),
            (unlisten) => Effect.promise(() => unlisten().catch(() => undefined))
          )
        ),
      notify: (channel: string, payload: string) =>
        Effect.asVoid(client`SELECT pg_notify(${channel}, ${payload})`)
    }) as PgClient.PgClient
  })

/** `PgClient` and `SqlClient` over PGlite. */
export const layerPglite = (options: PgliteClientOptions) =>
  Layer.scopedContext(
    Effect.map(makePgliteClient(options), (client) =>
      Context.make(PgClient.PgClient, client).pipe(
        Context.add(SqlClient.SqlClient, client),
        // One connection, in this process; what waits for it waits in PGlite's own queue.
        Context.add(ConnectionPool, { connections: () => ({ total: 1, idle: null, waiting: null }) })
      )
    )
  ).pipe(Layer.provide(Reactivity.layer))
