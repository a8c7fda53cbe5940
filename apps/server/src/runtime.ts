/**
 * The runtimes: every use case over one set of adapters, with the webhook settings of
 * the configuration, and the webhook dispatcher running in-process (unless turned off).
 * `pnpm start` runs on PostgreSQL when DATABASE_URL is set, else on PGlite under
 * INTAKE_DATA_DIR; the in-memory runtime serves the HTTP tests. With a Redis URL (or a
 * Redis Cluster's nodes), rate limits and key-cache invalidation go through Redis, so they
 * hold across instances; otherwise they stay in-process.
 */
import * as Path from "node:path"
import type { SqlClient } from "@effect/sql"
import {
  deliveryEngine,
  dispatcherLayer,
  historyPurgeLayer,
  type SummarizerConfig,
  summarizerLayers,
  watchDatabase
} from "@intake/delivery"
import {
  type AccessSettings,
  type DeliveryIsolation,
  makeUseCasesLayer,
  WebhookSettings
} from "@intake/domain"
import { InProcessLive, MemoryPortsLive } from "@intake/memory"
import { MetricsLive, NodePlatformLive, type TracingConfig, tracingLayer } from "@intake/node"
import {
  databaseIsEmpty,
  PglitePortsLive,
  type PostgresConfig,
  PostgresPortsLive,
  pgPortsOn,
  pingDatabase,
  type SqlDatabase
} from "@intake/postgres"
import { RedisConnection, RedisLive } from "@intake/redis"
import { type Duration, Effect, Layer, Option, Redacted } from "effect"
import { StoreStatus } from "./database.js"
import { Readiness, readinessOf } from "./readiness.js"

export interface RuntimeOptions {
  readonly webhookAllowPrivateNetworks: boolean
  /** REDIS_URL: the shared rate limiter and access invalidation; in-process ones without. */
  readonly redisUrl?: Option.Option<Redacted.Redacted>
  /** REDIS_CLUSTER_NODES: the same on a Redis Cluster, in place of REDIS_URL (docs/operations.md, Redis Cluster). */
  readonly redisClusterNodes?: ReadonlyArray<string>
  /** REDIS_CLUSTER_PASSWORD and REDIS_CLUSTER_USERNAME, when the cluster's nodes ask for them. */
  readonly redisClusterAuth?: Option.Option<RedisClusterAuth>
  /** Before every Redis key and channel (default "intake:"). */
  readonly redisKeyPrefix?: string
  /** Access settings beyond the domain's defaults (e.g. the key cache TTL). */
  readonly access?: Partial<AccessSettings>

  /** WEBHOOK_RETRY_SCHEDULE in milliseconds; the default of docs/rules.md, Webhooks and deliveries, when omitted. */
  readonly webhookRetrySchedule?: ReadonlyArray<number>
  /** WEBHOOK_DISABLE_AFTER in milliseconds; 5 days when omitted. */
  readonly webhookDisableAfterMs?: number
  /** WEBHOOK_ENDPOINT_CONCURRENCY, WEBHOOK_CIRCUIT_…; the domain's defaults when omitted. */
  readonly webhookIsolation?: DeliveryIsolation.IsolationPolicy
  /** WEBHOOK_RETENTION in milliseconds; 30 days when omitted. */
  readonly webhookRetentionMs?: number
  /** The in-process dispatcher (and summary runner, with a model summarizer); on unless `false`. */
  readonly dispatcher?: false | { readonly concurrency?: number; readonly pollIntervalMs?: number }
  /** INTAKE_SUMMARIZER…: the built-in summarizer when omitted. */
  readonly summarizer?: SummarizerConfig
  /** How often the database is pinged to log its changes (DatabaseState); 5 s when omitted. */
  readonly databaseWatchInterval?: Duration.DurationInput
  /** On PostgreSQL: the longest wait for a statement's answer; the adapter's 30 s when omitted. */
  readonly databaseQueryTimeout?: Duration.DurationInput
  /** On PostgreSQL: DATABASE_POOL_MODE and DATABASE_DIRECT_URL (docs/deploy-postgres.md); a direct connection when omitted. */
  readonly databasePool?: Pick<PostgresConfig, "poolMode" | "directUrl">
  /** OTEL_EXPORTER_OTLP_ENDPOINT…: spans over OTLP/HTTP (docs/operations.md, Traces); none when omitted. */
  readonly tracing?: Option.Option<TracingConfig>
}

