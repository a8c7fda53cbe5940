/**
 * Submissions with their messages, usage counters, contacts and the outbox on Postgres.
 * Statement style: the hot path (a create's statements, a page of submissions) as named prepared statements on `pg` (driver/statement-steps.ts, `statement` or { text, values } for texts built once), where `@effect/sql` cost as much CPU again (docs/performance.md, "Statements on pg"); everything else through `@effect/sql`'s sql`...`.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import {
  type Contact,
  ContactEvents,
  ContactRepository,
  type CreatedRange,
  type DomainEvent,
  EventOutbox,
  type IntakeBotId,
  type Message,
  type PageRequest,
  PlanLimitExceeded,
  type QueuedDeliveries,
  type StorageUnavailable,
  type Submission,
  type SubmissionListItem,
  type SubmissionQuota,
  SubmissionRepository,
  UsageCounters,
  WireShapes,
  type WorkspaceId
} from "@intake/domain/internal"
import { Effect, Exit, Layer, Option } from "effect"
import { deliveryRow } from "./deliveries.js"
import type { SqlText } from "./driver/statement.js"
import { type DeferredStep, statementSteps } from "./driver/statement-steps.js"
import { PgIntakeBotRepository } from "./intake-bots.js"
import { QUOTA_USED_UP_SQLSTATE } from "./migrations.js"
import { pageFrom } from "./paging.js"
import {
  type ContactForRow,
  type ContactRow,
  contactFromRow,
  type EventRow,
  eventFromRow,
  type MessageRow,
  messageFromRow,
  type SubmissionListRow,
  type SubmissionRow,
  submissionFieldsFromRow,
  submissionFromRow
} from "./rows.js"
import { hasSqlState, type Row, stored, toDate, toNumber } from "./storage.js"

/**
 * A page of a bot's submissions within a created range, with each one's message_count, as
 * SQL text and values: one text per combination of bounds, so each is prepared once.
 */
export const listSubmissionsStatement = (
  workspaceId: string,
  intakeBotId: string,
  page: PageRequest,
  range: CreatedRange
): SqlText => {
  const values: Array<unknown> = [intakeBotId, workspaceId]
  const conditions = ["s.intake_bot_id = $1", "s.workspace_id = $2"]
  if (range.createdAfter !== null) {
    values.push(toDate(range.createdAfter))
    conditions.push(`s.created_at >= $${values.length}`)
  }
  if (range.createdBefore !== null) {
    values.push(toDate(range.createdBefore))
    conditions.push(`s.created_at <= $${values.length}`)
  }
  if (page.after !== null) {
    values.push(toDate(page.after.createdAt), page.after.id)
    conditions.push(`(s.created_at, s.id) < ($${values.length - 1}, $${values.length})`)
  }
  values.push(page.limit + 1)
  return {
    // The columns an item shows (its workspace and bot are the query's own), the data as the
    // text it is stored as (no JSON.parse of it: the answer passes it through), the count as int4.
    // The message count as the create kept it; counted on the messages' (submission_id,
    // position) index where it was not kept (migration 13).
    text: `SELECT s.id, s.data::text AS data_json, s.status, s.ai_summary, s.is_test, s.file_count, s.schema_version,
      s.created_at, s.updated_at,
      coalesce(s.message_count, (SELECT count(*) FROM messages m WHERE m.submission_id = s.id)::int) AS message_count
    FROM submissions s
    WHERE ${conditions.join(" AND ")}
    ORDER BY s.created_at DESC, s.id DESC
    LIMIT $${values.length}`,
    values
  }
}

/** The same page as a statement of SqlClient (for EXPLAIN). */
export const listSubmissionsQuery = (
  sql: SqlClient.SqlClient,
  workspaceId: string,
  intakeBotId: string,
  page: PageRequest,
  range: CreatedRange
) => {
  const { text, values } = listSubmissionsStatement(workspaceId, intakeBotId, page, range)
  return sql.unsafe<SubmissionListRow>(text, values)
}

