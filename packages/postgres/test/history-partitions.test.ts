/**
 * The history's month partitions (docs/history-partitions.md) on PGlite and on PostgreSQL:
 * the history job makes the months ahead (moving the rows the DEFAULT partition held for
 * them), and retention drops whole months, except a month of deliveries holding a pending
 * attempt and a month of events holding an event with one, which stay until they are done.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { DeliveryRepository, purgeDeliveryHistory } from "@intake/domain"
import { Duration, Effect, Layer, TestClock } from "effect"
import { PgDeliveryRepository } from "../src/deliveries.js"
import { layerPglite } from "../src/pglite-client.js"
import { migrated } from "../src/runtime.js"
import { PostgresTestDatabase } from "../src/testing.js"
import { describePostgres } from "./support.js"

const NOW = Date.parse("2026-11-21T12:00:00.000Z")
const at = (iso: string) => new Date(iso)

const partitionsOf = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ name: string }>`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = to_regclass(${table}) ORDER BY 1`,
      (rows) => rows.map((row) => row.name)
    )
  )

const events = (prefix: string, count: number, createdAt: Date) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`INSERT INTO domain_events (id, workspace_id, type, intake_bot_id, submission_id, created_at)
      SELECT ${prefix} || n, 'ws_months', 'submission.completed', 'bot_months', 'sub_months', ${createdAt}
      FROM generate_series(1, ${count}) AS n`
  )
const deliveries = (prefix: string, count: number, createdAt: Date, eventId: string, dueAt: Date | null) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (
      sql
    ) => sql`INSERT INTO deliveries (id, webhook_id, event_id, event_type, attempt, trigger, status, created_at, due_at)
      SELECT ${prefix} || n, 'wh_months', ${eventId}, 'submission.completed', 1, 'event',
        ${dueAt === null ? "failed" : "pending"}, ${createdAt}, ${dueAt}
      FROM generate_series(1, ${count}) AS n`
  )

const monthsAheadAreMade = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const repository = yield* DeliveryRepository
  // A row of a month not made yet waits in the DEFAULT partition...
  yield* events("evt_ahead_", 1, at("2031-03-10T00:00:00Z"))
  yield* deliveries("ahead_", 1, at("2031-03-10T00:00:00Z"), "evt_ahead_1", null)
  const where = sql<{
    part: string
  }>`SELECT tableoid::regclass::text AS part FROM deliveries WHERE id = 'ahead_1'`
  expect(yield* where).toEqual([{ part: "deliveries_default" }])
  // ...until its month is made; twice is the same as once.
  yield* repository.prepareHistory(Date.parse("2031-02-03T00:00:00Z"))
  yield* repository.prepareHistory(Date.parse("2031-02-03T00:00:00Z"))
  expect(yield* where).toEqual([{ part: "deliveries_p2031_03" }])
  for (const table of ["deliveries", "domain_events"])
    expect(yield* partitionsOf(table)).toEqual(
      expect.arrayContaining([`${table}_p2031_02`, `${table}_p2031_03`, `${table}_p2031_04`])
    )
  expect(yield* partitionsOf("deliveries")).not.toContain("deliveries_p2031_05")
  // Several processes at once make each month once.
  yield* Effect.all(
    Array.from({ length: 4 }, () => repository.prepareHistory(Date.parse("2031-06-15T00:00:00Z"))),
    { concurrency: "unbounded" }
  )
  expect(yield* partitionsOf("deliveries")).toEqual(
    expect.arrayContaining(["deliveries_p2031_06", "deliveries_p2031_07", "deliveries_p2031_08"])
  )
})

const wholeMonthsAreDropped = Effect.gen(function* () {
  yield* TestClock.setTime(NOW)
  const sql = yield* SqlClient.SqlClient
  const repository = yield* DeliveryRepository
  // July, August and September of 2026, each with 100 finished attempts and 100 events.
  yield* repository.prepareHistory(Date.parse("2026-07-15T00:00:00Z"))
  for (const month of ["07", "08", "09"]) {
    const day = at(`2026-${month}-10T00:00:00Z`)
    yield* events(`evt_${month}_`, 100, day)
    yield* deliveries(`done_${month}_`, 100, day, `evt_${month}_1`, null)
  }
  // August holds an attempt still waiting for its retry, of an event of September.
  yield* events("evt_waiting_", 1, at("2026-09-11T00:00:00Z"))
  yield* deliveries("waiting_", 1, at("2026-08-11T00:00:00Z"), "evt_waiting_1", at("2026-11-22T00:00:00Z"))

  // Retention (30 days) reaches back to 22 October: the three months are past it.
  expect(yield* purgeDeliveryHistory()).toEqual({ deliveries: 300, events: 300 })
  const deliveryMonths = yield* partitionsOf("deliveries")
  const eventMonths = yield* partitionsOf("domain_events")
  // Dropped whole, but August's deliveries (a pending attempt) and September's events (its event).
  expect(deliveryMonths).not.toContain("deliveries_p2026_07")
  expect(deliveryMonths).not.toContain("deliveries_p2026_09")
  expect(deliveryMonths).toContain("deliveries_p2026_08")
  expect(eventMonths).not.toContain("domain_events_p2026_07")
  expect(eventMonths).not.toContain("domain_events_p2026_08")
  expect(eventMonths).toContain("domain_events_p2026_09")
  // The months of the retention and ahead stay.
  for (const month of ["2026_11", "2026_12", "2027_01"]) {
    expect(deliveryMonths).toContain(`deliveries_p${month}`)
    expect(eventMonths).toContain(`domain_events_p${month}`)
  }
  const left = yield* sql<{
    id: string
  }>`SELECT id FROM deliveries WHERE id LIKE 'waiting_%' OR id LIKE 'done_%'`
  expect(left.map((row) => row.id)).toEqual(["waiting_1"])
  const eventsLeft = yield* sql<{
    id: string
  }>`SELECT id FROM domain_events WHERE id LIKE 'evt_0%' OR id LIKE 'evt_w%'`
  expect(eventsLeft.map((row) => row.id)).toEqual(["evt_waiting_1"])

  // Once the attempt is given up, its month and its event's go at the next round.
  yield* sql`UPDATE deliveries SET due_at = NULL, status = 'failed' WHERE id = 'waiting_1'`
  expect(yield* purgeDeliveryHistory()).toEqual({ deliveries: 1, events: 1 })
  expect(yield* partitionsOf("deliveries")).not.toContain("deliveries_p2026_08")
  expect(yield* partitionsOf("domain_events")).not.toContain("domain_events_p2026_09")
  expect(yield* purgeDeliveryHistory()).toEqual({ deliveries: 0, events: 0 })
})

layer(PgDeliveryRepository.pipe(Layer.provideMerge(migrated(layerPglite({})))), {
  timeout: Duration.seconds(60)
})("history months on PGlite", (it) => {
  it.effect("are made ahead, once, taking their rows from the DEFAULT partition", () => monthsAheadAreMade)
  it.effect(
    "past the retention are dropped whole, unless a pending attempt or its event is in them",
    () => wholeMonthsAreDropped
  )
})

describePostgres("history months on PostgreSQL", () => {
  layer(PgDeliveryRepository.pipe(Layer.provideMerge(PostgresTestDatabase())), {
    timeout: Duration.seconds(60)
  })("history months", (it) => {
    it.effect("are made ahead, once, taking their rows from the DEFAULT partition", () => monthsAheadAreMade)
    it.effect(
      "past the retention are dropped whole, unless a pending attempt or its event is in them",
      () => wholeMonthsAreDropped
    )
  })
})
