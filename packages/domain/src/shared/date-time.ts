/**
 * Date-times a client sends (query bounds, a key's expiry): ISO 8601 with a zone, as the
 * contract writes them (`2026-11-21T10:00:00.000Z`; seconds and fraction optional, `Z` or
 * an offset), naming a moment that exists (no 2026-02-30, no 24:00, no 10:60), from
 * 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (docs/choices.md). Anything else is
 * not a date-time.
 */
import { isCalendarDate } from "./field-values.js"

const ISO_DATE_TIME =
  /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/

export const EARLIEST_DATE_TIME = 0
export const LATEST_DATE_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/** Epoch milliseconds of `text`, or undefined when it is not a date-time of the range above. */
export const parseDateTime = (text: string): number | undefined => {
  const match = ISO_DATE_TIME.exec(text)
  if (match === null || !isCalendarDate(match[1]!)) return undefined
  const [hour, minute, second, offsetHours, offsetMinutes] = match
    .slice(2)
    .map((part) => (part === undefined ? 0 : Number(part)))
  if (hour! > 23 || minute! > 59 || second! > 59 || offsetHours! > 23 || offsetMinutes! > 59) return undefined
  const millis = Date.parse(text)
  return Number.isFinite(millis) && millis >= EARLIEST_DATE_TIME && millis <= LATEST_DATE_TIME
    ? millis
    : undefined
}
