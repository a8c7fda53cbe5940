/** Two processes migrating one PostgreSQL database at once both succeed, and each migration applies once. */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as Path from "node:path"
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { listBotsQuery } from "../src/intake-bots.js"
import { migrations } from "../src/migrations.js"
import { runMigrations } from "../src/migrator.js"
import { listSubmissionsQuery } from "../src/submissions.js"
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

/**
 * A fresh database, its client, and a way to run migrations on it (those given, or all the
 * rest): for a test that writes rows as an earlier version did, then migrates.
 */
const freshMigratedBy = Effect.gen(function* () {
  const database = yield* freshDatabaseUrl()
  const sql = yield* PgClient.make({ url: Redacted.make(database.url) })
  const migrate = (these?: typeof migrations) =>
    Effect.provideService(runMigrations(these), SqlClient.SqlClient, sql)
  return { sql, migrate }
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
          const { sql, migrate } = yield* freshMigratedBy
          const before = migrations.filter((migration) => migration.id < 8)
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
          const countsOf = (
            rows: ReadonlyArray<{ readonly id?: unknown; readonly submission_count?: unknown }>
          ) => Object.fromEntries(rows.map((row) => [row.id, Number(row.submission_count)]))
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

  it.live(
    "migration 13: a page counts the messages of submissions written without their count, before it and during a rolling deploy",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { sql, migrate } = yield* freshMigratedBy
          yield* migrate(migrations.filter((migration) => migration.id < 13))
          yield* sql`INSERT INTO workspaces SELECT 'ws_1', 'W', 'pro', 'active', NULL, NULL, now(), now()`
          yield* sql`INSERT INTO intake_bots (id, workspace_id, name, description, status, share_slug, schema,
              schema_version, created_at, updated_at)
            VALUES ('bot_1', 'ws_1', 'B', '', 'ACTIVE', 'slug1', '[]', 1, now(), now())`
          // As the previous version writes a submission and its messages (no count kept).
          const writtenBefore = (id: string, minutesAgo: number, messages: number) =>
            Effect.zipRight(
              sql`INSERT INTO submissions (id, workspace_id, intake_bot_id, data, status, ai_summary, is_test,
                  file_count, schema_version, created_at, updated_at)
                VALUES (${id}, 'ws_1', 'bot_1', '{}', 'COMPLETED', '', false, 0, 1,
                  now() - ${minutesAgo} * interval '1 minute', now())`,
              sql`INSERT INTO messages (id, submission_id, position, role, content, created_at)
                SELECT ${id} || '_' || p, ${id}, p, 'user', 'x', now() FROM generate_series(1, ${messages}) p`
            )
          yield* writtenBefore("sub_1", 4, 3)
          yield* writtenBefore("sub_2", 3, 0)
          yield* migrate()
          // A previous-version instance still serving during the deploy.
          yield* writtenBefore("sub_3", 2, 2)
          // As this version's create writes one: its count kept, whatever the messages table holds.
          yield* sql`INSERT INTO submissions (id, workspace_id, intake_bot_id, data, status, ai_summary, is_test,
              file_count, schema_version, created_at, updated_at, message_count)
            VALUES ('sub_4', 'ws_1', 'bot_1', '{}', 'COMPLETED', '', false, 0, 1, now() - interval '1 minute', now(), 7)`
          const page = yield* listSubmissionsQuery(
            sql,
            "ws_1",
            "bot_1",
            { limit: 10, after: null },
            { createdAfter: null, createdBefore: null }
          )
          expect(page.map((row) => [row.id, row.message_count])).toEqual([
            ["sub_4", 7],
            ["sub_3", 2],
            ["sub_2", 0],
            ["sub_1", 3]
          ])
        }).pipe(Effect.provide(Reactivity.layer))
      ),
    120_000
  )
})
