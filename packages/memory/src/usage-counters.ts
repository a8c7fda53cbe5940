import { PlanLimitExceeded, UsageCounters } from "@intake/domain"
import { Effect, Either, Layer } from "effect"
import { MemoryDatabase, type Tables, type Writer } from "./database.js"

const usageKey = (workspaceId: string, period: string) => `${workspaceId}|${period}`

/**
 * Counts one submission unless `max` are counted: Right with the new count, or Left with
 * the current one. Call inside one db.run, which makes it atomic.
 */
export const reserveSubmissionIn = (
  t: Tables,
  write: Writer,
  workspaceId: string,
  period: string,
  max: number
): Either.Either<number, number> => {
  const current = t.submissionUsage.get(usageKey(workspaceId, period)) ?? 0
  if (current >= max) return Either.left(current)
  write.set(t.submissionUsage, usageKey(workspaceId, period), current + 1)
  return Either.right(current + 1)
}

/** The refusal of a submission past the quota. */
export const quotaUsedUp = (max: number, current: number) =>
  new PlanLimitExceeded({
    message: `The monthly quota of ${max} submissions is used up.`,
    resource: "submissions",
    current,
    max
  })

export const MemoryUsageCounters = Layer.effect(
  UsageCounters,
  Effect.map(MemoryDatabase, (db) =>
    UsageCounters.of({
      // Read and increment in one db.run: atomic against every other step and transaction.
      reserveSubmission: (workspaceId, period, max) =>
        Effect.flatMap(
          db.run((t, w) => reserveSubmissionIn(t, w, workspaceId, period, max)),
          Either.match({
            onLeft: (current) => Effect.fail(quotaUsedUp(max, current)),
            onRight: Effect.succeed
          })
        ),
      submissionsUsed: (workspaceId, period) =>
        db.run((t) => t.submissionUsage.get(usageKey(workspaceId, period)) ?? 0)
    })
  )
)
