/**
 * Rows of the tables several repositories read, as domain values: one mapping per table,
 * shared by the repository of the table and the reads that join it (dispatch-sources.ts).
 */
import type { Contact, DomainEvent, IntakeBot, Message, Submission } from "@intake/domain"
import { fromJson, type Row, toMillis, toNumber } from "./storage.js"

export const botFromRow = (row: Row): IntakeBot => ({
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

/**
 * A submission row's columns but its data; `workspaceId` and `intakeBotId` when the query
 * knew them and did not select them.
 */
export const submissionFieldsFromRow = (
  row: Row,
  workspaceId = row.workspace_id as string,
  intakeBotId = row.intake_bot_id as string
): Omit<Submission, "data"> => ({
  id: row.id as string,
  workspaceId,
  intakeBotId,
  status: row.status as Submission["status"],
  aiSummary: row.ai_summary as string,
  isTest: row.is_test as boolean,
  fileCount: toNumber(row.file_count),
  schemaVersion: toNumber(row.schema_version),
  createdAt: toMillis(row.created_at),
  updatedAt: toMillis(row.updated_at)
})

/** A submission row, its data parsed. */
export const submissionFromRow = (row: Row, workspaceId?: string, intakeBotId?: string): Submission =>
  Object.assign(submissionFieldsFromRow(row, workspaceId, intakeBotId), {
    data: fromJson<Submission["data"]>(row.data)
  })

export const messageFromRow = (row: Row): Message => ({
  id: row.id as string,
  submissionId: row.submission_id as string,
  role: row.role as Message["role"],
  content: row.content as string,
  createdAt: toMillis(row.created_at)
})

export const contactFromRow = (row: Row): Contact => ({
  id: row.id as string,
  workspaceId: row.workspace_id as string,
  email: row.email as string,
  name: row.name as string | null,
  createdAt: toMillis(row.created_at)
})

/** An outbox event. */
export const eventFromRow = (row: Row): DomainEvent => ({
  id: row.id as string,
  workspaceId: row.workspace_id as string,
  type: row.type as DomainEvent["type"],
  intakeBotId: row.intake_bot_id as string,
  submissionId: row.submission_id as string,
  contactId: row.contact_id as string | null,
  ...(row.webhook_id === null || row.webhook_id === undefined ? {} : { webhookId: row.webhook_id as string }),
  ...(row.disabled_reason === null || row.disabled_reason === undefined
    ? {}
    : { disabledReason: row.disabled_reason as NonNullable<DomainEvent["disabledReason"]> }),
  ...(row.request_id === null || row.request_id === undefined ? {} : { requestId: row.request_id as string }),
  ...(row.trace_parent === null || row.trace_parent === undefined
    ? {}
    : { traceParent: row.trace_parent as string }),
  createdAt: toMillis(row.created_at)
})
