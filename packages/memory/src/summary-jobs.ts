/** The memory adapter of the summary job queue, and the in-process summary wake-up. */
import { SummaryJobRepository, SummaryWakeups } from "@intake/domain"
import { Effect, Layer, Option } from "effect"
import { MemoryDatabase, type Tables } from "./database.js"
import { signalSlot } from "./deliveries.js"

export const MemorySummaryJobRepository = Layer.effect(
  SummaryJobRepository,
  Effect.map(MemoryDatabase, (db) => {
    const held = (t: Tables, id: string, claimToken: string) => {
      const queued = t.summaryJobs.get(id)
      return queued !== undefined && queued.claimToken === claimToken ? queued : undefined
    }
    return SummaryJobRepository.of({
      enqueue: (job, dueAt) =>
        db.run((t, write) =>
          write.set(t.summaryJobs, job.submissionId, { job, dueAt, leaseUntil: null, claimToken: null })
        ),
      claimDue: (now, limit, leaseMs, claimToken) =>
        db.run((t, write) =>
          [...t.summaryJobs]
            .filter(([, q]) => q.dueAt <= now && (q.leaseUntil === null || q.leaseUntil <= now))
            .sort(([a, x], [b, y]) => x.dueAt - y.dueAt || (a < b ? -1 : a > b ? 1 : 0))
            .slice(0, limit)
            .map(([id, queued]) => {
              write.set(t.summaryJobs, id, { ...queued, leaseUntil: now + leaseMs, claimToken })
              return queued.job
            })
        ),
      finish: (id, claimToken) =>
        db.run((t, write) => {
          if (held(t, id, claimToken) === undefined) return false
          write.remove(t.summaryJobs, id)
          return true
        }),
      retryAt: (id, claimToken, dueAt) =>
        db.run((t, write) => {
          const queued = held(t, id, claimToken)
          if (queued === undefined) return false
          write.set(t.summaryJobs, id, {
            job: { ...queued.job, attempts: queued.job.attempts + 1, heldDeliveryIds: [] },
            dueAt,
            leaseUntil: null,
            claimToken: null
          })
          return true
        }),
      release: (ids, claimToken) =>
        db.run((t, write) => {
          for (const id of ids) {
            const queued = held(t, id, claimToken)
            if (queued !== undefined)
              write.set(t.summaryJobs, id, { ...queued, leaseUntil: null, claimToken: null })
          }
        }),
      nextDueAt: () =>
        db.run((t) => {
          let earliest: number | null = null
          for (const queued of t.summaryJobs.values()) {
            const at = Math.max(queued.dueAt, queued.leaseUntil ?? 0)
            if (earliest === null || at < earliest) earliest = at
          }
          return Option.fromNullable(earliest)
        })
    })
  })
)

/** In-process: the server that queued a job runs it; other processes find it at their next poll. */
export const MemorySummaryWakeups = Layer.effect(SummaryWakeups, signalSlot)

export const MemorySummaryPortsLive = Layer.merge(MemorySummaryJobRepository, MemorySummaryWakeups)