/**
 * The platform (crypto, ids, clock, the receiver client) and, when traces are on, the tracing
 * layer beside it: below the ports, so that the statements, the use cases, the dispatcher and
 * the server all see TraceContext.Tracing when they are built.
 */
const platformOf = (options: RuntimeOptions) =>
  Option.match(options.tracing ?? Option.none(), {
    onNone: () => NodePlatformLive,
    onSome: (config) => Layer.merge(NodePlatformLive, tracingLayer(config))
  })

/** Where Redis is: one server's URL, or some nodes of a cluster. */
export type RedisTarget =
  | { readonly url: Redacted.Redacted }
  | { readonly clusterNodes: ReadonlyArray<string>; readonly auth: Option.Option<RedisClusterAuth> }

/** What every node of a Redis Cluster asks for; the password stays redacted until the client is made. */
export interface RedisClusterAuth {
  readonly username?: string
  readonly password: Redacted.Redacted
}

/** The cluster's nodes when given, else the URL when given, else none. */
export const redisTargetOf = (
  options: Pick<RuntimeOptions, "redisUrl" | "redisClusterNodes" | "redisClusterAuth">
) =>
  options.redisClusterNodes !== undefined && options.redisClusterNodes.length > 0
    ? Option.some<RedisTarget>({
        clusterNodes: options.redisClusterNodes,
        auth: options.redisClusterAuth ?? Option.none()
      })
    : Option.map(options.redisUrl ?? Option.none(), (url): RedisTarget => ({ url }))

/**
 * Redis's RateLimiter and AccessInvalidation in place of those of `ports`, and a readiness
 * check that pings it and reports its configuration faults; `ports` as they are without Redis.
 */
export const withSharedAccessState = <A, E, R>(
  ports: Layer.Layer<A, E, R>,
  redis: Option.Option<RedisTarget>,
  keyPrefix?: string
) =>
  Option.match(redis, {
    onNone: () => ports,
    onSome: (target) =>
      // The right side of a merge wins: Redis's services replace the in-process ones.
      Layer.merge(
        ports,
        Layer.effect(
          Readiness,
          Effect.map(RedisConnection, ({ ping, faults }) =>
            readinessOf({ redis: ping }, undefined, { redis: faults.recent })
          )
        ).pipe(
          Layer.provideMerge(
            RedisLive({
              ...("url" in target
                ? { url: Redacted.value(target.url) }
                : {
                    url: "",
                    clusterNodes: target.clusterNodes,
                    ...Option.match(target.auth, {
                      onNone: () => ({}),
                      onSome: ({ password, ...rest }) => ({
                        clusterAuth: { ...rest, password: Redacted.value(password) }
                      })
                    })
                  }),
              ...(keyPrefix === undefined ? {} : { keyPrefix })
            })
          )
        )
      )
  })

