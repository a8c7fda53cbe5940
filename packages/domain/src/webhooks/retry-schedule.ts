/**
 * When a failed delivery is tried again (docs/rules.md, Webhooks and deliveries): the schedule of
 * WEBHOOK_RETRY_SCHEDULE (default 5s,5m,30m,2h,5h,10h,10h), each delay stretched by up
 * to 20% of jitter so that receivers coming back are not hit by every retry at once, and
 * a Retry-After on a 429 or 503 that may push the next attempt later, never earlier, and
 * never past twice the scheduled delay.
 */
import { Either } from "effect"

export const DEFAULT_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h"
export const DEFAULT_DISABLE_AFTER = "5d"
/** WEBHOOK_RETENTION's default: how long finished attempts and events are kept. */
export const DEFAULT_RETENTION = "30d"
export const MAX_JITTER = 0.2

const UNIT_MILLIS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `250ms`, `5s`, `30m`, `2h`, `5d`: a positive whole number and a unit, as milliseconds. */
export const parseDuration = (text: string): Either.Either<number, string> => {
  const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(text.trim())
  return match === null || Number(match[1]) === 0
    ? Either.left(`"${text.trim()}" is not a duration like 250ms, 5s, 30m, 2h or 5d`)
    : Either.right(Number(match[1]) * UNIT_MILLIS[match[2]!]!)
}

/** A comma-separated list of durations: the delays before the 2nd, 3rd, … attempt. */
export const parseRetrySchedule = (text: string): Either.Either<ReadonlyArray<number>, string> =>
  Either.all(text.split(",").map(parseDuration))

/**
 * Milliseconds from `now` that a Retry-After value asks for: delay-seconds or an
 * HTTP-date; null when absent or unreadable.
 */
export const retryAfterMillis = (value: string | null, now: number): number | null => {
  if (value === null) return null
  const text = value.trim()
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1_000
  const date = Date.parse(text)
  return Number.isFinite(date) && /[a-z]/i.test(text) ? Math.max(0, date - now) : null
}

export interface RetryInput {
  readonly schedule: ReadonlyArray<number>
  /** The number of the attempt that just failed, from 1. */
  readonly failedAttempt: number
  /** A uniform random number in [0, 1): how much of the jitter to use. */
  readonly random: number
  readonly responseStatus: number | null
  /** Milliseconds the receiver asked to wait (Retry-After), if it did. */
  readonly retryAfterMs: number | null
}

/** The delay before the next attempt, or null when the schedule is used up. */
export const retryDelay = (input: RetryInput): number | null => {
  const scheduled = input.schedule[input.failedAttempt - 1]
  if (scheduled === undefined) return null
  const jittered = Math.round(scheduled * (1 + MAX_JITTER * Math.min(Math.max(input.random, 0), 1)))
  const honoursRetryAfter = input.responseStatus === 429 || input.responseStatus === 503
  if (!honoursRetryAfter || input.retryAfterMs === null) return jittered
  return Math.max(jittered, Math.min(input.retryAfterMs, 2 * scheduled))
}
