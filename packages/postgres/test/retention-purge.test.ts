/**
 * The retention purge (docs/webhooks.md, "Data kept") on PGlite and on PostgreSQL: a backlog
 * of two and a half batches of attempts and events is purged whole, each batch its own
 * statement within the pool's query timeout; what is younger than WEBHOOK_RETENTION, a
 * pending attempt and its event stay.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { purgeDeliveryHistory, RETENTION_PURGE_BATCH } from "@intake/domain"
import { Duration, Effect, Layer, TestClock } from "effect"
import { PgDeliveryRepository } from "../src/deliveries.js"
import { layerPglite } from "../src/pglite-client.js"
import { migrated } from "../src/runtime.js"
import { PostgresTestDatabase } from "../src/testing.js"
import { describePostgres } from "./support.js"

const DAY = 86_400_000
const NOW = Date.parse("2026-11-21T12:00:00.000Z")
const OLD = new Date(NOW - 31 * DAY)
const YOUNG = new Date(NOW - 29 * DAY)
const BACKLOG = 2 * RETENTION_PURGE_BATCH + RETENTION_PURGE_BATCH / 2

const aBacklogIsPurged = Effect.gen(function* () {
  yield* TestClock.setTime(NOW)
  const sql = yield* SqlClient.SqlClient
  const events = (prefix: string, count: number, at: Date) =>
    sql`INSERT INTO domain_events (id, workspace_id, type, intake_bot_id, submission_id, contact_id, created_at)
      SELECT ${prefix} || n, 'ws_purge', 'submission.completed', 'bot_purge', 'sub_purge', NULL, ${at}
      FROM generate_series(1, ${count}) AS n`
  const deliveries = (prefix: string, count: number, at: Date, dueAt: Date | null) =>
    sql`INSERT INTO deliveries (id, webhook_id, event_id, event_type, attempt, trigger, status, response_body, created_at, due_at)
      SELECT ${prefix} || n, 'wh_purge', ${`evt_${prefix}`} || n, 'submission.completed', 1, 'event',
        ${dueAt === null ? "failed" : "pending"}, ${"x".repeat(1024)}, ${at}, ${dueAt}
      FROM generate_series(1, ${count}) AS n`
  yield* events("evt_old_", BACKLOG, OLD)
  yield* deliveries("old_", BACKLOG, OLD, null)
  yield* events("evt_young_", 10, YOUNG)
  yield* deliveries("young_", 10, YOUNG, null)
  // An old event still waiting for its retry: neither is purged.
  yield* events("evt_waiting_", 1, OLD)
  yield* deliveries("waiting_", 1, OLD, new Date(NOW + DAY))

  // On PostgreSQL the pool gives each statement 5 s: a batch that took longer would fail the round.
  expect(yield* purgeDeliveryHistory()).toEqual({ deliveries: BACKLOG, events: BACKLOG })

  const left = yield* sql<{ id: string }>`SELECT id FROM deliveries ORDER BY id`
  expect(left.map((row) => row.id)).toEqual([
    "waiting_1",
    ...Array.from({ length: 10 }, (_, i) => `young_${i + 1}`).sort()
  ])
  const eventsLeft = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM domain_events`
  expect(eventsLeft[0]!.n).toBe(11)
  expect(yield* purgeDeliveryHistory()).toEqual({ deliveries: 0, events: 0 })
})

layer(PgDeliveryRepository.pipe(Layer.provideMerge(migrated(layerPglite({})))), {
  timeout: Duration.seconds(60)
})("the retention purge on PGlite", (it) => {
  it.effect(
    "purges a backlog of more than two batches whole, and keeps what is young or pending",
    () => aBacklogIsPurged
  )
})

describePostgres("the retention purge on PostgreSQL", () => {
  layer(
    PgDeliveryRepository.pipe(
      Layer.provideMerge(PostgresTestDatabase(undefined, { queryTimeout: Duration.seconds(5) }))
    ),
    { timeout: Duration.seconds(60) }
  )("a backlog", (it) => {
    it.effect(
      "of more than two batches is purged whole within the query timeout; young and pending rows stay",
      () => aBacklogIsPurged
    )
  })
})
