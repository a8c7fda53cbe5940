/**
 * `pnpm migrate`: applies the pending migrations to DATABASE_URL, or to the embedded
 * database under INTAKE_DATA_DIR (default .data, relative to where pnpm was run) when
 * DATABASE_URL is unset. Safe to run while servers start: migrations take a lock.
 */
import * as Path from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Layer, Redacted } from "effect"
import { runMigrations } from "./migrator.js"
import { layerPglite } from "./pglite-client.js"

/** INTAKE_DATA_DIR, resolved against the directory pnpm was invoked from. */
export const embeddedDataDir = (env: NodeJS.ProcessEnv = process.env): string =>
  Path.resolve(env.INIT_CWD ?? process.cwd(), env.INTAKE_DATA_DIR ?? ".data")

// Straight to PostgreSQL when a pooler is in front of it (docs/deploy-postgres.md).
const databaseUrl = process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL
const database =
  databaseUrl !== undefined && databaseUrl !== ""
    ? PgClient.layer({ url: Redacted.make(databaseUrl) })
    : layerPglite({ dataDir: embeddedDataDir() })

const program = Effect.gen(function* () {
  const applied = yield* runMigrations()
  yield* Effect.sync(() =>
    console.log(applied.length === 0 ? "migrate: up to date" : `migrate: applied ${applied.join(", ")}`)
  )
}).pipe(Effect.provide(Layer.orDie(database)))

Effect.runPromise(program).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`migrate: failed: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }
)