const withUseCases = <ROut, E>(ports: Layer.Layer<ROut, E>, options: RuntimeOptions) => {
  const summaries = Option.match(Option.fromNullable(options.summarizer), {
    onNone: () => ({ settings: Layer.empty, model: Option.none() }),
    onSome: summarizerLayers
  })
  const deliverySettings = {
    ...(options.webhookRetrySchedule === undefined ? {} : { retrySchedule: options.webhookRetrySchedule }),
    ...(options.webhookDisableAfterMs === undefined ? {} : { disableAfterMs: options.webhookDisableAfterMs }),
    ...(options.webhookRetentionMs === undefined ? {} : { retentionMs: options.webhookRetentionMs }),
    ...(options.webhookIsolation === undefined ? {} : { isolation: options.webhookIsolation })
  }
  const useCases = Layer.mergeAll(
    makeUseCasesLayer(options.access),
    deliveryEngine({
      allowPrivateNetworks: options.webhookAllowPrivateNetworks,
      settings: deliverySettings
    }),
    // Every process purges (as the idempotency records' purge): batches skip what another holds.
    historyPurgeLayer(deliverySettings)
  ).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        withSharedAccessState(
          // The right side of a merge wins: the model summarizer replaces the ports' built-in one.
          Option.match(summaries.model, {
            onNone: () => ports,
            onSome: ({ summarizer }) => Layer.merge(ports, summarizer)
          }),
          redisTargetOf(options),
          options.redisKeyPrefix
        ),
        WebhookSettings.layer({ allowPrivateNetworks: options.webhookAllowPrivateNetworks }),
        summaries.settings
      )
    )
  )
  if (options.dispatcher === false) return Layer.provideMerge(useCases, MetricsLive)
  const background = Option.match(summaries.model, {
    onNone: () => Layer.empty,
    onSome: ({ runner }) => runner
  })
  return Layer.merge(
    dispatcherLayer({
      concurrency: options.dispatcher?.concurrency ?? 32,
      pollIntervalMs: options.dispatcher?.pollIntervalMs ?? 1_000
    }),
    background
  ).pipe(Layer.provideMerge(useCases), Layer.provideMerge(MetricsLive))
}

export const embeddedRuntime = (options: RuntimeOptions) =>
  withUseCases(MemoryPortsLive.pipe(Layer.provideMerge(platformOf(options))), options)

type PortsFromThisInstance =
  | Layer.Layer.Success<typeof InProcessLive>
  | Layer.Layer.Success<typeof NodePlatformLive>

/** The ports on a database, with the platform and what stays in this process beside them. */
const onThisInstance = <A, E>(ports: Layer.Layer<A, E, PortsFromThisInstance>, options: RuntimeOptions) =>
  ports.pipe(Layer.provideMerge(Layer.merge(InProcessLive, platformOf(options))))

/** StoreStatus over the SqlClient of the ports, and the DatabaseState its watcher keeps. */
const sqlStoreStatus = (description: string, options: RuntimeOptions) =>
  Layer.merge(
    Layer.effect(
      StoreStatus,
      Effect.map(Effect.context<SqlClient.SqlClient>(), (context) => ({
        isEmpty: Effect.provide(databaseIsEmpty, context),
        description
      }))
    ),
    watchDatabase(
      pingDatabase,
      options.databaseWatchInterval === undefined ? {} : { interval: options.databaseWatchInterval }
    )
  )

const onSql = <E>(
  ports: Layer.Layer<
    SqlClient.SqlClient | Layer.Layer.Success<ReturnType<typeof PostgresPortsLive>>,
    E,
    PortsFromThisInstance
  >,
  description: string,
  options: RuntimeOptions
) =>
  withUseCases(
    Layer.provideMerge(sqlStoreStatus(description, options), onThisInstance(ports, options)),
    options
  )

/** Every use case over the ports on a database client layer (tests pass a fresh database). */
export const sqlRuntime = <E>(
  database: Layer.Layer<SqlDatabase, E>,
  description: string,
  options: RuntimeOptions
) => onSql(pgPortsOn(database), description, options)

/** On a PostgreSQL server; builds after the pending migrations are applied. */
export const postgresRuntime = (url: Redacted.Redacted, options: RuntimeOptions) =>
  onSql(
    PostgresPortsLive({
      url,
      ...options.databasePool,
      ...(options.databaseQueryTimeout === undefined ? {} : { queryTimeout: options.databaseQueryTimeout })
    }),
    "PostgreSQL",
    options
  )

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
