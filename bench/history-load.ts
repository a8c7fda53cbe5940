/**
 * `pnpm bench:history` (docs/history-partitions.md): the delivery engine's reads over a big
 * partitioned history. On a fresh database of the PostgreSQL server at DATABASE_URL (made
 * here, dropped after), with BENCH_HISTORY_ENDPOINTS (200) endpoints and 2,000 attempts
 * due, times a claim (then its release), an endpoint's delivery log page and a recovery's
 * first batch, BENCH_HISTORY_RUNS (200) times each: first on the empty history, then after
 * BENCH_HISTORY_ROWS (10,000,000) finished attempts and as many events were loaded over
 * BENCH_HISTORY_MONTHS (2: the default
 * WEBHOOK_RETENTION of 30 days keeps about two months) months (INSERT … SELECT generate_series, month by month).
 * Prints the load's time, each statement's plan in short (EXPLAIN, FORMAT JSON) and the
 * median and p95 times, empty against loaded.
 */
import { DeliveryRepository } from "@intake/domain"
import { layerPostgres } from "@intake/postgres"
import {
  backlogsStatement,
  freshDatabaseUrl,
  instancePortsOn,
  leaseStatement,
  lockQueuedEndpoints,
  SqlClient
} from "@intake/postgres/testing"
import { Duration, Effect, Layer, Redacted } from "effect"

const ROWS = Number(process.env.BENCH_HISTORY_ROWS ?? 10_000_000)
const MONTHS = Number(process.env.BENCH_HISTORY_MONTHS ?? 2)
const ENDPOINTS = Number(process.env.BENCH_HISTORY_ENDPOINTS ?? 200)
const RUNS = Number(process.env.BENCH_HISTORY_RUNS ?? 200)
const PENDING = 2_000
const serverUrl = process.env.DATABASE_URL
if (serverUrl === undefined) {
  console.error("bench:history needs DATABASE_URL (a PostgreSQL server; a fresh database is made on it)")
  process.exit(2)
}

const endpointOf = (i: number) => `wh_${(i % ENDPOINTS) + 1}`

/** Endpoints, and PENDING attempts due a minute ago (with their events) spread over them. */
const seedQueue = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO webhook_endpoints (id, workspace_id, url, events, status, description, intake_bot_ids,
      secret, consecutive_fails, created_at, updated_at)
    SELECT 'wh_' || i, 'ws_' || (i % 20 + 1), 'https://example.com', '["submission.completed"]', 'active', '', '[]',
      'whsec_x', 0, now(), now()
    FROM generate_series(1, ${ENDPOINTS}) i`
  yield* sql`INSERT INTO domain_events (id, workspace_id, type, intake_bot_id, submission_id, created_at)
    SELECT 'evt_q' || i, 'ws_' || ((i % ${ENDPOINTS}::int + 1) % 20 + 1), 'submission.completed', 'bot_1', 'sub_q' || i,
      now() - i * interval '1 second'
    FROM generate_series(1, ${PENDING}) i`
  yield* sql`INSERT INTO deliveries (id, webhook_id, event_id, event_type, attempt, trigger, status, created_at, due_at)
    SELECT 'dlv_q' || i, 'wh_' || (i % ${ENDPOINTS}::int + 1), 'evt_q' || i, 'submission.completed', 1, 'event', 'pending',
      now() - i * interval '1 second', now() - interval '1 minute'
    FROM generate_series(1, ${PENDING}) i`
  // Recovery's window (the last two days): 20,000 events, so that its batch of 500 is full
  // on the empty history as on the loaded one (the same work, but for the history's size).
  yield* sql`INSERT INTO domain_events (id, workspace_id, type, intake_bot_id, submission_id, created_at)
    SELECT 'evt_w' || i, 'ws_' || (i % 20 + 1), 'submission.completed', 'bot_1', 'sub_w' || i,
      now() - i * interval '8 seconds'
    FROM generate_series(1, 20000) i`
  yield* sql`ANALYZE`
})

/** ROWS finished attempts and ROWS events over MONTHS months back from now, month by month. */
const loadHistory = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`SELECT intake_month_partition(t, now() - k * interval '1 month')
    FROM unnest('{deliveries,domain_events}'::text[]) t, generate_series(1, ${MONTHS}::int) k`
  const perMonth = Math.ceil(ROWS / MONTHS)
  const step = `${((30 * 86_400_000) / perMonth).toFixed(3)} milliseconds`
  for (let month = 0; month < MONTHS; month++) {
    const started = Date.now()
    const from = month * perMonth + 1
    const to = Math.min(ROWS, (month + 1) * perMonth)
    yield* sql`INSERT INTO domain_events (id, workspace_id, type, intake_bot_id, submission_id, created_at)
      SELECT 'evt_' || i, 'ws_' || (i % 20 + 1), 'submission.completed', 'bot_' || (i % 500 + 1), 'sub_' || i,
        now() - interval '1 hour' - i * ${step}::interval
      FROM generate_series(${from}::int, ${to}::int) i`
    yield* sql`INSERT INTO deliveries (id, webhook_id, event_id, event_type, attempt, trigger, status,
        response_status, response_body, duration_ms, created_at, sent_at)
      SELECT 'dlv_' || i, 'wh_' || (i % ${ENDPOINTS}::int + 1), 'evt_' || i, 'submission.completed', 1, 'event',
        CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'succeeded' END, CASE WHEN i % 10 = 0 THEN 500 ELSE 200 END,
        'ok', 40, now() - interval '1 hour' - i * ${step}::interval, now() - interval '1 hour' - i * ${step}::interval
      FROM generate_series(${from}::int, ${to}::int) i`
    console.log(
      `  month ${month + 1}/${MONTHS}: ${to - from + 1} attempts and events in ${Date.now() - started} ms`
    )
  }
  yield* sql`ANALYZE`
})

interface PlanNode {
  readonly "Node Type": string
  readonly "Index Name"?: string
  readonly "Relation Name"?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}
const nodesOf = (node: PlanNode): ReadonlyArray<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

/** A plan in short: its scans of the history tables, counted by kind and index (partition suffix cut). */
const shortPlan = (text: string, values: ReadonlyArray<unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql.unsafe<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON) ${text}`, [...values]),
      (rows) => {
        const plan = rows[0]!["QUERY PLAN"]
        const parsed = (typeof plan === "string" ? JSON.parse(plan) : plan) as Array<{ Plan: PlanNode }>
        const counts = new Map<string, number>()
        for (const node of nodesOf(parsed[0]!.Plan)) {
          const relation = node["Relation Name"] ?? ""
          if (!node["Node Type"].includes("Scan") || node["Node Type"] === "CTE Scan") continue
          // A sequential scan names its partition: an empty month's is harmless, a full one's is not.
          const what =
            node["Node Type"] === "Seq Scan"
              ? `Seq Scan ${relation}`
              : `${node["Node Type"]} ${(node["Index Name"] ?? relation).replace(/_p\d{4}_\d{2}/, "_p*")}`
          counts.set(what, (counts.get(what) ?? 0) + 1)
        }
        return [...counts].map(([what, n]) => `${n}x ${what}`).join("; ")
      }
    )
  )

