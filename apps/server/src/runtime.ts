/**
 * The runtimes: every use case over one set of adapters, with the webhook settings of
 * the configuration, and the webhook dispatcher running in-process (unless turned off).
 * `pnpm start` runs on PostgreSQL when DATABASE_URL is set, else on PGlite under
 * INTAKE_DATA_DIR; the in-memory runtime serves the HTTP tests.
 */
import * as Path from "node:path"
import type { SqlClient } from "@effect/sql"
import { UseCasesLive, WebhookSettings } from "@intake/domain"
import { MemoryPortsLive } from "@intake/memory"
import {
  databaseIsEmpty,
  PglitePortsLive,
  PostgresPortsLive,
  pgPortsOn,
  pingDatabase,
  type SqlDatabase
} from "@intake/postgres"
import { deliveryEngine, dispatcherLayer } from "@intake/worker"
import { Effect, Layer, type Redacted } from "effect"
import { StoreStatus } from "./database.js"

export interface RuntimeOptions {
  readonly webhookAllowPrivateNetworks: boolean
  /** WEBHOOK_RETRY_SCHEDULE in milliseconds; decisions.md's default when omitted. */
  readonly webhookRetrySchedule?: ReadonlyArray<number>
  /** WEBHOOK_DISABLE_AFTER in milliseconds; 5 days when omitted. */
  readonly webhookDisableAfterMs?: number
  /** The in-process dispatcher; on unless `false`. */
  readonly dispatcher?: false | { readonly concurrency?: number; readonly pollIntervalMs?: number }
}

const withUseCases = <ROut, E>(ports: Layer.Layer<ROut, E>, options: RuntimeOptions) => {
  const useCases = Layer.merge(
    UseCasesLive,
    deliveryEngine({
      allowPrivateNetworks: options.webhookAllowPrivateNetworks,
      settings: {
        ...(options.webhookRetrySchedule === undefined
          ? {}
          : { retrySchedule: options.webhookRetrySchedule }),
        ...(options.webhookDisableAfterMs === undefined
          ? {}
          : { disableAfterMs: options.webhookDisableAfterMs })
      }
    })
  ).pipe(
    Layer.provideMerge(
      Layer.merge(ports, WebhookSettings.layer({ allowPrivateNetworks: options.webhookAllowPrivateNetworks }))
    )
  )
  if (options.dispatcher === false) return useCases
  return dispatcherLayer({
    concurrency: options.dispatcher?.concurrency ?? 32,
    pollIntervalMs: options.dispatcher?.pollIntervalMs ?? 1_000
  }).pipe(Layer.provideMerge(useCases))
}

export const embeddedRuntime = (options: RuntimeOptions) => withUseCases(MemoryPortsLive, options)

/** StoreStatus over the SqlClient of the ports. */
const sqlStoreStatus = (description: string) =>
  Layer.effect(
    StoreStatus,
    Effect.map(Effect.context<SqlClient.SqlClient>(), (context) => ({
      ping: Effect.provide(pingDatabase, context),
      isEmpty: Effect.provide(databaseIsEmpty, context),
      description
    }))
  )

const onSql = <E>(
  ports: Layer.Layer<SqlClient.SqlClient | Layer.Layer.Success<ReturnType<typeof PostgresPortsLive>>, E>,
  description: string,
  options: RuntimeOptions
) => withUseCases(Layer.provideMerge(sqlStoreStatus(description), ports), options)

/** Every use case over the ports on a database client layer (tests pass a fresh database). */
export const sqlRuntime = <E>(
  database: Layer.Layer<SqlDatabase, E>,
  description: string,
  options: RuntimeOptions
) => onSql(pgPortsOn(database), description, options)

/** On a PostgreSQL server; builds after the pending migrations are applied. */
export const postgresRuntime = (url: Redacted.Redacted, options: RuntimeOptions) =>
  onSql(PostgresPortsLive({ url }), "PostgreSQL", options)

/** On PGlite with its files under `dataDir`, which it locks; builds after the migrations. */
export const pgliteRuntime = (dataDir: string, options: RuntimeOptions) =>
  onSql(PglitePortsLive(dataDir), `embedded database in ${Path.resolve(dataDir)}`, options)

/** The runtime the configuration asks for. */
export const configuredRuntime = (
  config: {
    readonly databaseUrl: { _tag: "Some"; value: Redacted.Redacted } | { _tag: "None" }
    readonly dataDir: string
  },
  options: RuntimeOptions
) =>
  config.databaseUrl._tag === "Some"
    ? postgresRuntime(config.databaseUrl.value, options)
    : pgliteRuntime(config.dataDir, options)
