/**
 * The idempotency purge on PostgreSQL deletes a backlog larger than one batch, in batches
 * (each its own statement, so a large backlog stays within the pool's query timeout).
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { IdempotencyStore } from "@intake/domain"
import { Duration, Effect, Layer } from "effect"
import { PostgresTestDatabase } from "../src/testing.js"
import { PgWebhookPortsLive, PURGE_BATCH } from "../src/webhooks.js"
import { describePostgres } from "./support.js"

const NOW = Date.parse("2026-11-21T12:00:00.000Z")
const EXPIRED = 2 * PURGE_BATCH + 345

describePostgres("the idempotency purge on PostgreSQL", () => {
  layer(PgWebhookPortsLive.pipe(Layer.provideMerge(PostgresTestDatabase())), {
    excludeTestServices: true,
    timeout: Duration.seconds(60)
  })("a backlog", (it) => {
    it.effect("of more than two batches is purged whole, and the records not yet expired stay", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const insert = (count: number, expiresAt: Date, prefix: string) =>
          sql`INSERT INTO idempotency_records (api_key_id, key, fingerprint, response, created_at, expires_at)
            SELECT 'key_purge', ${prefix} || n, 'fp', '{"status":201,"body":{}}', ${new Date(NOW - 86_400_000)}, ${expiresAt}
            FROM generate_series(1, ${count}) AS n`
        yield* insert(EXPIRED, new Date(NOW - 1_000), "old-")
        yield* insert(10, new Date(NOW + 3_600_000), "new-")

        expect(yield* (yield* IdempotencyStore).purgeExpired(NOW)).toBe(EXPIRED)
        const left = yield* sql<{
          key: string
        }>`SELECT key FROM idempotency_records WHERE api_key_id = 'key_purge'`
        expect(left).toHaveLength(10)
        expect(left.every((row) => row.key.startsWith("new-"))).toBe(true)
      })
    )
  })
})
