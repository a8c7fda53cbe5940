/**
 * The server's configuration (docs/rules.md, Running), read through effect `Config` so a
 * bad value fails at start with the variable's name.
 */

import {
  isolationConfig,
  metricsTokenConfig,
  type SummarizerConfig,
  summarizerConfig
} from "@intake/delivery"
import { ClientAddress, type DeliveryIsolation, RetrySchedule } from "@intake/domain/internal"
import { logLevelConfig, type TracingConfig, tracingConfig } from "@intake/node"
import { databaseSettings, type PoolMode } from "@intake/postgres"
import { Config, ConfigError, Duration, Either, type LogLevel, Option, Redacted } from "effect"
import { MAX_BODY_BYTES } from "./body.js"
import { type CorsOrigins, parseCorsOrigins } from "./cors.js"
import type { RedisClusterAuth } from "./runtime.js"
import { type AdmissionBounds, DEFAULT_ADMISSION } from "./server.js"

export interface ServerConfig {
  readonly port: number
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  /** DATABASE_POOL_MODE: `transaction` when DATABASE_URL is a transaction-mode pooler (docs/deploy-postgres.md). */
  readonly databasePoolMode: PoolMode
  /** DATABASE_DIRECT_URL: straight to PostgreSQL, for LISTEN and the migrations. */
  readonly databaseDirectUrl: Option.Option<Redacted.Redacted>
  readonly dataDir: string
  readonly redisUrl: Option.Option<Redacted.Redacted>
  /** REDIS_CLUSTER_NODES: host:port of Redis Cluster nodes, instead of REDIS_URL (empty: none). */
  readonly redisClusterNodes: ReadonlyArray<string>
  /** REDIS_CLUSTER_PASSWORD and REDIS_CLUSTER_USERNAME: what the cluster's nodes ask for (none: no password). */
  readonly redisClusterAuth: Option.Option<RedisClusterAuth>
  /** REDIS_KEY_PREFIX: before every Redis key and channel, so deployments can share one Redis. */
  readonly redisKeyPrefix: string
  readonly adminToken: Option.Option<Redacted.Redacted>
  /** INTAKE_METRICS_TOKEN: when set, GET /metrics wants it as a bearer token. */
  readonly metricsToken: Option.Option<Redacted.Redacted>
  readonly webhookAllowPrivateNetworks: boolean
  readonly webhookRetrySchedule: ReadonlyArray<Duration.Duration>
  readonly webhookDisableAfter: Duration.Duration
  /** WEBHOOK_ENDPOINT_CONCURRENCY, WEBHOOK_CIRCUIT_…: per-endpoint isolation (docs/webhooks.md). */
  readonly webhookIsolation: DeliveryIsolation.IsolationPolicy
  /** WEBHOOK_RETENTION: finished attempts and events older than this are purged (default 30 d). */
  readonly webhookRetention: Duration.Duration
  /** INTAKE_KEY_CACHE_TTL: how long an instance trusts a cached key (the domain caps it at 60 s). */
  readonly keyCacheTtl: Duration.Duration
  /** LOG_LEVEL: debug, info (default), warning, error or none. */
  readonly logLevel: LogLevel.LogLevel
  /** REQUEST_TIMEOUT: a request not answered by then answers 500 (default 30 s). */
  readonly requestTimeout: Duration.Duration
  /** INTAKE_BODY_TIMEOUT: a request body still arriving then answers 400 (default 10 s). */
  readonly bodyTimeout: Duration.Duration
  /** INTAKE_HEADERS_TIMEOUT: how long a connection may take to send a request's headers (default 10 s). */
  readonly headersTimeout: Duration.Duration
  /** INTAKE_IDLE_TIMEOUT: how long a keep-alive connection may wait for its next request (default 5 s). */
  readonly idleTimeout: Duration.Duration
  /** INTAKE_MAX_CONNECTIONS, INTAKE_MAX_REQUESTS_IN_FLIGHT, INTAKE_MAX_BODY_BYTES_IN_FLIGHT (docs/rules.md, Overload). */
  readonly admission: AdmissionBounds
  /** INTAKE_SHUTDOWN_DRAIN: how long a stopping server drains before it stops accepting (default 5 s; 0 for none). */
  readonly shutdownDrain: Duration.Duration
  /** INTAKE_TRUSTED_PROXIES: whose X-Forwarded-For names the client (none by default). */
  readonly trustedProxies: ReadonlyArray<ClientAddress.AddressRange>
  /** INTAKE_CORS_ORIGINS: origins answered as CORS on /v1; undefined, CORS is off. */
  readonly corsOrigins: CorsOrigins | undefined
  /** INTAKE_SUMMARIZER…: built-in, or a model behind the OpenAI Responses API. */
  readonly summarizer: SummarizerConfig
  /** OTEL_EXPORTER_OTLP_ENDPOINT…: traces over OTLP/HTTP when set (docs/operations.md, Traces). */
  readonly tracing: Option.Option<TracingConfig>
  /**
   * INTAKE_DEMO: create the demo workspace (and print its key) in an empty store. Unset:
   * only on the embedded database, never on PostgreSQL (see `wantsDemo`).
   */
  readonly demo: Option.Option<boolean>
}