/**
 * A row of the list, whose workspace and bot are the ones it was read for: its data text and
 * message count set on the one object built from the row, not copied into a second object
 * (a spread copy of each of fifty rows cost about a tenth of a page's CPU; docs/performance.md,
 * Lists).
 */
const listItemFromRow = (
  row: SubmissionListRow,
  workspaceId: WorkspaceId,
  intakeBotId: IntakeBotId
): SubmissionListItem =>
  Object.assign(submissionFieldsFromRow(row, workspaceId, intakeBotId), {
    dataJson: row.data_json,
    messageCount: toNumber(row.message_count)
  })

const usedSubmissions = (sql: SqlClient.SqlClient, workspaceId: string, period: string) =>
  Effect.map(
    sql<Row>`SELECT used FROM submission_usage WHERE workspace_id = ${workspaceId} AND period = ${period}`,
    (rows) => (rows[0] === undefined ? 0 : toNumber(rows[0].used))
  )

/** A reservation came back empty: the quota is used up (the count read for the error). */
const quotaUsedUp = (sql: SqlClient.SqlClient, workspaceId: string, period: string, max: number) =>
  Effect.flatMap(usedSubmissions(sql, workspaceId, period), (current) =>
    Effect.fail(
      new PlanLimitExceeded({
        message: `The monthly quota of ${max} submissions is used up.`,
        resource: "submissions",
        current,
        max
      })
    )
  )

/** The failure of a reservation past the quota (intake_quota_used_up), as the driver reports it. */
const isQuotaUsedUp = (error: unknown): error is SqlError => hasSqlState(error, QUOTA_USED_UP_SQLSTATE)

/** The count intake_quota_used_up found, in its DETAIL. */
const quotaUsedUpCount = (error: SqlError) => toNumber((error.cause as { readonly detail?: unknown }).detail)

/**
 * The conditional upsert of a workspace's usage counter: one more submission for `period`,
 * unless `max` are counted (then no row comes back). The row lock it takes serializes
 * concurrent reservations until the transaction ends, and the WHERE sees the latest count.
 * Its values (workspace, period, max) are at `$first`, `$first + 1`, `$first + 2`.
 */
const reservationText = (first: number, after?: string) =>
  `INSERT INTO submission_usage (workspace_id, period, used)
    SELECT $${first}, $${first + 1}, 1 ${after === undefined ? "" : `FROM ${after} `}WHERE $${first + 2}::int > 0
    ON CONFLICT (workspace_id, period) DO UPDATE SET used = submission_usage.used + 1
      WHERE submission_usage.used < $${first + 2}::int
    RETURNING used`

/**
 * The texts of insertSubmission: with or without a reservation, with or without messages.
 * The submission keeps its messages' count, which a page reads (migration 13).
 * The submission is inserted first and the reservation reads its row, so the usage
 * counter's lock is taken after the insert, not held over it (about 5-12% more creates
 * per second under fifty at once; docs/performance.md, Round trips of a create). A reservation
 * that got no row fails the statement (intake_quota_used_up, migration 9): the insert goes
 * with it, and a COMMIT sent with it is skipped. The count it reports is the larger of
 * the one this statement's snapshot shows and the quota: a reservation refused while it
 * waited for a concurrent one saw the count reach the quota after the snapshot was taken.
 */
const insertSubmissionText = (reserved: boolean, withMessages: boolean) =>
  `WITH inserted AS (
      INSERT INTO submissions (id, workspace_id, intake_bot_id, data, status, ai_summary, is_test, file_count, schema_version, created_at, updated_at, message_count)
      VALUES ($1, $2, $3, $4::json, $5, $6, $7::boolean, $8::int, $9::int, $10::timestamptz, $11::timestamptz, ${
        withMessages ? `json_array_length($${reserved ? 15 : 12}::json)` : "0"
      })
      RETURNING id
    ),
    reserved AS (${reserved ? reservationText(12, "inserted") : "SELECT 0 AS used FROM inserted"})${
      withMessages
        ? `, inserted_messages AS (
      INSERT INTO messages (id, submission_id, position, role, content, created_at)
      SELECT m.id, inserted.id, m.position, m.role, m.content, m.created_at
      FROM inserted, json_to_recordset($${reserved ? 15 : 12}::json)
        AS m(id text, position int, role text, content text, created_at timestamptz)
    )`
        : ""
    }
    ${
      reserved
        ? `SELECT coalesce((SELECT used FROM reserved), intake_quota_used_up(greatest(
        (SELECT used FROM submission_usage WHERE workspace_id = $12 AND period = $13), $14::int))) AS used`
        : "SELECT used FROM reserved"
    }`

