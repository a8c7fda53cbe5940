/** Bots, submissions with their messages, usage counters, contacts and the outbox on Postgres. */
import { SqlClient } from "@effect/sql"
import {
  type Contact,
  ContactRepository,
  type CreatedRange,
  type DomainEvent,
  EventOutbox,
  type IntakeBot,
  IntakeBotRepository,
  type Message,
  type PageRequest,
  PlanLimitExceeded,
  type Submission,
  SubmissionRepository,
  UsageCounters
} from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { afterPosition, pageFrom } from "./paging.js"
import { fromJson, type Row, stored, toDate, toMillis, toNumber } from "./storage.js"

/** A page of a workspace's bots with each one's submission_count (a counter column, kept by a trigger). */
export const listBotsQuery = (sql: SqlClient.SqlClient, workspaceId: string, page: PageRequest) =>
  sql<Row>`SELECT b.*
    FROM intake_bots b
    WHERE ${sql.and([sql`b.workspace_id = ${workspaceId}`, ...afterPosition(sql, "b", page.after)])}
    ORDER BY b.created_at DESC, b.id DESC
    LIMIT ${page.limit + 1}`

/** A page of a bot's submissions within a created range, with each one's message_count. */
export const listSubmissionsQuery = (
  sql: SqlClient.SqlClient,
  workspaceId: string,
  intakeBotId: string,
  page: PageRequest,
  range: CreatedRange
) =>
  sql<Row>`SELECT s.*, (SELECT count(*) FROM messages m WHERE m.submission_id = s.id) AS message_count
    FROM submissions s
    WHERE ${sql.and([
      sql`s.intake_bot_id = ${intakeBotId}`,
      sql`s.workspace_id = ${workspaceId}`,
      ...(range.createdAfter === null ? [] : [sql`s.created_at >= ${toDate(range.createdAfter)}`]),
      ...(range.createdBefore === null ? [] : [sql`s.created_at <= ${toDate(range.createdBefore)}`]),
      ...afterPosition(sql, "s", page.after)
    ])}
    ORDER BY s.created_at DESC, s.id DESC
    LIMIT ${page.limit + 1}`

const botFromRow = (row: Row): IntakeBot => ({
  id: row.id as string,
  workspaceId: row.workspace_id as string,
  name: row.name as string,
  description: row.description as string,
  status: row.status as IntakeBot["status"],
  shareSlug: row.share_slug as string,
  schema: fromJson<IntakeBot["schema"]>(row.schema),
  schemaVersion: toNumber(row.schema_version),
  createdAt: toMillis(row.created_at),
  updatedAt: toMillis(row.updated_at)
})

export const PgIntakeBotRepository = Layer.effect(
  IntakeBotRepository,
  Effect.map(SqlClient.SqlClient, (sql) => {
    const findOne = (rows: ReadonlyArray<Row>) => Option.map(Option.fromNullable(rows[0]), botFromRow)
    return IntakeBotRepository.of({
      insert: (bot) =>
        stored("intakeBots.insert")(
          Effect.asVoid(sql`INSERT INTO intake_bots (id, workspace_id, name, description, status, share_slug, schema, schema_version, created_at, updated_at)
            VALUES (${bot.id}, ${bot.workspaceId}, ${bot.name}, ${bot.description}, ${bot.status}, ${bot.shareSlug},
                    ${JSON.stringify(bot.schema)}::json, ${bot.schemaVersion}, ${toDate(bot.createdAt)}, ${toDate(bot.updatedAt)})`)
        ),
      update: (bot) =>
        stored("intakeBots.update")(
          Effect.asVoid(sql`UPDATE intake_bots SET name = ${bot.name}, description = ${bot.description}, status = ${bot.status},
              share_slug = ${bot.shareSlug}, schema = ${JSON.stringify(bot.schema)}::json, schema_version = ${bot.schemaVersion},
              updated_at = ${toDate(bot.updatedAt)}
            WHERE id = ${bot.id}`)
        ),
      findById: (id) =>
        stored("intakeBots.findById")(
          Effect.map(sql<Row>`SELECT * FROM intake_bots WHERE id = ${id}`, findOne)
        ),
      findInWorkspace: (workspaceId, id) =>
        stored("intakeBots.findInWorkspace")(
          Effect.map(
            sql<Row>`SELECT * FROM intake_bots WHERE id = ${id} AND workspace_id = ${workspaceId}`,
            findOne
          )
        ),
      // One query: each bot's submission_count is its counter column.
      list: (workspaceId, page) =>
        stored("intakeBots.list")(
          Effect.map(listBotsQuery(sql, workspaceId, page), (rows) =>
            pageFrom(rows, page.limit, (row) => ({
              ...botFromRow(row),
              submissionCount: toNumber(row.submission_count)
            }))
          )
        ),
      existingIds: (workspaceId, ids) =>
        ids.length === 0
          ? Effect.succeed([])
          : stored("intakeBots.existingIds")(
              Effect.map(
                sql<Row>`SELECT id FROM intake_bots WHERE workspace_id = ${workspaceId} AND id IN ${sql.in([...new Set(ids)])}`,
                (rows) => {
                  const found = new Set(rows.map((row) => row.id as string))
                  return [...new Set(ids)].filter((id) => found.has(id))
                }
              )
            ),
      slugExists: (slug) =>
        stored("intakeBots.slugExists")(
          Effect.map(
            sql<Row>`SELECT 1 FROM intake_bots WHERE share_slug = ${slug}`,
            (rows) => rows.length > 0
          )
        )
    })
  })
)