/** Demo data on an empty store: when asked (INTAKE_DEMO), else only on the embedded default. */
export const wantsDemo = (config: Pick<ServerConfig, "demo" | "databaseUrl">): boolean =>
  Option.getOrElse(config.demo, () => Option.isNone(config.databaseUrl))

/** `5s`, `30m`, `2h`, `5d`, `250ms`: a positive whole number and a unit (the domain's rule). */
export const parseDuration = (text: string): Either.Either<Duration.Duration, string> =>
  Either.map(RetrySchedule.parseDuration(text), Duration.millis)

const duration = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail((text) =>
      // The path names the variable in the one line a bad value prints.
      Either.mapLeft(parseDuration(text), (message) => ConfigError.InvalidData([name], message))
    )
  )

/** As `duration`, and a zero (`0`, `0s`...) for none. */
const durationOrZero = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail((text) =>
      /^0(ms|s|m|h|d)?$/.test(text.trim())
        ? Either.right(Duration.zero)
        : Either.mapLeft(parseDuration(text), (message) =>
            ConfigError.InvalidData([name], `${message}, or 0 for none`)
          )
    )
  )

/** A whole number of at least `min`. */
const count = (name: string, fallback: number, min = 1) =>
  Config.string(name).pipe(
    Config.withDefault(String(fallback)),
    Config.mapOrFail((text) => {
      const value = Number(text.trim())
      return /^\d+$/.test(text.trim()) && value >= min
        ? Either.right(value)
        : Either.left(
            ConfigError.InvalidData([name], `expected a whole number of at least ${min}, got "${text}"`)
          )
    })
  )

const SIZE_UNITS: Record<string, number> = { "": 1, b: 1, kb: 1_024, mb: 1_048_576, gb: 1_073_741_824 }

/** A size in bytes, `16mb`, `512kb` or `20000000` (units of 1,024), of at least `min` bytes. */
export const parseSize = (text: string, min: number): Either.Either<number, string> => {
  const match = /^(\d+)\s*(b|kb|mb|gb)?$/i.exec(text.trim())
  const bytes = match === null ? Number.NaN : Number(match[1]) * SIZE_UNITS[(match[2] ?? "").toLowerCase()]!
  return Number.isSafeInteger(bytes) && bytes >= min
    ? Either.right(bytes)
    : Either.left(`expected a size of at least ${min} bytes such as 16mb or 512kb, got "${text}"`)
}

const size = (name: string, fallback: number, min: number) =>
  Config.string(name).pipe(
    Config.withDefault(String(fallback)),
    Config.mapOrFail((text) =>
      Either.mapLeft(parseSize(text, min), (message) => ConfigError.InvalidData([name], message))
    )
  )

const admission: Config.Config<AdmissionBounds> = Config.all({
  maxConnections: count("INTAKE_MAX_CONNECTIONS", DEFAULT_ADMISSION.maxConnections),
  maxRequestsInFlight: count("INTAKE_MAX_REQUESTS_IN_FLIGHT", DEFAULT_ADMISSION.maxRequestsInFlight),
  // At least one body of the largest size, or such a body could never be admitted.
  maxBodyBytesInFlight: size(
    "INTAKE_MAX_BODY_BYTES_IN_FLIGHT",
    DEFAULT_ADMISSION.maxBodyBytesInFlight,
    MAX_BODY_BYTES
  )
})

const schedule = Config.string("WEBHOOK_RETRY_SCHEDULE").pipe(
  Config.withDefault(RetrySchedule.DEFAULT_RETRY_SCHEDULE),
  Config.mapOrFail((text) =>
    Either.mapLeft(Either.all(text.split(",").map(parseDuration)), (message) =>
      ConfigError.InvalidData(["WEBHOOK_RETRY_SCHEDULE"], message)
    )
  )
)

const trustedProxies = Config.string("INTAKE_TRUSTED_PROXIES").pipe(
  Config.withDefault(""),
  Config.mapOrFail((text) =>
    Either.mapLeft(ClientAddress.parseTrustedProxies(text), (message) =>
      ConfigError.InvalidData(["INTAKE_TRUSTED_PROXIES"], message)
    )
  )
)

const optionalSecret = (name: string) =>
  Config.option(Config.redacted(name)).pipe(
    Config.map(Option.filter((value) => Redacted.value(value).trim() !== ""))
  )

/** "host:port,host:port": some nodes of a Redis Cluster (the client learns the rest). */
const clusterNodes = Config.string("REDIS_CLUSTER_NODES").pipe(
  Config.withDefault(""),
  Config.mapOrFail((text) => {
    const nodes = text
      .split(",")
      .map((node) => node.trim())
      .filter((node) => node !== "")
    const wrong = nodes.find((node) => !/^[^\s:/]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(node))
    return wrong === undefined
      ? Either.right(nodes)
      : Either.left(
          ConfigError.InvalidData(["REDIS_CLUSTER_NODES"], `expected host:port,host:port,…, got "${wrong}"`)
        )
  })
)

