/**
 * The exact sliding-window log (docs/rules.md, Limits and rate limits). A request admitted at `t` counts
 * until `t + windowMs` (exclusive), so no half-open span of `windowMs` ever holds more
 * than `limit` admitted requests. Refused requests are not recorded: a client that keeps
 * knocking does not lock itself out for longer.
 */
import type { EpochMillis } from "../shared/models.js"
import type { RateLimitDecision } from "./ports.js"

/** Whole seconds until `resetAt`, rounded up, at least 1 (for Retry-After). */
export const retryAfterSeconds = (resetAt: EpochMillis, now: EpochMillis): number =>
  Math.max(1, Math.ceil((resetAt - now) / 1000))

/**
 * One bucket's log, kept in place: a hit costs O(1) amortized however high the limit (a
 * log copied on every hit would, at 100,000 a minute, copy 100,000 timestamps a request).
 * Timestamps stay in time order, so expired ones leave from the front; a clock that steps
 * back inserts in order instead of appending.
 */
export class SlidingWindowLog {
  private times: Array<EpochMillis> = []
  private head = 0

  hit(now: EpochMillis, limit: number, windowMs: number): RateLimitDecision {
    return this.decide(now, limit, windowMs, true)
  }

  /** What `hit` would decide now, without recording anything; `remaining` counts the slots left. */
  peek(now: EpochMillis, limit: number, windowMs: number): RateLimitDecision {
    return this.decide(now, limit, windowMs, false)
  }

  private decide(now: EpochMillis, limit: number, windowMs: number, record: boolean): RateLimitDecision {
    const times = this.times
    while (this.head < times.length && times[this.head]! <= now - windowMs) this.head++
    // Drop the expired prefix once it is most of the array, so memory follows the live log.
    if (this.head > 32 && this.head * 2 > times.length) {
      this.times = times.slice(this.head)
      this.head = 0
    }
    const live = this.times.length - this.head
    const allowed = live < limit
    if (allowed && record) this.insert(now)
    const size = this.times.length - this.head
    const resetAt = (size === 0 ? now - windowMs : this.times[this.head]!) + windowMs
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - size),
      resetAt,
      retryAfterSeconds: allowed ? 0 : retryAfterSeconds(resetAt, now)
    }
  }

  /** Admitted requests still in the log (expired ones are dropped at the next hit). */
  get size(): number {
    return this.times.length - this.head
  }

  /** The latest admitted request, if any. */
  get newest(): EpochMillis | undefined {
    return this.size === 0 ? undefined : this.times[this.times.length - 1]
  }

  private insert(at: EpochMillis) {
    const times = this.times
    if (times.length === this.head || times[times.length - 1]! <= at) {
      times.push(at)
      return
    }
    let low = this.head
    let high = times.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (times[middle]! <= at) low = middle + 1
      else high = middle
    }
    times.splice(low, 0, at)
  }
}
