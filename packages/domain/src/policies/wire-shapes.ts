/**
 * The public shapes of records that both the HTTP answers and the webhook payloads carry
 * (the single-submission shape): defined once here, so an event's `submission` is
 * exactly what GET /intake-bots/:id/submissions/:submissionId answers.
 */
import type { FieldValue, Message, SubmissionDetail } from "../models.js"

/** Epoch milliseconds as ISO 8601 UTC with exactly three fraction digits. */
export const isoTimestamp = (millis: number): string => new Date(millis).toISOString()

export const isoOrNull = (millis: number | null): string | null =>
  millis === null ? null : isoTimestamp(millis)

export interface MessageShape {
  readonly id: string
  readonly role: string
  readonly content: string
  readonly created_at: string
}

export interface SubmissionShape {
  readonly id: string
  readonly data: { readonly [field: string]: FieldValue }
  readonly status: SubmissionDetail["status"]
  readonly ai_summary: string
  readonly is_test: boolean
  readonly file_count: number
  readonly schema_version: number
  readonly intake_bot_id: string
  readonly messages: ReadonlyArray<MessageShape>
  readonly created_at: string
  readonly updated_at: string
}

export const messageShape = (message: Message): MessageShape => ({
  id: message.id,
  role: message.role,
  content: message.content,
  created_at: isoTimestamp(message.createdAt)
})

export const submissionShape = (submission: SubmissionDetail): SubmissionShape => ({
  id: submission.id,
  data: submission.data,
  status: submission.status,
  ai_summary: submission.aiSummary,
  is_test: submission.isTest,
  file_count: submission.fileCount,
  schema_version: submission.schemaVersion,
  intake_bot_id: submission.intakeBotId,
  messages: submission.messages.map(messageShape),
  created_at: isoTimestamp(submission.createdAt),
  updated_at: isoTimestamp(submission.updatedAt)
})
