/**
 * The summary runner: claims due summary jobs and runs them (SummaryJobs.run asks the
 * model and stores what comes of it), at most `concurrency` at a time, and one at a time
 * while the model is failing, so a model that is down or rate limiting is probed rather
 * than flooded. It logs the model's state once per change (failing, answering again),
 * not once per submission. Any number of servers and workers may run one: claims are
 * leased, and a stopping runner gives back the jobs it holds.
 */
import { type SummaryJob, SummaryJobs, type SummaryOutcome, SummaryWakeups } from "@intake/domain"
import { Effect } from "effect"
import { claimLoop } from "./claim-loop.js"

export interface SummaryRunnerOptions {
  /** Model calls in flight at once while the model answers. */
  readonly concurrency: number
  /** Longest sleep between two looks at the queue (jobs other processes queued, retries). */
  readonly pollIntervalMs: number
  /** Identifies this runner's claims; unique per runner. */
  readonly claimToken: string
}

export const runSummaryJobs = (options: SummaryRunnerOptions) =>
  Effect.gen(function* () {
    const jobs = yield* SummaryJobs
    const wakeups = yield* SummaryWakeups

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
      // Started uninterruptibly by the loop, so uninterruptible but for the model call itself
      // (SummaryJobs.run): a stopping runner cuts the call short, never a write.
      jobs.run(job, options.claimToken).pipe(
        Effect.flatMap(noteModel),
        Effect.tapErrorCause((cause) =>
          Effect.logWarning(`summary of ${job.submissionId}: not recorded; its lease will return it`, cause)
        ),
        // Stopping mid-call: the job goes back at once, for this or another process.
        Effect.onInterrupt(() => Effect.ignore(jobs.release([job.submissionId], options.claimToken)))
      )

    return yield* claimLoop({
      claims: "summary jobs",
      // One at a time while the model fails: a model that is down is probed, not flooded.
      slots: () => (modelFailing ? 1 : options.concurrency),
      // Whatever it claimed, a freed slot is worth another look (jobs are few and long).
      claim: (free) =>
        Effect.map(jobs.claimDue(free, options.claimToken), (items) => ({ items, more: items.length > 0 })),
      run: runOne,
      nextDueAt: jobs.nextDueAt,
      wakeup: wakeups.next,
      pollIntervalMs: options.pollIntervalMs
    })
  }).pipe(Effect.scoped)
