/**
 * Every storage port on Postgres (or on PGlite, the embedded default), mirroring
 * MemoryPortsLive: the same services, so the composition root swaps one for the other.
 * Building the layer runs the pending migrations and starts the idempotency purge. The
 * composition root provides the rest: the platform (Crypto, Ids, AddressResolver) and the
 * in-process rate limits, access invalidation and summary wake-ups (InProcessLive of
 * @intake/memory; Redis replaces the first two when configured).
 */

import type { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { BuiltInSummarizerLive } from "@intake/domain"
import { Effect, Layer } from "effect"
import { PgApiKeyRepository, PgWorkspaceRepository } from "./access.js"
import { PgDeliveryRepository, PgDeliveryWakeups } from "./deliveries.js"
import { runMigrations } from "./migrator.js"
import { DEFAULT_CONNECT_TIMEOUT, layerPostgres, type PostgresConfig } from "./pg-pool.js"
import { layerPglite } from "./pglite-client.js"
import { IdempotencyPurgeLive } from "./purge.js"
import { PgSubmissionPortsLive } from "./submissions.js"
import { PgSummaryJobRepository } from "./summary-jobs.js"
import { PgUnitOfWork } from "./unit-of-work.js"
import { PgWebhookPortsLive } from "./webhooks.js"

/** Every repository, the outbox, the idempotency store, the delivery queue and the unit of work, over a SqlClient. */
export const PgRepositoriesLive = Layer.mergeAll(
  PgWorkspaceRepository,
  PgApiKeyRepository,
  PgSubmissionPortsLive,
  PgWebhookPortsLive,
  PgDeliveryRepository,
  PgSummaryJobRepository,
  PgUnitOfWork
)

/** Runs the pending migrations when built. */
export const MigrationsLive = Layer.effectDiscard(runMigrations())

/** A client layer, migrated before anything uses it. */
export const migrated = <E>(client: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E>) =>
  MigrationsLive.pipe(Layer.provideMerge(client))

/** What a database layer provides: `PgClient` (pg or PGlite) and the same client as `SqlClient`. */
export type SqlDatabase = PgClient.PgClient | SqlClient.SqlClient

/** Every port over a database client layer, as it is. */
const portsOver = <E>(database: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E>) => {
  const repositories = Layer.mergeAll(PgRepositoriesLive, BuiltInSummarizerLive, PgDeliveryWakeups)
  return Layer.merge(repositories, IdempotencyPurgeLive().pipe(Layer.provide(PgWebhookPortsLive))).pipe(
    Layer.provideMerge(database)
  )
}

/** Every port over a database client layer (migrated when built). */
export const pgPortsOn = <E>(database: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E>) =>
  portsOver(migrated(database))

/**
 * Runs the pending migrations on a client of their own, closed when they are done: they
 * may wait for another instance's (the advisory lock) and a migration may take long, so
 * the query timeout of the ports' pool does not apply to them. They go to `directUrl`
 * when one is given (straight to PostgreSQL, past a pooler), else to `url`: their one
 * transaction and its transaction-scoped lock (migrator.ts) work through a pooler too.
 */
const migratedFirst = (config: PostgresConfig) =>
  Layer.effectDiscard(
    Effect.scoped(
      Effect.provide(
        runMigrations(),
        PgClient.layer({
          url: config.directUrl ?? config.url,
          maxConnections: 1,
          connectTimeout: config.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT
        })
      )
    )
  )

/**
 * Every port on a PostgreSQL server (e.g. `{ url: Redacted.make(DATABASE_URL) }`), on the
 * pool of pg-pool.ts, after the pending migrations.
 */
export const PostgresPortsLive = (config: PostgresConfig) =>
  portsOver(layerPostgres(config).pipe(Layer.provide(migratedFirst(config))))

/** Every port on PGlite with its files under `dataDir` (created if missing, locked while in use). */
export const PglitePortsLive = (dataDir: string) => pgPortsOn(layerPglite({ dataDir }))
