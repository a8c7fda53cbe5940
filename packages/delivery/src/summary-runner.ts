/**
 * The summary runner: claims due summary jobs and runs them (SummaryJobs.run asks the
 * model and stores what comes of it), at most `concurrency` at a time, and one at a time
 * while the model is failing, so a model that is down or rate limiting is probed rather
 * than flooded. It logs the model's state once per change (failing, answering again),
 * not once per submission. Any number of servers and workers may run one: claims are
 * leased, and a stopping runner gives back the jobs it holds.
 */
import { type SummaryJob, SummaryJobs, type SummaryOutcome, SummaryWakeups } from "@intake/domain"
import { type Cause, Clock, Duration, Effect, FiberSet, Option, Queue, Ref } from "effect"

export interface SummaryRunnerOptions {
  /** Model calls in flight at once while the model answers. */
  readonly concurrency: number
  /** Longest sleep between two looks at the queue (jobs other processes queued, retries). */
  readonly pollIntervalMs: number
  /** Identifies this runner's claims; unique per runner. */
  readonly claimToken: string
}

const MIN_SLEEP_MS = 5

export const runSummaryJobs = (options: SummaryRunnerOptions) =>
  Effect.gen(function* () {
    const jobs = yield* SummaryJobs
    const wakeups = yield* SummaryWakeups
    const fibers = yield* FiberSet.make<void>()
    const inFlight = yield* Ref.make(0)
    const slotFreed = yield* Queue.sliding<void>(1)

    let modelFailing = false
    const noteModel = (outcome: SummaryOutcome) => {
      if (outcome._tag === "Stored" && modelFailing) {
        modelFailing = false
        return Effect.logInfo("model summarizer answering again; summaries come from the model")
      }
      if (outcome._tag === "Failed" && !modelFailing) {
        modelFailing = true
        return Effect.logWarning({
          message: "model summarizer failing; submissions keep the built-in summary until it answers",
          reason: outcome.failure.reason,
          status: outcome.failure.status
        })
      }
      return Effect.void
    }

    const runOne = (job: SummaryJob) =>
      // Forked from the uninterruptible `fill`, so uninterruptible but for the model call itself
      // (SummaryJobs.run): a stopping runner cuts the call short, never a write.
      jobs.run(job, options.claimToken).pipe(
        Effect.flatMap(noteModel),
        Effect.tapErrorCause((cause) =>
          Effect.logWarning(`summary of ${job.submissionId}: not recorded; its lease will return it`, cause)
        ),
        Effect.ignore,
        // Stopping mid-call: the job goes back at once, for this or another process.
        Effect.onInterrupt(() => Effect.ignore(jobs.release([job.submissionId], options.claimToken))),
        Effect.ensuring(
          Effect.zipRight(
            Ref.update(inFlight, (n) => n - 1),
            Queue.offer(slotFreed, undefined)
          )
        )
      )

    let claimFailing = false
    const claimOutcome = (failed: boolean, cause?: Cause.Cause<unknown>) => {
      if (failed === claimFailing) return Effect.void
      claimFailing = failed
      return failed
        ? Effect.logWarning(
            "could not claim summary jobs; retrying at each poll, quietly until it works",
            cause
          )
        : Effect.logInfo("claiming summary jobs again")
    }

    /** Claims and starts as many as there are free slots; answers whether every slot was filled. */
    const fill = Effect.uninterruptible(
      Effect.gen(function* () {
        const free = (modelFailing ? 1 : options.concurrency) - (yield* Ref.get(inFlight))
        // No free slot: wait for one, rather than look at the queue at every new submission.
        if (free <= 0) return true
        const claimed = yield* jobs.claimDue(free, options.claimToken).pipe(
          Effect.tap(() => claimOutcome(false)),
          Effect.tapErrorCause((cause) => claimOutcome(true, cause)),
          Effect.orElseSucceed((): ReadonlyArray<SummaryJob> => [])
        )
        yield* Ref.update(inFlight, (n) => n + claimed.length)
        for (const job of claimed) yield* FiberSet.run(fibers, runOne(job))
        return claimed.length === free
      })
    )

    const sleepMs = Effect.gen(function* () {
      const next = yield* Effect.orElseSucceed(jobs.nextDueAt, () => Option.none<number>())
      if (Option.isNone(next)) return options.pollIntervalMs
      const now = yield* Clock.currentTimeMillis
      return Math.min(options.pollIntervalMs, Math.max(MIN_SLEEP_MS, next.value - now))
    })

    yield* Effect.forever(
      Effect.gen(function* () {
        const full = yield* fill
        if (full)
          yield* Effect.race(Queue.take(slotFreed), Effect.sleep(Duration.millis(options.pollIntervalMs)))
        else {
          const ms = yield* sleepMs
          yield* Effect.race(
            Effect.race(wakeups.next, Queue.take(slotFreed)),
            Effect.sleep(Duration.millis(ms))
          )
        }
      })
    )
  }).pipe(Effect.scoped)
