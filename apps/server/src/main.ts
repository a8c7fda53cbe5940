/**
 * `pnpm start`: reads the configuration, starts the server on the embedded in-memory
 * runtime and, the store being empty, creates the demo workspace and prints its key once.
 */
import { HttpServer } from "@effect/platform"
import { NodeRuntime } from "@effect/platform-node"
import { Console, Duration, Effect, Layer, Option } from "effect"
import { describeConfigError, serverConfig } from "./config.js"
import { demoBanner, seedDemo } from "./demo.js"
import { embeddedRuntime } from "./runtime.js"
import { serverLayer, serverPort } from "./server.js"

class StartupError extends Error {}

const program = Effect.gen(function* () {
  const config = yield* Effect.mapError(serverConfig, (error) => new StartupError(describeConfigError(error)))
  if (Option.isSome(config.databaseUrl)) {
    return yield* Effect.fail(
      new StartupError(
        "DATABASE_URL is set but the PostgreSQL adapter is not part of this build; unset it to run on the embedded in-memory store."
      )
    )
  }
  if (Option.isSome(config.redisUrl)) {
    return yield* Effect.fail(
      new StartupError(
        "REDIS_URL is set but the Redis adapter is not part of this build; unset it to use the in-process rate limiter."
      )
    )
  }
  const services = embeddedRuntime({
    webhookAllowPrivateNetworks: config.webhookAllowPrivateNetworks,
    webhookRetrySchedule: config.webhookRetrySchedule.map(Duration.toMillis),
    webhookDisableAfterMs: Duration.toMillis(config.webhookDisableAfter)
  })
  const server = serverLayer({ port: config.port, adminToken: config.adminToken }).pipe(
    Layer.provideMerge(services)
  )
  return yield* Effect.gen(function* () {
    const port = serverPort(yield* HttpServer.HttpServer)
    const baseUrl = `http://localhost:${port}`
    yield* Effect.logInfo(`Intake listening on ${baseUrl}/v1 (embedded in-memory store)`)
    const demo = yield* seedDemo
    // The one place a full key is printed: straight to stdout, not through the logger.
    yield* Console.log(demoBanner(demo, baseUrl))
    return yield* Effect.never
  }).pipe(Effect.provide(server))
}).pipe(
  Effect.catchAll((error) =>
    Effect.zipRight(
      Console.error(error instanceof StartupError ? error.message : `Failed to start: ${String(error)}`),
      Effect.fail(error)
    )
  )
)

NodeRuntime.runMain(program, { disableErrorReporting: true })
