/** Two processes migrating one PostgreSQL database at once both succeed, and each migration applies once. */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as Path from "node:path"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { migrations } from "../src/migrations.js"
import { freshDatabaseUrl } from "../src/testing.js"
import { describePostgres } from "./support.js"

const packageDir = Path.resolve(import.meta.dirname, "..")
const tsx = Path.join(
  Path.dirname(createRequire(import.meta.url).resolve("tsx/package.json")),
  "dist",
  "cli.mjs"
)

const migrateProcess = (databaseUrl: string) =>
  Effect.async<{ code: number | null; output: string }>((resume) => {
    const child = spawn(process.execPath, [tsx, "src/migrate-main.ts"], {
      cwd: packageDir,
      env: { ...process.env, DATABASE_URL: databaseUrl }
    })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.on("close", (code) => resume(Effect.succeed({ code, output })))
  })

describePostgres("on PostgreSQL", () => {
  it.live(
    "two processes migrating one database at once both succeed; each migration is applied once",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const database = yield* freshDatabaseUrl()
          const results = yield* Effect.all([migrateProcess(database.url), migrateProcess(database.url)], {
            concurrency: 2
          })
          for (const result of results) expect(result, result.output).toMatchObject({ code: 0 })
          expect(results.map((r) => r.output.trim().split("\n").at(-1)).sort()).toEqual([
            `migrate: applied ${migrations.map((m) => m.id).join(", ")}`,
            "migrate: up to date"
          ])
          const sql = yield* PgClient.make({ url: Redacted.make(database.url) })
          const applied = yield* sql<{ id: number }>`SELECT id FROM intake_migrations ORDER BY id`
          expect(applied.map((row) => row.id)).toEqual(migrations.map((m) => m.id))
        }).pipe(Effect.provide(Reactivity.layer))
      ),
    120_000
  )
})
