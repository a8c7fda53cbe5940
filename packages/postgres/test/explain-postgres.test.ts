/**
 * The list queries' plans on PostgreSQL with enough rows for the planner to care: every
 * list walks its index in the list order (no sort, no sequential scan), with or without
 * a cursor and a created range, and the counts come from index scans inside the query.
 */

import { SqlClient } from "@effect/sql"
import type { Statement } from "@effect/sql/Statement"
import { expect, layer } from "@effect/vitest"
import {
  makeSubmissionId,
  makeWebhookId,
  makeWorkspaceId,
  noDeliveryFilter,
  UnitOfWork
} from "@intake/domain"
import { aWebhookEndpoint } from "@intake/testing"
import { Duration, Effect, Exit, Layer } from "effect"
import { listDeliveriesQuery, recoverableEventsQuery } from "../src/deliveries.js"
import { statementSteps } from "../src/driver/statement-steps.js"
import { listBotsQuery } from "../src/intake-bots.js"
import { listSubmissionsQuery, listSubmissionsStatement } from "../src/submissions.js"
import { nextSummaryDueQuery } from "../src/summary-jobs.js"
import { PostgresTestDatabase } from "../src/testing.js"
import { PgUnitOfWork } from "../src/unit-of-work.js"
import { listWebhooksQuery } from "../src/webhooks.js"
import { describePostgres } from "./support.js"

interface PlanNode {
  readonly "Node Type": string
  readonly "Index Name"?: string
  readonly "Relation Name"?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

const nodesOf = (node: PlanNode): ReadonlyArray<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

/** The plan an `EXPLAIN (FORMAT JSON)` answered, as a list of its nodes. */
const planOfRows = (explained: Effect.Effect<ReadonlyArray<{ "QUERY PLAN": unknown }>, unknown>) =>
  Effect.map(explained, (rows) => {
    const plan = rows[0]!["QUERY PLAN"]
    const parsed = (typeof plan === "string" ? JSON.parse(plan) : plan) as Array<{ Plan: PlanNode }>
    if (process.env.SHOW_PLANS)
      console.log(
        JSON.stringify(parsed[0]!.Plan, (k, v) =>
          [
            "Startup Cost",
            "Plan Width",
            "Parallel Aware",
            "Async Capable",
            "Parent Relationship",
            "Scan Direction",
            "Alias"
          ].includes(k)
            ? undefined
            : v
        )
      )
    return nodesOf(parsed[0]!.Plan)
  })

const planOf = (statement: Statement<unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const [text, params] = statement.compile()
    return planOfRows(sql.unsafe<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON) ${text}`, params))
  })

const indexScans = (nodes: ReadonlyArray<PlanNode>) =>
  nodes.filter((n) => n["Node Type"].includes("Index")).map((n) => n["Index Name"])

const expectKeysetPlan = (nodes: ReadonlyArray<PlanNode>, listIndex: string, countIndex?: string) => {
  const types = nodes.map((n) => n["Node Type"])
  expect(types).not.toContain("Seq Scan")
  expect(types).not.toContain("Sort")
  expect(types).not.toContain("Incremental Sort")
  expect(indexScans(nodes)[0]).toBe(listIndex)
  if (countIndex !== undefined) expect(indexScans(nodes)).toContain(countIndex)
}

const seed = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO workspaces SELECT 'ws_' || i, 'W', 'pro', 'active', NULL, NULL, now(), now()
    FROM generate_series(1, 50) i`
  yield* sql`INSERT INTO intake_bots SELECT 'bot_' || i, 'ws_' || (i % 50 + 1), 'B', '', 'ACTIVE', 'slug' || i, '[]', 1,
      now() - i * interval '1 minute', now()
    FROM generate_series(1, 2000) i`
  // 50 submissions for most bots, 20 000 for bot_1 (in ws_2).
  yield* sql`INSERT INTO submissions SELECT 'sub_' || i, 'ws_' || ((i % 2000 + 1) % 50 + 1), 'bot_' || (i % 2000 + 1),
      '{}', 'COMPLETED', '', false, 0, 1, now() - i * interval '1 second', now()
    FROM generate_series(1, 100000) i`
  yield* sql`INSERT INTO submissions SELECT 'sub_h' || i, 'ws_2', 'bot_1', '{}', 'COMPLETED', '', false, 0, 1,
      now() - i * interval '1 second', now()
    FROM generate_series(1, 20000) i`
  yield* sql`INSERT INTO messages SELECT 'msg_' || i || '_' || p, 'sub_h' || i, p, 'user', 'x', now()
    FROM generate_series(1, 20000) i, generate_series(0, 2) p`
  yield* sql`INSERT INTO webhook_endpoints SELECT 'wh_' || i, 'ws_' || (i % 50 + 1), 'https://example.com', '[]', 'active',
      '', '[]', 'whsec_x', NULL, NULL, 0, NULL, now() - i * interval '1 minute', now()
    FROM generate_series(1, 5000) i`
  // A backlog of 50 000 summary jobs behind a slow model, 8 of them claimed.
  yield* sql`INSERT INTO summary_jobs SELECT 'sub_' || i, 'ws_1', 'bot_1', 0, '[]', now(), now() - i * interval '1 second',
      CASE WHEN i <= 8 THEN now() + interval '1 minute' END, CASE WHEN i <= 8 THEN 'runner' END
    FROM generate_series(1, 50000) i`
  yield* sql`ANALYZE`
})