const reservationStatement = reservationText(1)

const insertSubmissionTexts = [false, true].map((reserved) =>
  [false, true].map((withMessages) => insertSubmissionText(reserved, withMessages))
)

/**
 * One statement inserting a submission and its messages (data-modifying CTEs) and, when
 * `quota` is given, reserving it in the usage counter, or failing past the quota; answers
 * `used`. Parameters are cast: in INSERT … SELECT, Postgres does not take their types from
 * the columns.
 */
const insertSubmission = (
  s: Submission,
  messages: ReadonlyArray<Message>,
  quota: SubmissionQuota | null
): SqlText => {
  const values: Array<unknown> = [
    s.id,
    s.workspaceId,
    s.intakeBotId,
    JSON.stringify(s.data),
    s.status,
    s.aiSummary,
    s.isTest,
    s.fileCount,
    s.schemaVersion,
    toDate(s.createdAt),
    toDate(s.updatedAt)
  ]
  if (quota !== null) values.push(s.workspaceId, quota.period, quota.max)
  if (messages.length > 0)
    values.push(
      JSON.stringify(
        messages.map((m, position) => ({
          id: m.id,
          position,
          role: m.role,
          content: m.content,
          created_at: WireShapes.isoTimestamp(m.createdAt)
        }))
      )
    )
  return { text: insertSubmissionTexts[quota === null ? 0 : 1]![messages.length === 0 ? 0 : 1]!, values }
}

export const PgSubmissionRepository = Layer.effect(
  SubmissionRepository,
  Effect.map(Effect.all([SqlClient.SqlClient, statementSteps]), ([sql, { step, final, planned }]) =>
    SubmissionRepository.of({
      insert: (s, messages) =>
        step("submissions.insert", insertSubmission(s, messages, null), () => Exit.void),
      // One statement: the inserts, then the usage counter's reservation, which fails it past
      // the quota; a unit of work's last, so it may carry the COMMIT (UnitOfWork.commitWith).
      insertWithinQuota: (s, messages, quota) =>
        final(
          "submissions.insertWithinQuota",
          insertSubmission(s, messages, quota),
          () => Exit.void,
          (error) =>
            isQuotaUsedUp(error)
              ? new PlanLimitExceeded({
                  message: `The monthly quota of ${quota.max} submissions is used up.`,
                  resource: "submissions",
                  current: quotaUsedUpCount(error),
                  max: quota.max
                })
              : undefined
        ),
      findById: (id) =>
        stored("submissions.findById")(
          Effect.map(sql<SubmissionRow>`SELECT * FROM submissions WHERE id = ${id}`, (rows) =>
            Option.map(Option.fromNullable(rows[0]), (row) => submissionFromRow(row))
          )
        ),
      findInBot: (workspaceId, intakeBotId, id) =>
        stored("submissions.findInBot")(
          Effect.gen(function* () {
            const [row] = yield* sql<SubmissionRow>`SELECT * FROM submissions
              WHERE id = ${id} AND workspace_id = ${workspaceId} AND intake_bot_id = ${intakeBotId}`
            if (row === undefined) return Option.none()
            const messages =
              yield* sql<MessageRow>`SELECT * FROM messages WHERE submission_id = ${id} ORDER BY position`
            return Option.some({ ...submissionFromRow(row), messages: messages.map(messageFromRow) })
          })
        ),
      // One query: message_count as the create kept it (migration 13).
      list: (workspaceId, intakeBotId, page, range) =>
        planned(
          "submissions.list",
          listSubmissionsStatement(workspaceId, intakeBotId, page, range),
          (rows: ReadonlyArray<SubmissionListRow>) =>
            Exit.succeed(pageFrom(rows, page.limit, (row) => listItemFromRow(row, workspaceId, intakeBotId)))
        ),
      replaceSummary: (id, summary, at) =>
        stored("submissions.replaceSummary")(
          Effect.map(
            sql<Row>`UPDATE submissions SET ai_summary = ${summary}, updated_at = ${toDate(at)}
              WHERE id = ${id} RETURNING id`,
            (rows) => rows.length > 0
          )
        ),
      delete: (id) =>
        stored("submissions.delete")(
          Effect.map(
            sql<Row>`DELETE FROM submissions WHERE id = ${id} RETURNING id`,
            (rows) => rows.length > 0
          )
        )
    })
  )
)

