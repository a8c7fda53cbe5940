/**
 * `pnpm --filter @intake/worker start`: a dispatcher process. It needs a shared store
 * (DATABASE_URL): with the embedded in-memory store the server runs the dispatcher
 * in-process and a separate worker would see nothing.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Config, Console, Effect, Option } from "effect"
import { deliveryConfig } from "./config.js"

const program = Effect.gen(function* () {
  yield* deliveryConfig
  const databaseUrl = yield* Config.option(Config.redacted("DATABASE_URL"))
  if (Option.isNone(databaseUrl)) {
    yield* Console.error(
      "The worker needs DATABASE_URL. Without it the server runs the dispatcher in-process on its embedded store."
    )
    return yield* Effect.fail("DATABASE_URL is not set")
  }
  yield* Console.error("DATABASE_URL is set but the PostgreSQL adapter is not part of this build.")
  return yield* Effect.fail("no PostgreSQL adapter")
})

NodeRuntime.runMain(program, { disableErrorReporting: true })
