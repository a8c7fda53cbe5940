/**
 * What sending claimed attempts needs (DeliveryRepository.dispatchSources), as the rows of
 * queue-statements.ts' dispatch-sources and lease statements give it: each attempt's endpoint
 * and its workspace, its event and the event's sources, each row as json. The dispatcher then
 * builds every payload without another read (docs/webhooks.md, "How the engine sends").
 */
import type { DispatchSources } from "@intake/domain"
import { workspaceFromRow } from "./access.js"
import { botFromRow, contactFromRow, eventFromRow, messageFromRow, submissionFromRow } from "./rows.js"
import { fromJson, type Row } from "./storage.js"
import { endpointFromRow } from "./webhooks.js"

const rowOrNull = <A>(value: unknown, from: (row: Row) => A): A | null =>
  value === null || value === undefined ? null : from(fromJson<Row>(value))

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