const submissionFromRow = (row: Row): Submission => ({
  id: row.id as string,
  workspaceId: row.workspace_id as string,
  intakeBotId: row.intake_bot_id as string,
  data: fromJson<Submission["data"]>(row.data),
  status: row.status as Submission["status"],
  aiSummary: row.ai_summary as string,
  isTest: row.is_test as boolean,
  fileCount: toNumber(row.file_count),
  schemaVersion: toNumber(row.schema_version),
  createdAt: toMillis(row.created_at),
  updatedAt: toMillis(row.updated_at)
})

const messageFromRow = (row: Row): Message => ({
  id: row.id as string,
  submissionId: row.submission_id as string,
  role: row.role as Message["role"],
  content: row.content as string,
  createdAt: toMillis(row.created_at)
})

export const PgSubmissionRepository = Layer.effect(
  SubmissionRepository,
  Effect.map(SqlClient.SqlClient, (sql) =>
    SubmissionRepository.of({
      insert: (s, messages) =>
        stored("submissions.insert")(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`INSERT INTO submissions (id, workspace_id, intake_bot_id, data, status, ai_summary, is_test, file_count, schema_version, created_at, updated_at)
                VALUES (${s.id}, ${s.workspaceId}, ${s.intakeBotId}, ${JSON.stringify(s.data)}::json, ${s.status}, ${s.aiSummary},
                        ${s.isTest}, ${s.fileCount}, ${s.schemaVersion}, ${toDate(s.createdAt)}, ${toDate(s.updatedAt)})`
              if (messages.length > 0)
                yield* sql`INSERT INTO messages ${sql.insert(
                  messages.map((m, position) => ({
                    id: m.id,
                    submission_id: s.id,
                    position,
                    role: m.role,
                    content: m.content,
                    created_at: toDate(m.createdAt)
                  }))
                )}`
            })
          )
        ),
      findById: (id) =>
        stored("submissions.findById")(
          Effect.map(sql<Row>`SELECT * FROM submissions WHERE id = ${id}`, (rows) =>
            Option.map(Option.fromNullable(rows[0]), submissionFromRow)
          )
        ),
      findInBot: (workspaceId, intakeBotId, id) =>
        stored("submissions.findInBot")(
          Effect.gen(function* () {
            const [row] = yield* sql<Row>`SELECT * FROM submissions
              WHERE id = ${id} AND workspace_id = ${workspaceId} AND intake_bot_id = ${intakeBotId}`
            if (row === undefined) return Option.none()
            const messages =
              yield* sql<Row>`SELECT * FROM messages WHERE submission_id = ${id} ORDER BY position`
            return Option.some({ ...submissionFromRow(row), messages: messages.map(messageFromRow) })
          })
        ),
      // One query: message_count is a count on the messages' (submission_id, position) index.
      list: (workspaceId, intakeBotId, page, range) =>
        stored("submissions.list")(
          Effect.map(listSubmissionsQuery(sql, workspaceId, intakeBotId, page, range), (rows) =>
            pageFrom(rows, page.limit, (row) => ({
              ...submissionFromRow(row),
              messageCount: toNumber(row.message_count)
            }))
          )
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
  Effect.map(SqlClient.SqlClient, (sql) => {
    const used = (workspaceId: string, period: string) =>
      Effect.map(
        sql<Row>`SELECT used FROM submission_usage WHERE workspace_id = ${workspaceId} AND period = ${period}`,
        (rows) => (rows[0] === undefined ? 0 : toNumber(rows[0].used))
      )
    return UsageCounters.of({
      // One conditional upsert: the row lock serializes concurrent reservations (until
      // the transaction ends), and the WHERE is checked against the latest count.
      reserveSubmission: (workspaceId, period, max) =>
        stored("usage.reserveSubmission")(
          Effect.gen(function* () {
            const rows = yield* sql<Row>`INSERT INTO submission_usage (workspace_id, period, used)
              SELECT ${workspaceId}, ${period}, 1 WHERE ${max}::int > 0
              ON CONFLICT (workspace_id, period) DO UPDATE SET used = submission_usage.used + 1
                WHERE submission_usage.used < ${max}::int
              RETURNING used`
            if (rows[0] !== undefined) return toNumber(rows[0].used)
            const current = yield* used(workspaceId, period)
            return yield* new PlanLimitExceeded({
              message: `The monthly quota of ${max} submissions is used up.`,
              resource: "submissions",
              current,
              max
            })
          })
        ),
      submissionsUsed: (workspaceId, period) => stored("usage.submissionsUsed")(used(workspaceId, period))
    })
  })
)

const contactFromRow = (row: Row): Contact => ({
  id: row.id as string,
  workspaceId: row.workspace_id as string,
  email: row.email as string,
  name: row.name as string | null,
  createdAt: toMillis(row.created_at)
})

export const PgContactRepository = Layer.effect(
  ContactRepository,
  Effect.map(SqlClient.SqlClient, (sql) =>
    ContactRepository.of({
      // ON CONFLICT waits for a concurrent insert of the same email to commit; the select
      // that follows (a fresh snapshot under READ COMMITTED) then finds that contact.
      findOrCreate: (c) =>
        stored("contacts.findOrCreate")(
          Effect.gen(function* () {
            const inserted = yield* sql<Row>`INSERT INTO contacts (id, workspace_id, email, name, created_at)
              VALUES (${c.id}, ${c.workspaceId}, ${c.email}, ${c.name}, ${toDate(c.createdAt)})
              ON CONFLICT (workspace_id, lower(email)) DO NOTHING
              RETURNING *`
            if (inserted[0] !== undefined) return { contact: contactFromRow(inserted[0]), created: true }
            const [existing] = yield* sql<Row>`SELECT * FROM contacts
              WHERE workspace_id = ${c.workspaceId} AND lower(email) = lower(${c.email})`
            if (existing === undefined)
              return yield* Effect.dieMessage("contact vanished after a conflicting insert")
            return { contact: contactFromRow(existing), created: false }
          })
        ),
      findById: (workspaceId, id) =>
        stored("contacts.findById")(
          Effect.map(
            sql<Row>`SELECT * FROM contacts WHERE id = ${id} AND workspace_id = ${workspaceId}`,
            (rows) => Option.map(Option.fromNullable(rows[0]), contactFromRow)
          )
        )
    })
  )
)

const eventFromRow = (row: Row): DomainEvent => ({
  id: row.id as string,
  workspaceId: row.workspace_id as string,
  type: row.type as DomainEvent["type"],
  intakeBotId: row.intake_bot_id as string,
  submissionId: row.submission_id as string,
  contactId: row.contact_id as string | null,
  createdAt: toMillis(row.created_at)
})

export const PgEventOutbox = Layer.effect(
  EventOutbox,
  Effect.map(SqlClient.SqlClient, (sql) =>
    EventOutbox.of({
      append: (events) =>
        events.length === 0
          ? Effect.void
          : stored("outbox.append")(
              Effect.asVoid(
                sql`INSERT INTO domain_events ${sql.insert(
                  events.map((e) => ({
                    id: e.id,
                    workspace_id: e.workspaceId,
                    type: e.type,
                    intake_bot_id: e.intakeBotId,
                    submission_id: e.submissionId,
                    contact_id: e.contactId,
                    created_at: toDate(e.createdAt)
                  }))
                )}`
              )
            ),
      findById: (id) =>
        stored("outbox.findById")(
          Effect.map(sql<Row>`SELECT * FROM domain_events WHERE id = ${id}`, (rows) =>
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
