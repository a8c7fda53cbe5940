/**
 * `pnpm --filter @intake/worker start`: a dispatcher process on the PostgreSQL database
 * of DATABASE_URL (migrated first), delivering what any server or worker queued there.
 * Any number of workers may share one database. On SIGTERM (or Ctrl-C) it finishes the
 * attempts it claimed and claims nothing more. It needs a shared store: with the
 * embedded database the server runs the dispatcher in-process. It logs the database going
 * away and coming back (DatabaseState). With INTAKE_SUMMARIZER=openai it also runs the
 * summary jobs (docs/summaries.md).
 */
// First, before anything allocates: see its comment.
import "@intake/node/gc-tuning"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import {
  deliveryConfig,
  deliveryEngine,
  dispatcherLayer,
  historyPurgeLayer,
  MetricsServer,
  metricsServerLayer,
  metricsTokenConfig,
  summarizerConfig,
  summarizerLayers,
  watchDatabase
} from "@intake/delivery"
import { WebhookSettings } from "@intake/domain"
import { InProcessLive } from "@intake/memory"
import {
  loggingLayer,
  logLevelConfig,
  MetricsLive,
  NodePlatformLive,
  tracingConfig,
  tracingLayer
} from "@intake/node"
import { databaseSettings, PostgresPortsLive, pingDatabase, poolSettings } from "@intake/postgres"
import { Cause, Config, ConfigError, Console, Effect, Layer, Option } from "effect"

const program = Effect.gen(function* () {
  const config = yield* deliveryConfig
  const logLevel = yield* logLevelConfig
  const summaries = summarizerLayers(yield* summarizerConfig)
  const database = yield* databaseSettings
  const databaseUrl = database.url
  // docs/operations.md, Metrics: GET /metrics on a port of its own, this machine only by default.
  const metricsPort = yield* Config.option(
    Config.integer("WORKER_METRICS_PORT").pipe(
      Config.validate({ message: "must be a port (0 to 65535)", validation: (n) => n >= 0 && n <= 65_535 })
    )
  )
  const metricsHost = yield* Config.string("WORKER_METRICS_HOST").pipe(Config.withDefault("127.0.0.1"))
  const metricsToken = yield* metricsTokenConfig
  if (Option.isNone(databaseUrl)) {
    yield* Console.error(
      "The worker needs DATABASE_URL. Without it the server runs the dispatcher in-process on its embedded store."
    )
    return yield* Effect.fail("DATABASE_URL is not set")
  }
  // docs/operations.md, Traces: beside the platform, so the statements and the dispatcher see it.
  const tracing = Option.match(yield* tracingConfig("intake-worker"), {
    onNone: () => Layer.empty,
    onSome: tracingLayer
  })
  const ports = PostgresPortsLive({ url: databaseUrl.value, ...poolSettings(database) }).pipe(
    Layer.provideMerge(Layer.mergeAll(InProcessLive, NodePlatformLive, tracing))
  )
  const engine = deliveryEngine({
    allowPrivateNetworks: config.allowPrivateNetworks,
    settings: {
      retrySchedule: config.retrySchedule,
      disableAfterMs: config.disableAfterMs,
      leaseMs: config.leaseMs,
      isolation: config.isolation,
      retentionMs: config.retentionMs
    }
  }).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        Option.match(summaries.model, {
          onNone: () => ports,
          // The right side of a merge wins: the model summarizer replaces the ports' built-in one.
          onSome: ({ summarizer }) => Layer.merge(ports, summarizer)
        }),
        WebhookSettings.layer({ allowPrivateNetworks: config.allowPrivateNetworks }),
        summaries.settings
      )
    )
  )
  const worker = Layer.mergeAll(
    dispatcherLayer({ concurrency: config.concurrency, pollIntervalMs: config.pollIntervalMs }),
    watchDatabase(pingDatabase),
    historyPurgeLayer({ retentionMs: config.retentionMs }),
    Option.match(summaries.model, { onNone: () => Layer.empty, onSome: ({ runner }) => runner }),
    Option.match(metricsPort, {
      onNone: () => Layer.empty,
      onSome: (port) => metricsServerLayer({ port, host: metricsHost, token: metricsToken })
    })
  ).pipe(Layer.provide(engine), Layer.provideMerge(MetricsLive))
  return yield* Effect.gen(function* () {
    const metrics = yield* Effect.serviceOption(MetricsServer)
    const scrapedAt = Option.match(metrics, {
      onNone: () => "",
      onSome: ({ port }) =>
        `, metrics on http://${metricsHost.includes(":") ? `[${metricsHost}]` : metricsHost}:${port}/metrics`
    })
    // The line a supervisor (or a test) waits for.
    yield* Console.log(`worker ready (pid ${process.pid}, concurrency ${config.concurrency}${scrapedAt})`)
    return yield* Effect.never
  }).pipe(
    Effect.provide(worker),
    Effect.provide(loggingLayer(logLevel)),
    Effect.tapErrorCause((cause) => Console.error(`The worker stopped:\n${Cause.pretty(cause)}`))
  )
}).pipe(
  Effect.tapError((error) =>
    ConfigError.isConfigError(error) ? Console.error(`Invalid configuration: ${String(error)}`) : Effect.void
  )
)

NodeRuntime.runMain(program, { disableErrorReporting: true, disablePrettyLogger: true })