/** The plans PostgreSQL made for each statement of this session with `text`: generic and custom. */
const preparedPlans = (sql: SqlClient.SqlClient, text: string) =>
  Effect.map(
    sql<{ generic_plans: string; custom_plans: string }>`SELECT generic_plans, custom_plans
      FROM pg_prepared_statements WHERE regexp_replace(statement, '^PREPARE page AS ', '') = ${text}`,
    (rows) => rows.map((row) => ({ generic: Number(row.generic_plans), custom: Number(row.custom_plans) }))
  )

const firstPage = { limit: 50, after: null }
const noRange = { createdAfter: null, createdBefore: null }

const T = Date.now()
const cursor = { createdAt: T - 3_600_000, id: "sub_h500" }

describePostgres("on PostgreSQL", () => {
  layer(PgUnitOfWork.pipe(Layer.provideMerge(PostgresTestDatabase())), { timeout: Duration.seconds(60) })(
    "list query plans",
    (it) => {
      it.effect("seeds the tables", () => seed)

      it.effect("submissions: first page, next page, and a created range use submissions_list", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const range = { createdAfter: T - 86_400_000, createdBefore: T - 60_000 }
          for (const [page, r] of [
            [firstPage, noRange],
            [{ limit: 50, after: cursor }, noRange],
            [{ limit: 50, after: cursor }, range]
          ] as const)
            expectKeysetPlan(
              yield* planOf(listSubmissionsQuery(sql, "ws_2", "bot_1", page, r)),
              "submissions_list",
              "messages_submission_id_position_key"
            )
        })
      )

      it.effect(
        "submissions: a page kept under one name gets a generic plan after five runs, which sorts all of bot_1's rows",
        () =>
          // Why a page is a `planned` statement (driver/replanned-query.ts, ReplannedQuery): a plan made for no bot
          // in particular expects the rows of an average bot (sixty here), for which a sort is
          // cheapest, and PostgreSQL then sorts all of bot_1's 20 050 rows for each of its pages.
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const unitOfWork = yield* UnitOfWork
            const { text } = listSubmissionsStatement("ws_2", "bot_1", firstPage, noRange)
            const [kept, plan] = yield* unitOfWork.transaction(
              Effect.gen(function* () {
                yield* sql.unsafe(`PREPARE page AS ${text}`)
                for (let run = 0; run < 6; run++) yield* sql.unsafe(`EXECUTE page('bot_1', 'ws_2', 51)`)
                const kept = yield* preparedPlans(sql, text)
                const plan = yield* planOfRows(
                  sql.unsafe(`EXPLAIN (FORMAT JSON) EXECUTE page('bot_1', 'ws_2', 51)`)
                )
                yield* sql.unsafe("DEALLOCATE page")
                return [kept, plan] as const
              })
            )
            expect(kept).toEqual([{ generic: 1, custom: 5 }])
            expect(plan.map((n) => n["Node Type"])).toContain("Sort")
          })
      )

      it.effect("submissions: a page as Intake sends it is planned for its bot on every run", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const unitOfWork = yield* UnitOfWork
          const page = listSubmissionsStatement("ws_2", "bot_1", firstPage, noRange)
          const [pages, kept] = yield* unitOfWork.transaction(
            Effect.gen(function* () {
              const { planned } = yield* statementSteps
              const pages: Array<number> = []
              for (let run = 0; run < 12; run++)
                pages.push(yield* planned("test", page, (rows) => Exit.succeed(rows.length)))
              return [pages, yield* preparedPlans(sql, page.text)] as const
            })
          )
          expect(pages).toEqual(Array.from({ length: 12 }, () => 51))
          // Twelve runs, and only the two of the current name left on the session: each name
          // had its five runs, all planned for their values, and was closed.
          expect(kept).toEqual([{ generic: 0, custom: 2 }])
        })
      )

      it.effect(
        "bots: first and next page use intake_bots_list, each count by its key, and read no submission",
        () =>
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            for (const after of [null, { createdAt: T - 600_000, id: "bot_10" }]) {
              const plan = yield* planOf(listBotsQuery(sql, "ws_2", { limit: 20, after }))
              expectKeysetPlan(plan, "intake_bots_list", "intake_bot_counts_pkey")
              expect(plan.map((node) => node["Relation Name"])).not.toContain("submissions")
            }
            // The count the trigger kept while the seed inserted: bot_1 has its 20 000 and its 50.
            const [bot] = yield* sql<{
              submission_count: string
            }>`SELECT submission_count FROM (${listBotsQuery(sql, "ws_2", { limit: 100, after: null })}) b WHERE id = 'bot_1'`
            expect(Number(bot!.submission_count)).toBe(20_050)
          })
      )

      it.effect("the next due summary job: two index look-ups, whatever the backlog", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const plan = yield* planOf(nextSummaryDueQuery(sql))
          expect(plan.map((n) => n["Node Type"])).not.toContain("Seq Scan")
          expect(plan.map((n) => n["Node Type"])).not.toContain("Sort")
          expect(new Set(indexScans(plan))).toEqual(new Set(["summary_jobs_due", "summary_jobs_claimed"]))
        })
      )

      it.effect("webhook endpoints: first and next page use webhook_endpoints_list", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          for (const after of [null, { createdAt: T - 600_000, id: "wh_10" }])
            expectKeysetPlan(
              yield* planOf(listWebhooksQuery(sql, "ws_2", { limit: 20, after })),
              "webhook_endpoints_list"
            )
        })
      )
    }
  )
})

