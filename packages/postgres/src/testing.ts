/**
 * A fresh PostgreSQL database per test layer: `CREATE DATABASE test_<random>` when the
 * layer is built, `DROP DATABASE … WITH (FORCE)` when it is released. The server to use
 * is INTAKE_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test); the
 * database named there only serves to issue the CREATE and the DROP.
 */
import { randomBytes } from "node:crypto"
import * as Reactivity from "@effect/experimental/Reactivity"
import type { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { InProcessLive } from "@intake/memory"
import { NodePlatformLive } from "@intake/node"
import { Duration, Effect, Either, Layer, Redacted } from "effect"
import { layerPostgres, type PostgresConfig } from "./pg-pool.js"
import { layerPglite } from "./pglite-client.js"
import { migrated, pgPortsOn, type SqlDatabase } from "./runtime.js"

/**
 * Every port over a database client layer as one running instance has them: with the
 * platform and the in-process rate limits, invalidation and wake-ups the composition
 * roots add (apps/server/src/runtime.ts, apps/worker/src/main.ts).
 */
export const instancePortsOn = <E>(database: Layer.Layer<SqlDatabase, E>) =>
  pgPortsOn(database).pipe(Layer.provideMerge(Layer.merge(InProcessLive, NodePlatformLive)))

/** Every port on a fresh in-memory PGlite. */
export const PgliteTestLayer = instancePortsOn(layerPglite({}))

export const testServerUrl = (): string =>
  process.env.INTAKE_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

/** The URL of `database` on the same server as `url`. */
export const withDatabase = (url: string, database: string): string => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

const withAdmin = <A, E>(url: string, f: (sql: PgClient.PgClient) => Effect.Effect<A, E>) =>
  Effect.scoped(
    Effect.flatMap(
      PgClient.make({ url: Redacted.make(url), maxConnections: 1, connectTimeout: Duration.seconds(3) }),
      f
    )
  ).pipe(Effect.provide(Reactivity.layer))

/** Whether the test server answers; Left carries the reason when it does not. */
export const probeTestServer = (url: string = testServerUrl()): Promise<Either.Either<void, string>> =>
  Effect.runPromise(
    Effect.either(withAdmin(url, (sql) => Effect.asVoid(sql`SELECT 1`))).pipe(
      Effect.map(
        Either.mapLeft((error) => `${error.message}: ${String((error.cause as Error)?.message ?? "")}`)
      )
    )
  )

/** A fresh, empty database on the test server, dropped on release (unmigrated). */
export const freshDatabaseUrl = (url: string = testServerUrl()) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const name = `test_${randomBytes(8).toString("hex")}`
      yield* withAdmin(url, (sql) => sql.unsafe(`CREATE DATABASE ${name}`))
      return { name, url: withDatabase(url, name) }
    }),
    ({ name }) =>
      Effect.orDie(withAdmin(url, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))
  )

/**
 * PgClient and SqlClient on a fresh, migrated database, dropped when the layer is
 * released; on the pool production uses.
 */
export const PostgresTestDatabase = (
  url: string = testServerUrl(),
  config: Omit<PostgresConfig, "url"> = {}
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown> =>
  Layer.unwrapScoped(
    Effect.map(freshDatabaseUrl(url), (database) =>
      migrated(layerPostgres({ ...config, url: Redacted.make(database.url) }))
    )
  )
