/**
 * What sending claimed attempts needs (DeliveryRepository.dispatchSources), in one statement
 * for a whole claim: each attempt's endpoint and its workspace, its event and the event's
 * sources, each row as json. The dispatcher then builds every payload without another read
 * (docs/webhooks.md, "How the engine sends").
 */
import type { SqlClient } from "@effect/sql"
import type { Delivery, DispatchSources } from "@intake/domain"
import { workspaceFromRow } from "./access.js"
import { botFromRow, contactFromRow, eventFromRow, messageFromRow, submissionFromRow } from "./rows.js"
import { fromJson, type Row } from "./storage.js"
import { endpointFromRow } from "./webhooks.js"

/** Ids as one text parameter, split in SQL: the same on pg and PGlite (ids never hold a comma). */
const idList = (ids: ReadonlyArray<string>) => ids.join(",")

const rowOrNull = <A>(value: unknown, from: (row: Row) => A): A | null =>
  value === null || value === undefined ? null : from(fromJson<Row>(value))

export const dispatchSourcesQuery = (sql: SqlClient.SqlClient, deliveries: ReadonlyArray<Delivery>) =>
  sql<Row>`SELECT x.id AS delivery_id, row_to_json(w) AS endpoint, row_to_json(ws) AS workspace,
      row_to_json(e) AS event, row_to_json(s) AS submission, row_to_json(b) AS bot, row_to_json(c) AS contact,
      CASE WHEN s.id IS NULL THEN NULL ELSE
        (SELECT coalesce(json_agg(m ORDER BY m.position), '[]'::json) FROM messages m WHERE m.submission_id = s.id)
      END AS messages
    FROM unnest(
      string_to_array(${idList(deliveries.map((d) => d.id))}, ','),
      string_to_array(${idList(deliveries.map((d) => d.webhookId))}, ','),
      string_to_array(${idList(deliveries.map((d) => d.eventId))}, ',')
    ) AS x(id, webhook_id, event_id)
    LEFT JOIN webhook_endpoints w ON w.id = x.webhook_id
    LEFT JOIN workspaces ws ON ws.id = w.workspace_id
    LEFT JOIN domain_events e ON e.id = x.event_id
    LEFT JOIN submissions s ON e.type = 'submission.completed' AND s.id = e.submission_id
      AND s.workspace_id = e.workspace_id AND s.intake_bot_id = e.intake_bot_id
    LEFT JOIN intake_bots b ON e.type = 'submission.completed' AND b.id = e.intake_bot_id
    LEFT JOIN contacts c ON e.type = 'contact.created' AND c.id = e.contact_id AND c.workspace_id = e.workspace_id`

export const dispatchSourcesFromRows = (rows: ReadonlyArray<Row>): ReadonlyMap<string, DispatchSources> => {
  const sources = new Map<string, DispatchSources>()
  for (const row of rows) {
    const submission = rowOrNull(row.submission, (r) => submissionFromRow(r))
    sources.set(row.delivery_id as string, {
      endpoint: rowOrNull(row.endpoint, endpointFromRow),
      workspace: rowOrNull(row.workspace, workspaceFromRow),
      event: rowOrNull(row.event, eventFromRow),
      submission:
        submission === null
          ? null
          : { ...submission, messages: fromJson<ReadonlyArray<Row>>(row.messages ?? []).map(messageFromRow) },
      bot: rowOrNull(row.bot, botFromRow),
      contact: rowOrNull(row.contact, contactFromRow)
    })
  }
  return sources
}