export const PgUsageCounters = Layer.effect(
  UsageCounters,
  Effect.zipWith(SqlClient.SqlClient, statementSteps, (sql, { step }) =>
    UsageCounters.of({
      reserveSubmission: (workspaceId, period, max) =>
        step(
          "usage.reserveSubmission",
          { text: reservationStatement, values: [workspaceId, period, max] },
          ([row]) =>
            row !== undefined
              ? Exit.succeed(toNumber(row.used))
              : stored("usage.reserveSubmission")(quotaUsedUp(sql, workspaceId, period, max))
        ),
      submissionsUsed: (workspaceId, period) =>
        stored("usage.submissionsUsed")(usedSubmissions(sql, workspaceId, period))
    })
  )
)

const EVENT_COLUMNS = [
  "id",
  "workspace_id",
  "type",
  "intake_bot_id",
  "submission_id",
  "contact_id",
  "webhook_id",
  "disabled_reason",
  "request_id",
  "trace_parent",
  "created_at"
] as const

/** An event's values in EVENT_COLUMNS' order. */
const eventValues = (e: DomainEvent): ReadonlyArray<unknown> => [
  e.id,
  e.workspaceId,
  e.type,
  e.intakeBotId,
  e.submissionId,
  e.contactId,
  e.webhookId ?? null,
  e.disabledReason ?? null,
  e.requestId ?? null,
  e.traceParent ?? null,
  toDate(e.createdAt)
]

/** `count` rows of parameters from `$first` on, EVENT_COLUMNS' values each, cast as the columns are. */
const eventRows = (count: number, first: number) =>
  Array.from(
    { length: count },
    (_, event) =>
      `(${EVENT_COLUMNS.map(
        (column, index) =>
          `$${first + event * EVENT_COLUMNS.length + index}::${column === "created_at" ? "timestamptz" : "text"}`
      ).join(", ")})`
  ).join(", ")

/** The INSERT of `count` events (a create appends one or two): one text, prepared once, per count. */
const insertEventsTexts = [1, 2].map(
  (count) => `INSERT INTO domain_events (${EVENT_COLUMNS.join(", ")}) VALUES ${eventRows(count, 1)}`
)

/**
 * The contact found or created (intake_contact_for, migration 11) and `count` events naming
 * it, contact.created only when it was created: one statement that answers no rows.
 */
const contactWithEventsTexts = [1, 2].map(
  (count) => `WITH contact AS MATERIALIZED (
      SELECT contact_id, created FROM intake_contact_for($1, $2, $3, $4, $5::timestamptz)
    )
    INSERT INTO domain_events (${EVENT_COLUMNS.join(", ")})
    SELECT ${EVENT_COLUMNS.map((column) => (column === "contact_id" ? "contact.contact_id" : `e.${column}`)).join(", ")}
    FROM contact, (VALUES ${eventRows(count, 6)}) AS e (${EVENT_COLUMNS.join(", ")})
    WHERE e.type <> 'contact.created' OR contact.created`
)

