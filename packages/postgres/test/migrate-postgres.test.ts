/** Two processes migrating one PostgreSQL database at once both succeed, and each migration applies once. */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as Path from "node:path"
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { migrations } from "../src/migrations.js"
import { runMigrations } from "../src/migrator.js"
import { listBotsQuery } from "../src/submissions.js"
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

  it.live(
    "the bot counts moved off the bots' rows (migration 8) keep every bot's count, and inserts and deletes keep them after",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const database = yield* freshDatabaseUrl()
          const sql = yield* PgClient.make({ url: Redacted.make(database.url) })
          const before = migrations.filter((migration) => migration.id < 8)
          const migrate = (these?: typeof migrations) =>
            Effect.provideService(runMigrations(these), SqlClient.SqlClient, sql)
          yield* migrate(before)
          yield* sql`INSERT INTO workspaces SELECT 'ws_1', 'W', 'pro', 'active', NULL, NULL, now(), now()`
          yield* sql`INSERT INTO intake_bots (id, workspace_id, name, description, status, share_slug, schema,
              schema_version, created_at, updated_at)
            SELECT 'bot_' || i, 'ws_1', 'B', '', 'ACTIVE', 'slug' || i, '[]', 1, now() - i * interval '1 minute', now()
            FROM generate_series(1, 3) i`
          // bot_1: 5 submissions, bot_2: 2, bot_3: none; counted by migration 3's trigger.
          yield* sql`INSERT INTO submissions SELECT 'sub_' || i, 'ws_1', CASE WHEN i <= 5 THEN 'bot_1' ELSE 'bot_2' END,
              '{}', 'COMPLETED', '', false, 0, 1, now(), now()
            FROM generate_series(1, 7) i`
          const countsOf = (rows: ReadonlyArray<Record<string, unknown>>) =>
            Object.fromEntries(rows.map((row) => [row.id, Number(row.submission_count)]))
          expect(countsOf(yield* sql`SELECT id, submission_count FROM intake_bots`)).toEqual({
            bot_1: 5,
            bot_2: 2,
            bot_3: 0
          })
          // As the bots list reads them from now on.
          const counts = Effect.map(listBotsQuery(sql, "ws_1", { limit: 10, after: null }), countsOf)

          expect(yield* migrate()).toEqual(migrations.filter((m) => m.id >= 8).map((m) => m.id))
          expect(yield* counts).toEqual({ bot_1: 5, bot_2: 2, bot_3: 0 })
          // A bot's row is no longer written by an insert (its version, xmin, stays).
          const version = sql<{ xmin: string }>`SELECT xmin::text FROM intake_bots WHERE id = 'bot_3'`
          const [unwritten] = yield* version
          yield* sql`INSERT INTO submissions VALUES ('sub_8', 'ws_1', 'bot_3', '{}', 'COMPLETED', '', false, 0, 1, now(), now())`
          yield* sql`DELETE FROM submissions WHERE id IN ('sub_1', 'sub_6')`
          expect(yield* counts).toEqual({ bot_1: 4, bot_2: 1, bot_3: 1 })
          expect(yield* version).toEqual([unwritten])
        }).pipe(Effect.provide(Reactivity.layer))
      ),
    120_000
  )
})
