/**
 * The public shapes of records that both the HTTP answers and the webhook payloads carry
 * (the single-submission shape): defined once here, so an event's `submission` is
 * exactly what GET /intake-bots/:id/submissions/:submissionId answers.
 */
import type { FieldValue, Message, SubmissionDetail } from "./models.js"

const DAY_MS = 86_400_000
// The time of day in four pieces, each with the separator after it (`HH:`, `MM:`, `SS.`,
// `mmmZ`): four concatenations for a timestamp, or four slots of an answer's parts.
const padded = (length: number, width: number, after: string) =>
  Array.from({ length }, (_, n) => `${String(n).padStart(width, "0")}${after}`)
const hourPieces = padded(24, 2, ":")
const minutePieces = padded(60, 2, ":")
const secondPieces = padded(60, 2, ".")
const millisPieces = padded(1000, 3, "Z")
// The date parts (`2026-11-21T`) of the last two days rendered: a page of records mostly
// shares one, and a create's statements carry two (now, and expiries a day later).
let cachedDay = Number.NaN
let cachedDayPrefix = ""
let otherDay = Number.NaN
let otherDayPrefix = ""

/**
 * The `YYYY-MM-DDT` of the day of whole epoch milliseconds, or undefined for a year outside
 * 0000-9999 (rendered as ±YYYYYY, never cached). The last two days seen are kept.
 */
const dayPrefix = (millis: number, day: number): string | undefined => {
  if (day !== cachedDay) {
    if (day !== otherDay) {
      const full = new Date(millis).toISOString()
      if (full.length !== 24) return undefined
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
  return cachedDayPrefix
}

/** The number of pieces `putIsoTimestamp` puts. */
export const ISO_TIMESTAMP_PIECES = 5

/**
 * Puts isoTimestamp's text of `input` into `parts` at `at`, as ISO_TIMESTAMP_PIECES pieces
 * (the day, then the time of day from tables), for an answer written as parts joined once:
 * no string is built for it (docs/performance.md, Lists).
 */
export const putIsoTimestamp = (parts: Array<string>, at: number, input: number): void => {
  // Whole milliseconds, as a Date keeps them (it drops a fraction toward zero).
  const millis = Math.trunc(input)
  const day = Math.floor(millis / DAY_MS)
  const prefix = dayPrefix(millis, day)
  if (prefix === undefined) {
    parts[at] = new Date(millis).toISOString()
    parts[at + 1] = parts[at + 2] = parts[at + 3] = parts[at + 4] = ""
    return
  }
  let rest = millis - day * DAY_MS
  const fraction = rest % 1000
  rest = (rest - fraction) / 1000
  const seconds = rest % 60
  rest = (rest - seconds) / 60
  const minutes = rest % 60
  parts[at] = prefix
  parts[at + 1] = hourPieces[(rest - minutes) / 60]!
  parts[at + 2] = minutePieces[minutes]!
  parts[at + 3] = secondPieces[seconds]!
  parts[at + 4] = millisPieces[fraction]!
}

// isoTimestamp's pieces, one array reused by every call (each reads them back at once).
const timestampPieces: Array<string> = ["", "", "", "", ""]

/**
 * Epoch milliseconds as ISO 8601 UTC with exactly three fraction digits, exactly as
 * `new Date(millis).toISOString()` renders them (and throws for what it refuses). A list of
 * fifty records renders a hundred of these: the day's part is kept from the last calls and
 * the time of day is put together from tables, which costs a tenth of building a Date.
 */
export const isoTimestamp = (input: number): string => {
  putIsoTimestamp(timestampPieces, 0, input)
  return (
    timestampPieces[0]! +
    timestampPieces[1]! +
    timestampPieces[2]! +
    timestampPieces[3]! +
    timestampPieces[4]!
  )
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
