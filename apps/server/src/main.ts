/**
 * `pnpm start`: reads the configuration, starts the server on PostgreSQL (DATABASE_URL)
 * or on the embedded database under INTAKE_DATA_DIR, migrated first, and, when the store
 * is empty, creates the demo workspace and prints its key once: on the embedded database,
 * or wherever INTAKE_DEMO=true asks for it (never by default on PostgreSQL).
 */
// First, before anything allocates: see its comment.
import "@intake/node/gc-tuning"
import * as Path from "node:path"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { loggingLayer } from "@intake/node"
import { poolSettings } from "@intake/postgres"
import { Console, Duration, Effect, Layer, Option } from "effect"
import { describeConfigError, serverConfig, wantsDemo } from "./config.js"
import { StoreStatus } from "./database.js"
import { demoBanner, seedDemo } from "./demo.js"
import { configuredRuntime } from "./runtime.js"
import { ListeningServer, serverLayer } from "./server.js"
import { describeListenFailure } from "./start-failure.js"

class StartupError extends Error {}

const program = Effect.gen(function* () {
  const config = yield* Effect.mapError(serverConfig, (error) => new StartupError(describeConfigError(error)))
  // A relative INTAKE_DATA_DIR is relative to where `pnpm start` was typed, not to apps/server.
  const dataDir = Path.resolve(process.env.INIT_CWD ?? process.cwd(), config.dataDir)
  const services = configuredRuntime(
    { databaseUrl: config.databaseUrl, dataDir },
    {
      webhookAllowPrivateNetworks: config.webhookAllowPrivateNetworks,
      redisUrl: config.redisUrl,
      redisClusterNodes: config.redisClusterNodes,
      redisClusterAuth: config.redisClusterAuth,
      redisKeyPrefix: config.redisKeyPrefix,
      access: { keyCacheTtlMs: Duration.toMillis(config.keyCacheTtl) },
      webhookRetrySchedule: config.webhookRetrySchedule.map(Duration.toMillis),
      webhookDisableAfterMs: Duration.toMillis(config.webhookDisableAfter),
      webhookIsolation: config.webhookIsolation,
      webhookRetentionMs: Duration.toMillis(config.webhookRetention),
      summarizer: config.summarizer,
      databasePool: poolSettings({ poolMode: config.databasePoolMode, directUrl: config.databaseDirectUrl }),
      tracing: config.tracing
    }
  )
  const server = serverLayer({
    port: config.port,
    adminToken: config.adminToken,
    metricsToken: config.metricsToken,
    requestTimeout: config.requestTimeout,
    bodyTimeout: config.bodyTimeout,
    shutdownDrain: config.shutdownDrain,
    headersTimeoutMs: Duration.toMillis(config.headersTimeout),
    idleTimeoutMs: Duration.toMillis(config.idleTimeout),
    admission: config.admission,
    trustedProxies: config.trustedProxies,
    corsOrigins: config.corsOrigins
  }).pipe(Layer.provideMerge(services))
  return yield* Effect.gen(function* () {
    const { port } = yield* ListeningServer
    const baseUrl = `http://localhost:${port}`
    const store = yield* StoreStatus
    const limits =
      config.redisClusterNodes.length > 0
        ? "rate limits on Redis Cluster"
        : Option.isSome(config.redisUrl)
          ? "rate limits on Redis"
          : "in-process rate limits"
    // The model and the server's address, never the key.
    const summaries = Option.match(
      config.summarizer.kind === "openai" ? config.summarizer.model : Option.none(),
      {
        onNone: () => "built-in summaries",
        onSome: (model) => `summaries by ${model} at ${new URL(config.summarizer.url).host}`
      }
    )
    yield* Effect.logInfo(`Intake listening on ${baseUrl}/v1 (${store.description}, ${limits}, ${summaries})`)
    const empty = yield* store.isEmpty
    if (empty && wantsDemo(config)) {
      const demo = yield* seedDemo
      // The one place a full key is printed: straight to stdout, not through the logger.
      yield* Console.log(demoBanner(demo, baseUrl, store.description))
    } else if (empty) {
      // A production database gets no key in its logs: workspaces come from the operator API.
      yield* Console.log(
        `The ${store.description} holds no workspace yet: create one through the operator API (INTAKE_ADMIN_TOKEN), or start once with INTAKE_DEMO=true for a demo workspace and key.`
      )
    } else {
      yield* Console.log(
        `Using the existing data of the ${store.description}${wantsDemo(config) ? "; its demo key was printed at the first start" : ""}.`
      )
    }
    return yield* Effect.never
  }).pipe(
    Effect.provide(server),
    // Outside `server`, so that every fiber the server and the dispatcher fork logs in JSON.
    Effect.provide(loggingLayer(config.logLevel)),
    Effect.catchTag("DataDirectoryLocked", (locked) => Effect.fail(new StartupError(locked.message))),
    Effect.catchTag("ListenFailed", (error) =>
      Effect.fail(new StartupError(describeListenFailure(error.cause, config.port)))
    )
  )
}).pipe(
  Effect.catchAll((error) =>
    Effect.zipRight(
      Console.error(error instanceof StartupError ? error.message : `Failed to start: ${String(error)}`),
      Effect.fail(error)
    )
  )
)

NodeRuntime.runMain(program, { disableErrorReporting: true, disablePrettyLogger: true })
