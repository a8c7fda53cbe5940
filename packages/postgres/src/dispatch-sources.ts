/**
 * What sending claimed attempts needs (DeliveryRepository.dispatchSources), as the rows of
 * queue-statements.ts' dispatch-sources and lease statements give it: each attempt's endpoint
 * and its workspace, its event and the event's sources, each row as json. The dispatcher then
 * builds every payload without another read (docs/webhooks.md, "How the engine sends").
 */
import type { DispatchSources } from "@intake/domain"
import { workspaceFromRow } from "./access.js"
import {
  botFromRow,
  contactFromRow,
  type DispatchSourcesRow,
  eventFromRow,
  type Json,
  type MessageRow,
  messageFromRow,
  type SubmissionRow,
  submissionFromRow
} from "./rows.js"
import { fromJson } from "./storage.js"
import { endpointFromRow } from "./webhooks.js"

/** A row of a table, as json in the joined row (the type `from` reads it as), or null. */
const rowOrNull = <R, A>(value: Json, from: (row: R) => A): A | null =>
  value === null || value === undefined ? null : from(fromJson<R>(value))

export const dispatchSourcesFromRows = (
  rows: ReadonlyArray<DispatchSourcesRow>
): ReadonlyMap<string, DispatchSources> => {
  const sources = new Map<string, DispatchSources>()
  for (const row of rows) {
    const submission = rowOrNull(row.submission, (r: SubmissionRow) => submissionFromRow(r))
    sources.set(row.delivery_id, {
      endpoint: rowOrNull(row.endpoint, endpointFromRow),
      workspace: rowOrNull(row.workspace, workspaceFromRow),
      event: rowOrNull(row.event, eventFromRow),
      submission:
        submission === null
          ? null
          : {
              ...submission,
              messages: fromJson<ReadonlyArray<MessageRow>>(row.messages ?? []).map(messageFromRow)
            },
      bot: rowOrNull(row.bot, botFromRow),
      contact: rowOrNull(row.contact, contactFromRow)
    })
  }
  return sources
}
