/**
 * Bots on Postgres: the repository, the page of a workspace's bots and a create's first read
 * (the bot with its workspace and endpoints).
 * Statement style: the hot path (a create's first read) as named prepared statements on `pg` (driver/statement-steps.ts, `statement` or { text, values } for texts built once), where `@effect/sql` cost as much CPU again (docs/performance.md, "Statements on pg"); everything else through `@effect/sql`'s sql`...`.
 */
import { SqlClient } from "@effect/sql"
import { IntakeBotRepository, type PageRequest } from "@intake/domain/internal"
import { Effect, Exit, Layer, Option } from "effect"
import { workspaceFromRow } from "./access.js"
import { statement } from "./driver/statement.js"
import { statementSteps } from "./driver/statement-steps.js"
import { afterPosition, pageFrom } from "./paging.js"
import {
  type BotListRow,
  type BotRow,
  botFromRow,
  type IdRow,
  type IntakeTargetRow,
  type WebhookEndpointRow,
  type WorkspaceRow
} from "./rows.js"
import { fromJson, type Row, stored, toDate, toNumber } from "./storage.js"
import { endpointFromRow } from "./webhooks.js"

/** A page of a workspace's bots with each one's submission count (intake_bot_counts, kept by a trigger). */
export const listBotsQuery = (sql: SqlClient.SqlClient, workspaceId: string, page: PageRequest) =>
  sql<BotListRow>`SELECT b.id, b.workspace_id, b.name, b.description, b.status, b.share_slug, b.schema,
      b.schema_version, b.created_at, b.updated_at, coalesce(c.submissions, 0) AS submission_count
    FROM intake_bots b LEFT JOIN intake_bot_counts c ON c.intake_bot_id = b.id
    WHERE ${sql.and([sql`b.workspace_id = ${workspaceId}`, ...afterPosition(sql, "b", page.after)])}
    ORDER BY b.created_at DESC, b.id DESC
    LIMIT ${page.limit + 1}`
/** The bot joined to its workspace, with the workspace's endpoints as json (a create's first read). */
const intakeTargetStatement = (id: string) =>
  statement`SELECT b.*, row_to_json(w) AS workspace,
      (SELECT coalesce(json_agg(e ORDER BY e.created_at, e.id), '[]'::json) FROM webhook_endpoints e
        WHERE e.workspace_id = b.workspace_id) AS endpoints
    FROM intake_bots b JOIN workspaces w ON w.id = b.workspace_id
    WHERE b.id = ${id}`

const intakeTargetInWorkspace = (id: string, workspaceId: string) =>
  statement`SELECT b.*, row_to_json(w) AS workspace,
      (SELECT coalesce(json_agg(e ORDER BY e.created_at, e.id), '[]'::json) FROM webhook_endpoints e
        WHERE e.workspace_id = b.workspace_id) AS endpoints
    FROM intake_bots b JOIN workspaces w ON w.id = b.workspace_id
    WHERE b.id = ${id} AND b.workspace_id = ${workspaceId}`

/** The bot with its workspace and endpoints, from intakeTargetStatement's row. */
const intakeTargetFromRows = (rows: ReadonlyArray<IntakeTargetRow>) =>
  Exit.succeed(
    Option.map(Option.fromNullable(rows[0]), (row) => {
      const endpoints = fromJson<ReadonlyArray<WebhookEndpointRow>>(row.endpoints).map(endpointFromRow)
      return {
        bot: botFromRow(row),
        workspace: workspaceFromRow(fromJson<WorkspaceRow>(row.workspace)),
        activeEndpoints: endpoints.filter((endpoint) => endpoint.status === "active"),
        inactiveEndpoints: endpoints.filter((endpoint) => endpoint.status !== "active")
      }
    })
  )

export const PgIntakeBotRepository = Layer.effect(
  IntakeBotRepository,
  Effect.zipWith(SqlClient.SqlClient, statementSteps, (sql, { step }) => {
    const findOne = (rows: ReadonlyArray<BotRow>) => Option.map(Option.fromNullable(rows[0]), botFromRow)
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
          Effect.map(sql<BotRow>`SELECT * FROM intake_bots WHERE id = ${id}`, findOne)
        ),
      // One read: the bot joined to its workspace, with the workspace's endpoints as json.
      findIntakeTarget: (id, workspaceId) =>
        step(
          "intakeBots.findIntakeTarget",
          workspaceId === null ? intakeTargetStatement(id) : intakeTargetInWorkspace(id, workspaceId),
          intakeTargetFromRows
        ),
      findInWorkspace: (workspaceId, id) =>
        stored("intakeBots.findInWorkspace")(
          Effect.map(
            sql<BotRow>`SELECT * FROM intake_bots WHERE id = ${id} AND workspace_id = ${workspaceId}`,
            findOne
          )
        ),
      // One query: each bot's count is its row of intake_bot_counts (none: no submission yet).
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
                sql<IdRow>`SELECT id FROM intake_bots WHERE workspace_id = ${workspaceId} AND id IN ${sql.in([...new Set(ids)])}`,
                (rows) => {
                  const found = new Set(rows.map((row) => row.id))
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