const plans = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const now = Date.now()
  const page = sql`SELECT * FROM deliveries d WHERE d.webhook_id = 'wh_7' ORDER BY d.created_at DESC, d.id DESC LIMIT 51`
  const [pageText, pageValues] = page.compile()
  for (const [name, statement] of [
    ["claim: endpoints", lockQueuedEndpoints],
    ["claim: backlogs", backlogsStatement(now, 11, ["wh_1", "wh_2", "wh_3"])],
    ["claim: lease", leaseStatement(now, now + 30_000, "dsp_x", new Map([["wh_1", 5]]), [])],
    ["log page", { text: pageText, values: pageValues }]
  ] as const)
    console.log(`  ${name}: ${yield* shortPlan(statement.text, statement.values)}`)
})

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** RUNS of each operation: a claim of 50 (released after), a log page, a recovery batch. */
const timings = Effect.gen(function* () {
  const repository = yield* DeliveryRepository
  // Each phase from a vacuumed queue: the previous phase's claims and releases leave dead
  // index entries that the next would otherwise walk over.
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe("VACUUM ANALYZE deliveries, domain_events")
  const endpoint = yield* Effect.map(repository.endpoint("wh_7"), (e) =>
    e._tag === "Some" ? e.value : undefined
  )
  if (endpoint === undefined) throw new Error("wh_7 missing")
  const timed = <A, E>(operation: Effect.Effect<A, E>) =>
    Effect.gen(function* () {
      const times: Array<number> = []
      for (let run = 0; run < RUNS; run++) {
        const started = performance.now()
        yield* operation
        times.push(performance.now() - started)
      }
      times.sort((a, b) => a - b)
      return { median: percentile(times, 0.5), p95: percentile(times, 0.95) }
    })
  const claim = Effect.gen(function* () {
    const token = `dsp_${Math.random().toString(36).slice(2)}`
    const claimed = yield* repository.claimDue(Date.now(), 50, 30_000, token)
    if (claimed.length === 0) throw new Error("nothing claimed")
    yield* repository.release(
      claimed.map((d) => d.id),
      token
    )
  })
  const now = Date.now()
  return {
    claim: yield* timed(claim),
    "log page": yield* timed(repository.list(endpointOf(6), { limit: 50, after: null })),
    recover: yield* timed(
      repository.recoverableEvents(endpoint, { since: now - 86_400_000 * 2, until: now }, null, 500)
    )
  }
})

const program = Effect.gen(function* () {
  console.log(`bench:history: ${ROWS} attempts and events over ${MONTHS} months, ${ENDPOINTS} endpoints`)
  yield* seedQueue
  console.log("empty history:")
  yield* plans
  const empty = yield* timings
  const started = Date.now()
  yield* loadHistory
  const loadMs = Date.now() - started
  console.log(
    `loaded in ${(loadMs / 1000).toFixed(1)} s (${Math.round(ROWS / (loadMs / 1000))} attempts/s, events too)`
  )
  const sql = yield* SqlClient.SqlClient
  const [size] = yield* sql<{
    size: string
  }>`SELECT pg_size_pretty(pg_database_size(current_database())) AS size`
  console.log(`database size: ${size?.size}`)
  console.log(`${ROWS} rows:`)
  yield* plans
  const loaded = yield* timings
  console.log("operation      empty median/p95 ms   loaded median/p95 ms   ratio (median)")
  for (const name of Object.keys(empty) as Array<keyof typeof empty>) {
    const [e, l] = [empty[name], loaded[name]]
    console.log(
      `${name.padEnd(14)} ${e.median.toFixed(2).padStart(8)} / ${e.p95.toFixed(2).padEnd(8)}   ${l.median
        .toFixed(2)
        .padStart(8)} / ${l.p95.toFixed(2).padEnd(8)}   ${(l.median / e.median).toFixed(2)}x`
    )
  }
})

await Effect.runPromise(
  Effect.scoped(
    Effect.flatMap(freshDatabaseUrl(serverUrl), (database) =>
      program.pipe(
        Effect.provide(
          instancePortsOn(
            layerPostgres({ url: Redacted.make(database.url), queryTimeout: Duration.minutes(30) })
          ).pipe(Layer.orDie)
        )
      )
    )
  )
)
