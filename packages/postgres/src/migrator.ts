/**
 * Applies the pending migrations in one transaction under an advisory lock, so that
 * several instances starting at once against one database apply each migration once:
 * the others wait for the lock, then find nothing left to do.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { migrations as allMigrations, type Migration } from "./migrations.js"
import { toNumber } from "./storage.js"

export const runMigrations = (
  migrations: ReadonlyArray<Migration> = allMigrations
): Effect.Effect<ReadonlyArray<number>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`SELECT pg_advisory_xact_lock(hashtextextended('intake:migrations', 0))`
        yield* sql`CREATE TABLE IF NOT EXISTS intake_migrations (
          id integer PRIMARY KEY,
          name text NOT NULL,
          applied_at timestamptz(3) NOT NULL DEFAULT now()
        )`
        const applied = new Set(
          (yield* sql<{ id: unknown }>`SELECT id FROM intake_migrations`).map((row) => toNumber(row.id))
        )
        const pending = [...migrations].filter((m) => !applied.has(m.id)).sort((a, b) => a.id - b.id)
        for (const migration of pending) {
          for (const statement of migration.statements) yield* sql.unsafe(statement)
          yield* sql`INSERT INTO intake_migrations (id, name) VALUES (${migration.id}, ${migration.name})`
        }
        return pending.map((m) => m.id)
      })
    )
  })
