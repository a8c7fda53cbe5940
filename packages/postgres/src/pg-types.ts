/**
 * How the pg pool reads the column types the repositories read most. A timestamptz comes
 * as text in PostgreSQL's ISO output (`2026-11-21 10:00:00.123+00`); pg's own parser runs a
 * general regular expression per value, which a list of fifty submissions pays a hundred
 * times. This reads that exact layout directly and hands anything else (another DateStyle,
 * BC dates, infinity, years past 9999) to pg's parser, so the result is always pg's.
 */
import pg from "pg"

const TIMESTAMPTZ_OID = 1184
const defaultTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ_OID, "text") as (text: string) => Date

const isDigit = (code: number) => code >= 48 && code <= 57

/** Two digits at `at`, or NaN. */
const twoDigits = (text: string, at: number) => {
  const high = text.charCodeAt(at)
  const low = text.charCodeAt(at + 1)
  return isDigit(high) && isDigit(low) ? (high - 48) * 10 + (low - 48) : Number.NaN
}

// The date part (`2026-11-21`) of the last value read, and its midnight UTC in epoch
// milliseconds: a page of rows mostly shares the day, so Date.UTC runs once per day seen.
let cachedDayText = ""
let cachedDayMillis = 0

/** Midnight UTC of the `YYYY-MM-DD` that `text` starts with; NaN when it is not one this reads. */
const dayMillis = (text: string) => {
  if (cachedDayText.length === 10 && text.startsWith(cachedDayText)) return cachedDayMillis
  const year = twoDigits(text, 0) * 100 + twoDigits(text, 2)
  // Date.UTC maps years 0-99 to 1900-1999: such dates go to pg's parser.
  if (!(year >= 100)) return Number.NaN
  const millis = Date.UTC(year, twoDigits(text, 5) - 1, twoDigits(text, 8))
  if (Number.isNaN(millis)) return millis
  cachedDayText = text.slice(0, 10)
  cachedDayMillis = millis
  return millis
}

/** `YYYY-MM-DD HH:MM:SS[.f+](+|-)HH[:MM[:SS]]`, as PostgreSQL writes a timestamptz; undefined otherwise. */
const isoTimestamptz = (text: string): Date | undefined => {
  if (
    text.length < 22 ||
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 32
  )
    return undefined
  if (text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return undefined
  const day = dayMillis(text)
  const hour = twoDigits(text, 11)
  const minute = twoDigits(text, 14)
  const second = twoDigits(text, 17)
  let at = 19
  let millis = 0
  if (text.charCodeAt(at) === 46) {
    // Whole milliseconds, the digits past the third dropped, as pg's parser truncates them
    // (tests compare every fraction of one to three digits); read digit by digit, no substring.
    let end = at + 1
    let weight = 100
    while (end < text.length && isDigit(text.charCodeAt(end))) {
      millis += (text.charCodeAt(end) - 48) * weight
      weight = (weight / 10) | 0
      end++
    }
    if (end === at + 1) return undefined
    at = end
  }
  const sign = text.charCodeAt(at) === 43 ? 1 : text.charCodeAt(at) === 45 ? -1 : 0
  if (sign === 0) return undefined
  let offsetSeconds = twoDigits(text, at + 1) * 3600
  at += 3
  if (text.charCodeAt(at) === 58) {
    offsetSeconds += twoDigits(text, at + 1) * 60
    at += 3
    if (text.charCodeAt(at) === 58) {
      offsetSeconds += twoDigits(text, at + 1)
      at += 3
    }
  }
  if (at !== text.length) return undefined
  // Hours, minutes and seconds in range, as PostgreSQL writes them: plain arithmetic is Date.UTC's answer.
  const utc = day + ((hour * 60 + minute) * 60 + second - sign * offsetSeconds) * 1000 + millis
  return Number.isNaN(utc) ? undefined : new Date(utc)
}

export const parseTimestamptz = (text: string): Date => isoTimestamptz(text) ?? defaultTimestamptz(text)

/** The pool's `types`: pg's parsers, with the faster timestamptz. */
export const poolTypes = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === TIMESTAMPTZ_OID && format !== "binary"
      ? parseTimestamptz
      : pg.types.getTypeParser(oid, format ?? "text")) as typeof pg.types.getTypeParser
}
