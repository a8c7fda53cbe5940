/**
 * The summary job queue on Postgres: the `summary_jobs` rows, claimed with
 * `FOR UPDATE SKIP LOCKED` under a lease and ended conditionally on the claim token, as
 * the delivery queue is (deliveries.ts).
 *
 * Statement style: `@effect/sql`'s sql`...` throughout: none of these is on a request's hot path, so none pays for the driver's prepared statements (driver/README.md).
 */
import { SqlClient } from "@effect/sql"
import { type DeliveryId, type SummaryJob, SummaryJobRepository } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import type { SummaryJobRow } from "./rows.js"
import { fromJson, jsonText, type Row, stored, toDate, toMillis, toNumber } from "./storage.js"

const jobFromRow = (row: SummaryJobRow): SummaryJob => ({
  submissionId: row.submission_id,
  workspaceId: row.workspace_id,
  intakeBotId: row.intake_bot_id,
  attempts: toNumber(row.attempts),
  heldDeliveryIds: fromJson<ReadonlyArray<DeliveryId>>(row.held_delivery_ids),
  createdAt: toMillis(row.created_at)
})

/**
 * When the earliest job is due: a claimed one when its lease ends, the others at their due
 * time. Two index look-ups (summary_jobs_due, summary_jobs_claimed), never a scan of the
 * backlog, which grows while a slow model catches up.
 */
export const nextSummaryDueQuery = (sql: SqlClient.SqlClient) =>
  sql<Row>`SELECT LEAST(
      (SELECT due_at FROM summary_jobs WHERE claim_token IS NULL ORDER BY due_at LIMIT 1),
      (SELECT min(GREATEST(due_at, lease_until)) FROM summary_jobs WHERE claim_token IS NOT NULL)
    ) AS next`

export const PgSummaryJobRepository = Layer.effect(
  SummaryJobRepository,
  Effect.map(SqlClient.SqlClient, (sql) =>
    SummaryJobRepository.of({
      enqueue: (job, dueAt) =>
        stored("summaryJobs.enqueue")(
          Effect.asVoid(sql`INSERT INTO summary_jobs (submission_id, workspace_id, intake_bot_id, attempts, held_delivery_ids, created_at, due_at)
            VALUES (${job.submissionId}, ${job.workspaceId}, ${job.intakeBotId}, ${job.attempts},
                    ${jsonText(job.heldDeliveryIds)}::json, ${toDate(job.createdAt)}, ${toDate(dueAt)})`)
        ),
      claimDue: (now, limit, leaseMs, claimToken) =>
        stored("summaryJobs.claimDue")(
          Effect.map(
            sql<SummaryJobRow>`UPDATE summary_jobs SET lease_until = ${toDate(now + leaseMs)}, claim_token = ${claimToken}
              WHERE submission_id IN (
                SELECT submission_id FROM summary_jobs
                WHERE due_at <= ${toDate(now)} AND (lease_until IS NULL OR lease_until <= ${toDate(now)})
                ORDER BY due_at, submission_id
                LIMIT ${limit}
                FOR UPDATE SKIP LOCKED)
              RETURNING *`,
            (rows) =>
              [...rows]
                .sort(
                  (a, b) =>
                    toMillis(a.due_at) - toMillis(b.due_at) || (a.submission_id < b.submission_id ? -1 : 1)
                )
                .map(jobFromRow)
          )
        ),
      finish: (id, claimToken) =>
        stored("summaryJobs.finish")(
          Effect.map(
            sql<Row>`DELETE FROM summary_jobs WHERE submission_id = ${id} AND claim_token = ${claimToken}
              RETURNING submission_id`,
            (rows) => rows.length > 0
          )
        ),
      retryAt: (id, claimToken, dueAt) =>
        stored("summaryJobs.retryAt")(
          Effect.map(
            sql<Row>`UPDATE summary_jobs SET attempts = attempts + 1, held_delivery_ids = '[]'::json,
                due_at = ${toDate(dueAt)}, lease_until = NULL, claim_token = NULL
              WHERE submission_id = ${id} AND claim_token = ${claimToken}
              RETURNING submission_id`,
            (rows) => rows.length > 0
          )
        ),
      release: (ids, claimToken) =>
        ids.length === 0
          ? Effect.void
          : stored("summaryJobs.release")(
              Effect.asVoid(sql`UPDATE summary_jobs SET lease_until = NULL, claim_token = NULL
                WHERE ${sql.in("submission_id", ids)} AND claim_token = ${claimToken}`)
            ),
      nextDueAt: () =>
        stored("summaryJobs.nextDueAt")(
          Effect.map(nextSummaryDueQuery(sql), (rows) =>
            Option.map(Option.fromNullable(rows[0]?.next), toMillis)
          )
        )
    })
  )
)