const settings = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  database: databaseSettings,
  dataDir: Config.string("INTAKE_DATA_DIR").pipe(Config.withDefault(".data")),
  redisUrl: optionalSecret("REDIS_URL"),
  redisClusterNodes: clusterNodes,
  redisClusterPassword: optionalSecret("REDIS_CLUSTER_PASSWORD"),
  redisClusterUsername: Config.option(Config.nonEmptyString("REDIS_CLUSTER_USERNAME")),
  redisKeyPrefix: Config.string("REDIS_KEY_PREFIX").pipe(Config.withDefault("intake:")),
  adminToken: optionalSecret("INTAKE_ADMIN_TOKEN"),
  metricsToken: metricsTokenConfig,
  webhookAllowPrivateNetworks: Config.boolean("WEBHOOK_ALLOW_PRIVATE_NETWORKS").pipe(
    Config.withDefault(false)
  ),
  webhookRetrySchedule: schedule,
  webhookDisableAfter: duration("WEBHOOK_DISABLE_AFTER", "5d"),
  webhookIsolation: isolationConfig,
  webhookRetention: duration("WEBHOOK_RETENTION", RetrySchedule.DEFAULT_RETENTION),
  keyCacheTtl: duration("INTAKE_KEY_CACHE_TTL", "60s"),
  logLevel: logLevelConfig,
  requestTimeout: duration("REQUEST_TIMEOUT", "30s"),
  bodyTimeout: duration("INTAKE_BODY_TIMEOUT", "10s"),
  headersTimeout: duration("INTAKE_HEADERS_TIMEOUT", "10s"),
  idleTimeout: duration("INTAKE_IDLE_TIMEOUT", "5s"),
  admission,
  shutdownDrain: durationOrZero("INTAKE_SHUTDOWN_DRAIN", "5s"),
  trustedProxies,
  corsOrigins: Config.string("INTAKE_CORS_ORIGINS").pipe(
    Config.withDefault(""),
    Config.mapOrFail((text) => {
      const parsed = parseCorsOrigins(text)
      return "error" in parsed
        ? Either.left(ConfigError.InvalidData(["INTAKE_CORS_ORIGINS"], parsed.error))
        : Either.right(parsed.origins)
    })
  ),
  summarizer: summarizerConfig,
  tracing: tracingConfig("intake-server"),
  demo: Config.option(Config.boolean("INTAKE_DEMO"))
})

export const serverConfig: Config.Config<ServerConfig> = settings.pipe(
  Config.mapOrFail(({ database, redisClusterPassword, redisClusterUsername, ...config }) => {
    if (Option.isSome(config.redisUrl) && config.redisClusterNodes.length > 0)
      return Either.left(
        ConfigError.InvalidData(
          ["REDIS_CLUSTER_NODES"],
          "set either REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both"
        )
      )
    // One Redis takes its credentials in REDIS_URL; a password nothing would use is a mistake.
    if (
      config.redisClusterNodes.length === 0 &&
      (Option.isSome(redisClusterPassword) || Option.isSome(redisClusterUsername))
    )
      return Either.left(
        ConfigError.InvalidData(
          [Option.isSome(redisClusterPassword) ? "REDIS_CLUSTER_PASSWORD" : "REDIS_CLUSTER_USERNAME"],
          "it is for a Redis Cluster (REDIS_CLUSTER_NODES); one Redis takes its password in REDIS_URL"
        )
      )
    if (Option.isSome(redisClusterUsername) && Option.isNone(redisClusterPassword))
      return Either.left(
        ConfigError.InvalidData(["REDIS_CLUSTER_USERNAME"], "needs REDIS_CLUSTER_PASSWORD as well")
      )
    return Either.right({
      ...config,
      redisClusterAuth: Option.map(redisClusterPassword, (password) => ({
        ...Option.match(redisClusterUsername, { onNone: () => ({}), onSome: (username) => ({ username }) }),
        password
      })),
      databaseUrl: database.url,
      databasePoolMode: database.poolMode,
      databaseDirectUrl: database.directUrl
    })
  })
)

/** One line naming the variable and what is wrong with it. */
export const describeConfigError = (error: ConfigError.ConfigError): string => {
  const messages: Array<string> = []
  const walk = (e: ConfigError.ConfigError): void => {
    switch (e._op) {
      case "And":
      case "Or":
        walk(e.left)
        walk(e.right)
        return
      case "InvalidData":
      case "MissingData":
      case "SourceUnavailable":
      case "Unsupported":
        messages.push(`${e.path.join(".") || "configuration"}: ${e.message}`)
    }
  }
  walk(error)
  return `Invalid configuration: ${messages.join("; ")}`
}
