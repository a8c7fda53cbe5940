/** Two processes migrating one PostgreSQL database at once both succeed, and each migration applies once. */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as Path from "node:path"
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { expect, it } from "@effect/vitest"
import { DeliveryRepository } from "@intake/domain"
import { Effect, Redacted } from "effect"
import { PgDeliveryRepository } from "../src/deliveries.js"
import { migrations } from "../src/migrations.js"
import { runMigrations } from "../src/migrator.js"
import { listBotsQuery, listSubmissionsQuery } from "../src/submissions.js"
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

  it.live(
    "migration 17: months of deliveries and events, pending, leased and finished, keep every row and value; the queue claims the pending ones",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { sql, migrate } = yield* freshMigratedBy
          yield* migrate(migrations.filter((migration) => migration.id < 17))
          yield* sql`INSERT INTO workspaces VALUES ('ws_1', 'W', 'pro', 'active', NULL, NULL, now(), now())`
          yield* sql`INSERT INTO webhook_endpoints (id, workspace_id, url, events, status, description, intake_bot_ids,
              secret, consecutive_fails, created_at, updated_at)
            SELECT 'wh_' || i, 'ws_1', 'https://example.com/' || i, '["submission.completed"]', 'active', '', '[]',
              'whsec_x', 0, now(), now()
            FROM generate_series(1, 6) i`
          // Six months of events (every 4 hours), each with a finished attempt on wh_1..wh_6.
          yield* sql`INSERT INTO domain_events (id, workspace_id, type, intake_bot_id, submission_id, contact_id,
              created_at, webhook_id, disabled_reason, request_id)
            SELECT 'evt_' || lpad(i::text, 5, '0'), 'ws_1', 'submission.completed', 'bot_1', 'sub_' || i,
              CASE WHEN i % 3 = 0 THEN 'ct_' || i END, now() - i * interval '4 hours', NULL, NULL,
              CASE WHEN i % 2 = 0 THEN 'req_' || i END
            FROM generate_series(1, 1100) i`
          yield* sql`INSERT INTO deliveries (id, webhook_id, event_id, event_type, attempt, trigger, status,
              response_status, response_body, error, duration_ms, next_retry_at, created_at, due_at, lease_until,
              claim_token, sent_at)
            SELECT 'dlv_' || lpad(i::text, 5, '0'), 'wh_' || (i % 6 + 1), 'evt_' || lpad(i::text, 5, '0'),
              'submission.completed', 1, 'event', CASE WHEN i % 5 = 0 THEN 'failed' ELSE 'succeeded' END,
              CASE WHEN i % 5 = 0 THEN 500 ELSE 200 END, 'ok ' || i, CASE WHEN i % 5 = 0 THEN 'HTTP 500' END,
              i % 300, CASE WHEN i % 5 = 0 THEN now() - i * interval '4 hours' + interval '1 minute' END,
              now() - i * interval '4 hours', NULL, NULL, NULL, now() - i * interval '4 hours'
            FROM generate_series(1, 1100) i`
          // Pending: due retries of old events on wh_1..wh_3 (one of them five months old), and
          // two attempts on wh_4 leased by a dispatcher until an hour from now.
          yield* sql`INSERT INTO deliveries (id, webhook_id, event_id, event_type, attempt, trigger, status,
              created_at, due_at, lease_until, claim_token)
            VALUES
              ('dlv_p1', 'wh_1', 'evt_00900', 'submission.completed', 2, 'event', 'pending',
                now() - interval '150 days', now() - interval '1 minute', NULL, NULL),
              ('dlv_p2', 'wh_2', 'evt_00010', 'submission.completed', 2, 'event', 'pending',
                now() - interval '1 day', now() - interval '2 minutes', NULL, NULL),
              ('dlv_p3', 'wh_3', 'evt_00400', 'submission.completed', 2, 'manual', 'pending',
                now() - interval '60 days', now() - interval '3 minutes', NULL, NULL),
              ('dlv_l1', 'wh_4', 'evt_00020', 'submission.completed', 2, 'event', 'pending',
                now() - interval '2 days', now() - interval '5 minutes', now() + interval '1 hour', 'dsp_old'),
              ('dlv_l2', 'wh_4', 'evt_00700', 'submission.completed', 2, 'event', 'pending',
                now() - interval '100 days', now() - interval '5 minutes', now() + interval '1 hour', 'dsp_old')`
          const rows = (table: "deliveries" | "domain_events") =>
            Effect.map(
              sql<{ row: string }>`SELECT row_to_json(t)::text AS row FROM ${sql(table)} t ORDER BY id`,
              (all) => all.map((r) => r.row)
            )
          const deliveriesBefore = yield* rows("deliveries")
          const eventsBefore = yield* rows("domain_events")
          expect(deliveriesBefore).toHaveLength(1105)
          const months = yield* sql<{
            n: number
          }>`SELECT count(DISTINCT date_trunc('month', created_at))::int AS n
            FROM deliveries`
          expect(months[0]!.n).toBeGreaterThanOrEqual(6)

          expect(yield* migrate()).toEqual([17])
          expect(yield* rows("deliveries")).toEqual(deliveriesBefore)
          expect(yield* rows("domain_events")).toEqual(eventsBefore)
          // Each row in its month's partition: none waits in the DEFAULT partitions.
          for (const table of ["deliveries", "domain_events"]) {
            const misplaced = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} t
              WHERE tableoid::regclass::text <> ${table} || '_p' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY_MM')`
            expect(misplaced[0]!.n).toBe(0)
          }
          // The queue goes on: the due retries are claimed, the leased ones are still their dispatcher's.
          const claimed = yield* Effect.gen(function* () {
            const repository = yield* DeliveryRepository
            const deliveries = yield* repository.claimDue(Date.now(), 100, 30_000, "dsp_new")
            expect(
              yield* repository.complete({ ...deliveries[0]!, status: "succeeded" }, "dsp_new", null)
            ).toBe(true)
            return deliveries.map((d) => d.id).sort()
          }).pipe(Effect.provide(PgDeliveryRepository), Effect.provideService(SqlClient.SqlClient, sql))
          expect(claimed).toEqual(["dlv_p1", "dlv_p2", "dlv_p3"])
        }).pipe(Effect.provide(Reactivity.layer))
      ),
    120_000
  )
})
