import { PlanLimitExceeded, UsageCounters } from "@intake/domain"
import { Effect, Either, Layer } from "effect"
import { MemoryDatabase } from "./database.js"

const usageKey = (workspaceId: string, period: string) => `${workspaceId}|${period}`

export const MemoryUsageCounters = Layer.effect(
  UsageCounters,
  Effect.map(MemoryDatabase, (db) =>
    UsageCounters.of({
      // Read and increment in one db.run: atomic against every other step and transaction.
      reserveSubmission: (workspaceId, period, max) =>
        Effect.flatMap(
          db.run((t, w): Either.Either<number, number> => {
            const current = t.submissionUsage.get(usageKey(workspaceId, period)) ?? 0
            if (current >= max) return Either.left(current)
            w.set(t.submissionUsage, usageKey(workspaceId, period), current + 1)
            return Either.right(current + 1)
          }),
          Either.match({
            onLeft: (current) =>
              Effect.fail(
                new PlanLimitExceeded({
                  message: `The monthly quota of ${max} submissions is used up.`,
                  resource: "submissions",
                  current,
                  max
                })
              ),
            onRight: Effect.succeed
          })
        ),
      submissionsUsed: (workspaceId, period) =>
        db.run((t) => t.submissionUsage.get(usageKey(workspaceId, period)) ?? 0)
    })
  )
)