/** The delivery log and recovery on their own database (no foreign keys: events and attempts only). */
const seedDeliveries = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // 40 000 events of 5 workspaces; 20 000 attempts of 4 endpoints (5 000 each, 1 250 per status).
  yield* sql`INSERT INTO domain_events SELECT 'evt_' || i, 'ws_' || (i % 5 + 1),
      CASE WHEN i % 3 = 0 THEN 'contact.created' ELSE 'submission.completed' END, 'bot_' || (i % 2000 + 1),
      'sub_' || (i / 2 + 1), NULL, now() - i * interval '1 second'
    FROM generate_series(1, 40000) i`
  yield* sql`INSERT INTO deliveries SELECT 'dlv_' || i, 'wh_' || (i % 4 + 1), 'evt_' || i,
      CASE WHEN i % 3 = 0 THEN 'contact.created' ELSE 'submission.completed' END, 1, 'event',
      (ARRAY['succeeded', 'failed', 'skipped', 'pending'])[i / 4 % 4 + 1], NULL, NULL, NULL, NULL, NULL,
      now() - i * interval '1 second', NULL, NULL, NULL, NULL
    FROM generate_series(1, 20000) i`
  yield* sql`ANALYZE`
})

describePostgres("on PostgreSQL", () => {
  layer(PostgresTestDatabase(), { timeout: Duration.seconds(60) })(
    "delivery log and recovery plans",
    (it) => {
      it.effect("seeds the tables", () => seedDeliveries)

      it.effect("the delivery log: each filter walks an index in the list order", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const after = { createdAt: T - 3_600_000, id: "dlv_3600" }
          for (const page of [
            { limit: 50, after: null },
            { limit: 50, after }
          ]) {
            const plan = (filter: Partial<typeof noDeliveryFilter>) =>
              planOf(listDeliveriesQuery(sql, "wh_2", page, { ...noDeliveryFilter, ...filter }))
            const unfiltered = yield* plan({})
            expectKeysetPlan(unfiltered, "deliveries_list")
            // Each row's request id: its event by primary key, one lookup a row of the page.
            expect(indexScans(unfiltered)).toContain("domain_events_pkey")
            expectKeysetPlan(
              yield* plan({ createdAfter: T - 86_400_000, createdBefore: T - 60_000 }),
              "deliveries_list"
            )
            expectKeysetPlan(yield* plan({ status: "failed" }), "deliveries_status")
            expectKeysetPlan(yield* plan({ eventType: "contact.created" }), "deliveries_event_type")
            // A submission's attempts: its few events by domain_events_submission, then each one's attempts.
            const bySubmission = yield* plan({ submissionId: makeSubmissionId("sub_500") })
            expect(bySubmission.map((n) => n["Node Type"])).not.toContain("Seq Scan")
            expect(indexScans(bySubmission)).toContain("domain_events_submission")
          }
        })
      )

      it.effect("recovery reads a workspace's events by occurrence, each checked against its attempts", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const endpoint = aWebhookEndpoint({
            id: makeWebhookId("wh_2"),
            workspaceId: makeWorkspaceId("ws_2")
          })
          const plan = yield* planOf(
            recoverableEventsQuery(sql, endpoint, { since: T - 86_400_000, until: T }, null, 500)
          )
          const types = plan.map((n) => n["Node Type"])
          // One batch: the window's events by index, the endpoint's attempts by index.
          expect(types).not.toContain("Seq Scan")
          expect(indexScans(plan)).toContain("domain_events_workspace")
          expect(plan.filter((n) => n["Relation Name"] === "deliveries").every((n) => n["Index Name"])).toBe(
            true
          )
        })
      )
    }
  )
})
