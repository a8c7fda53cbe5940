/**
 * The exact sliding-window log (decisions.md section 5). A request admitted at `t` counts
 * until `t + windowMs` (exclusive), so no half-open span of `windowMs` ever holds more
 * than `limit` admitted requests. Refused requests are not recorded: a client that keeps
 * knocking does not lock itself out for longer.
 */
import type { EpochMillis } from "../models.js"
import type { RateLimitDecision } from "../ports.js"

export interface WindowOutcome {
  readonly decision: RateLimitDecision
  /** The bucket's admitted timestamps afterwards: expired ones dropped, this one appended if admitted. */
  readonly admitted: ReadonlyArray<EpochMillis>
}

/** Whole seconds until `resetAt`, rounded up, at least 1 (for Retry-After). */
export const retryAfterSeconds = (resetAt: EpochMillis, now: EpochMillis): number =>
  Math.max(1, Math.ceil((resetAt - now) / 1000))

export const slideWindow = (
  admitted: ReadonlyArray<EpochMillis>,
  now: EpochMillis,
  limit: number,
  windowMs: number
): WindowOutcome => {
  const live = admitted.filter((at) => at > now - windowMs)
  const allowed = live.length < limit
  const after = allowed ? [...live, now] : live
  // The log is appended in time order, but a clock that steps back must not break the reset.
  let oldest = after.length === 0 ? now - windowMs : after[0]!
  for (const at of after) if (at < oldest) oldest = at
  const resetAt = oldest + windowMs
  return {
    decision: {
      allowed,
      limit,
      remaining: Math.max(0, limit - after.length),
      resetAt,
      retryAfterSeconds: allowed ? 0 : retryAfterSeconds(resetAt, now)
    },
    admitted: after
  }
}
