/**
 * The delivery history's month partitions (docs/history-partitions.md): `deliveries` and
 * `domain_events` are partitioned by month of created_at (migration 17). The periodic
 * history job makes the months ahead, and retention drops a whole month once every row of it
 * is past the retention and none is still needed (a pending attempt, an event with one).
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type Row, toDate, toNumber } from "./storage.js"

/** The partitioned history tables, each with its month partitions and a DEFAULT one. */
export const HISTORY_TABLES = ["deliveries", "domain_events"] as const

/** Months made ahead of the current one: two, so a stopped job leaves two months of margin. */
export const MONTHS_AHEAD = 2

/**
 * How long dropping a month may wait for its table's lock: the drop holds an ACCESS EXCLUSIVE
 * lock on the parent for milliseconds, but while it waits every other statement on the table
 * queues behind it. Past this the drop is given up and tried again at the next round.
 */
export const DROP_LOCK_TIMEOUT = "1s"

/** The months of `now` and the next MONTHS_AHEAD of each table, made if missing (intake_month_partition). */
export const prepareMonths = (sql: SqlClient.SqlClient, now: number) =>
  Effect.asVoid(
    sql`SELECT intake_month_partition(t, ((${toDate(now)}::timestamptz AT TIME ZONE 'UTC')
        + k * interval '1 month') AT TIME ZONE 'UTC')
      FROM unnest(${`{${HISTORY_TABLES.join(",")}}`}::text[]) AS t, generate_series(0, ${MONTHS_AHEAD}) AS k`
  )

/** The month partitions of `table` whose months end at or before `before`, oldest first. */
const monthsEndedBy = (sql: SqlClient.SqlClient, table: string, before: number) =>
  Effect.map(
    sql<Row>`SELECT c.relname AS name FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass(${table})
        AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
        AND substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \\(''([^'']+)''\\)')::timestamptz
          <= ${toDate(before)}
      ORDER BY c.relname`,
    (rows) => rows.map((row) => row.name as string)
  )

/**
 * Drops `partition` of `table` unless `stillNeeded` finds a row in it that must stay, in one
 * short transaction: the parent locked first (as every statement on it locks it), within
 * DROP_LOCK_TIMEOUT. Answers the rows dropped, 0 when it was kept or its lock not had.
 */
const dropMonth = (
  sql: SqlClient.SqlClient,
  table: string,
  partition: string,
  stillNeeded: Effect.Effect<ReadonlyArray<Row>, unknown>
) =>
  Effect.gen(function* () {
    // Counted before the lock, not to hold it over a scan: the rows of a month past the
    // retention with nothing pending are finished, and nothing but a purge changes them.
    const [counted] = yield* sql<Row>`SELECT count(*) AS n FROM ${sql(partition)}`
    const dropped = yield* sql
      .withTransaction(
        Effect.gen(function* () {
          yield* sql.unsafe(`SET LOCAL lock_timeout = '${DROP_LOCK_TIMEOUT}'`)
          yield* sql`LOCK TABLE ONLY ${sql(table)} IN ACCESS EXCLUSIVE MODE`
          if ((yield* stillNeeded).length > 0) return false
          yield* sql`DROP TABLE ${sql(partition)}`
          return true
        })
      )
      .pipe(
        Effect.catchAll((error) =>
          Effect.as(Effect.logWarning(`history: ${partition} not dropped this round`, error), false)
        )
      )
    return dropped ? toNumber(counted?.n ?? 0) : 0
  })

/**
 * Drops the whole months that retention would empty (docs/history-partitions.md): a month of
 * deliveries with no pending attempt, then a month of events none of whose events has one.
 * What stays older than `before` (a month's rows kept by a pending one, the month `before`
 * falls in, the DEFAULT partition) is left to the purge in batches. Answers the rows dropped.
 */
export const dropExpiredMonths = (sql: SqlClient.SqlClient, before: number) =>
  Effect.gen(function* () {
    let deliveries = 0
    for (const partition of yield* monthsEndedBy(sql, "deliveries", before))
      deliveries += yield* dropMonth(
        sql,
        "deliveries",
        partition,
        sql<Row>`SELECT 1 FROM ${sql(partition)} WHERE due_at IS NOT NULL LIMIT 1`
      )
    let events = 0
    for (const partition of yield* monthsEndedBy(sql, "domain_events", before))
      events += yield* dropMonth(
        sql,
        "domain_events",
        partition,
        sql<Row>`SELECT 1 FROM deliveries d JOIN ${sql(partition)} e ON e.id = d.event_id
          WHERE d.due_at IS NOT NULL LIMIT 1`
      )
    return { deliveries, events }
  })