const contactValues = (c: Contact): ReadonlyArray<unknown> => [
  c.id,
  c.workspaceId,
  c.email,
  c.name,
  toDate(c.createdAt)
]

/** EventOutbox.append on PostgreSQL, also for the events of a contact (PgContactRepository). */
const outboxAppend =
  (sql: SqlClient.SqlClient, deferred: DeferredStep) =>
  (
    events: ReadonlyArray<DomainEvent>,
    queued: QueuedDeliveries | undefined
  ): Effect.Effect<void, StorageUnavailable> => {
    if (events.length === 0) return Effect.void
    const text = insertEventsTexts[events.length - 1]
    // Without attempts (no endpoint listens), as a prepared statement that goes with the
    // unit of work's next one: nothing waits for its answer.
    if (text !== undefined && (queued === undefined || queued.deliveries.length === 0))
      return deferred("outbox.append", { text, values: events.flatMap(eventValues) })
    // One statement: the events, and their attempts in a data-modifying CTE.
    const insertEvents = sql`INSERT INTO domain_events ${sql.insert(
      events.map((e) => {
        const values = eventValues(e)
        return Object.fromEntries(EVENT_COLUMNS.map((column, index) => [column, values[index]]))
      })
    )}`
    const deliveries =
      queued === undefined
        ? []
        : queued.deliveries.map((d) => deliveryRow(d, d.status === "pending" ? queued.dueAt : null))
    return stored("outbox.append")(
      Effect.asVoid(
        deliveries.length === 0
          ? insertEvents
          : sql`WITH appended AS (${insertEvents}) INSERT INTO deliveries ${sql.insert(deliveries)}`
      )
    )
  }

export const PgContactRepository = Layer.effect(
  ContactRepository,
  Effect.zipWith(SqlClient.SqlClient, statementSteps, (sql, { step, deferred }) => {
    const append = outboxAppend(sql, deferred)
    return ContactRepository.of({
      findOrCreateWithEvents: (c, events, queued) => {
        const text = contactWithEventsTexts[events.length - 1]
        // Without attempts, one statement that goes with the unit of work's next one.
        if (text !== undefined && (queued === undefined || queued.deliveries.length === 0))
          return deferred("contacts.findOrCreateWithEvents", {
            text,
            values: [...contactValues(c), ...events.flatMap(eventValues)]
          })
        // With attempts: the contact, then the events that name it with their attempts.
        return step(
          "contacts.findOrCreateWithEvents",
          {
            text: "SELECT contact_id, created FROM intake_contact_for($1, $2, $3, $4, $5)",
            values: contactValues(c)
          },
          ([row]: ReadonlyArray<ContactForRow>) => {
            const stored = ContactEvents.eventsForContact(
              events,
              queued,
              row?.contact_id as string,
              row?.created === true
            )
            return append(stored.events, stored.queued)
          }
        )
      },
      findById: (workspaceId, id) =>
        stored("contacts.findById")(
          Effect.map(
            sql<ContactRow>`SELECT * FROM contacts WHERE id = ${id} AND workspace_id = ${workspaceId}`,
            (rows) => Option.map(Option.fromNullable(rows[0]), contactFromRow)
          )
        )
    })
  })
)

export const PgEventOutbox = Layer.effect(
  EventOutbox,
  Effect.zipWith(SqlClient.SqlClient, statementSteps, (sql, { deferred }) =>
    EventOutbox.of({
      append: outboxAppend(sql, deferred),
      findById: (id) =>
        stored("outbox.findById")(
          Effect.map(sql<EventRow>`SELECT * FROM domain_events WHERE id = ${id}`, (rows) =>
            Option.map(Option.fromNullable(rows[0]), eventFromRow)
          )
        )
    })
  )
)

export const PgSubmissionPortsLive = Layer.mergeAll(
  PgIntakeBotRepository,
  PgSubmissionRepository,
  PgUsageCounters,
  PgContactRepository,
  PgEventOutbox
)
