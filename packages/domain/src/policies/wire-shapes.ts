/**
 * The public shapes of records that both the HTTP answers and the webhook payloads carry
 * (the single-submission shape): defined once here, so an event's `submission` is
 * exactly what GET /intake-bots/:id/submissions/:submissionId answers.
 */
import type { FieldValue, Message, SubmissionDetail } from "../models.js"

const DAY_MS = 86_400_000
const pad2 = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, "0"))
const pad3 = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, "0"))
// The date parts (`2026-11-21T`) of the last two days rendered: a page of records mostly
// shares one, and a create's statements carry two (now, and expiries a day later).
let cachedDay = Number.NaN
let cachedDayPrefix = ""
let otherDay = Number.NaN
let otherDayPrefix = ""

/**
 * Epoch milliseconds as ISO 8601 UTC with exactly three fraction digits, exactly as
 * `new Date(millis).toISOString()` renders them (and throws for what it refuses). A list of
 * fifty records renders a hundred of these: the day's part is kept from the last calls and
 * the time of day is put together from tables, which costs a tenth of building a Date.
 */
export const isoTimestamp = (input: number): string => {
  // Whole milliseconds, as a Date keeps them (it drops a fraction toward zero).
  const millis = Math.trunc(input)
  const day = Math.floor(millis / DAY_MS)
  if (day !== cachedDay) {
    if (day !== otherDay) {
      const full = new Date(millis).toISOString()
      // Years outside 0000-9999 render as ±YYYYYY: such a day is not cached.
      if (full.length !== 24) return full
      otherDay = day
      otherDayPrefix = full.slice(0, 11)
    }
    // The day just used becomes the first one looked at; the other keeps the previous one.
    const previousDay = cachedDay
    const previousPrefix = cachedDayPrefix
    cachedDay = otherDay
    cachedDayPrefix = otherDayPrefix
    otherDay = previousDay
    otherDayPrefix = previousPrefix
  }
  let rest = millis - day * DAY_MS
  const fraction = rest % 1000
  rest = (rest - fraction) / 1000
  const seconds = rest % 60
  rest = (rest - seconds) / 60
  const minutes = rest % 60
  const hours = (rest - minutes) / 60
  return `${cachedDayPrefix}${pad2[hours]}:${pad2[minutes]}:${pad2[seconds]}.${pad3[fraction]}Z`
}

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
