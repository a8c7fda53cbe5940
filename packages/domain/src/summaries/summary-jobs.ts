/**
 * The model summary job (docs/summaries.md). A submission is stored with the
 * built-in summary; when a model summarizer is configured, a job queued in the same unit
 * of work asks it later, outside any transaction and off the request path, with a time
 * limit and a bounded number of calls, and replaces ai_summary with the sanitized answer.
 * The submission's submission.completed attempts are held until the first call ends
 * (answered or not), and never longer than the wait of SummarySettings.
 */
import { Clock, Data, Duration, Effect, Either, Layer, Option } from "effect"
import type { StorageUnavailable } from "../shared/errors.js"
import type { SummaryJob } from "../shared/models.js"
import { UnitOfWork } from "../shared/ports.js"
import { IntakeBotRepository, SubmissionRepository } from "../submissions/ports.js"
import { DeliveryRepository, DeliveryWakeups } from "../webhooks/ports.js"
import { sanitizeModelSummary } from "./model-summary.js"
import { Summarizer, SummaryJobRepository, SummaryUnavailable } from "./ports.js"
import { SummaryJobs } from "./services.js"
import { SummarySettings } from "./summary-settings.js"

class LostClaim extends Data.TaggedError("LostClaim") {}

export const SummaryJobsLive = Layer.effect(
  SummaryJobs,
  Effect.gen(function* () {
    const jobs = yield* SummaryJobRepository
    const submissions = yield* SubmissionRepository
    const bots = yield* IntakeBotRepository
    const deliveries = yield* DeliveryRepository
    const wakeups = yield* DeliveryWakeups
    const summarizer = yield* Summarizer
    const uow = yield* UnitOfWork
    const settings = yield* SummarySettings

    /**
     * The model's answer, sanitized; a timeout or an answer with nothing left is a failure.
     * The call may be interrupted (its time limit, a process stopping) even where the rest
     * of the job runs uninterruptibly, so that no write is ever cut in the middle.
     */
    const ask = (input: Parameters<typeof summarizer.summarize>[0]) =>
      Effect.interruptible(summarizer.summarize(input)).pipe(
        Effect.timeoutFail({
          duration: Duration.millis(settings.timeoutMs),
          onTimeout: () => new SummaryUnavailable({ reason: "timeout", status: null })
        }),
        Effect.flatMap((answer) => {
          const summary = sanitizeModelSummary(answer)
          return summary === null
            ? Effect.fail(new SummaryUnavailable({ reason: "empty", status: null }))
            : Effect.succeed(summary)
        })
      )

    /** Commits `writes` with the job's end and lets its held attempts go now. */
    const settle = (
      job: SummaryJob,
      end: Effect.Effect<boolean, StorageUnavailable>,
      writes: Effect.Effect<unknown, StorageUnavailable> = Effect.void
    ) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const kept = yield* uow
          .transaction(
            Effect.gen(function* () {
              yield* writes
              if (!(yield* end)) return yield* new LostClaim()
              yield* deliveries.advance(job.heldDeliveryIds, now)
              return true
            })
          )
          .pipe(Effect.catchTag("LostClaim", () => Effect.succeed(false)))
        if (kept && job.heldDeliveryIds.length > 0) yield* wakeups.notify
        return kept
      })

    const run = (job: SummaryJob, claimToken: string) =>
      Effect.gen(function* () {
        const finish = jobs.finish(job.submissionId, claimToken)
        const submission = yield* submissions.findInBot(job.workspaceId, job.intakeBotId, job.submissionId)
        const bot = yield* bots.findById(job.intakeBotId)
        if (Option.isNone(submission) || Option.isNone(bot)) {
          yield* settle(job, finish)
          return { _tag: "Dropped" } as const
        }
        const answer = yield* Effect.either(
          ask({
            bot: bot.value,
            data: submission.value.data,
            status: submission.value.status,
            messages: submission.value.messages
          })
        )
        const now = yield* Clock.currentTimeMillis
        if (Either.isRight(answer)) {
          const stored = yield* settle(
            job,
            finish,
            submissions.replaceSummary(job.submissionId, answer.right, now)
          )
          return stored ? ({ _tag: "Stored" } as const) : ({ _tag: "Dropped" } as const)
        }
        const delay = settings.retryDelaysMs[job.attempts]
        const retryAt = delay === undefined ? null : now + delay
        const kept = yield* settle(
          job,
          retryAt === null ? finish : jobs.retryAt(job.submissionId, claimToken, retryAt)
        )
        return kept
          ? ({ _tag: "Failed", failure: answer.left, retryAt } as const)
          : ({ _tag: "Dropped" } as const)
      })

    return SummaryJobs.of({
      claimDue: (limit, claimToken) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          jobs.claimDue(now, limit, settings.leaseMs, claimToken)
        ),
      release: (ids, claimToken) => (ids.length === 0 ? Effect.void : jobs.release(ids, claimToken)),
      nextDueAt: jobs.nextDueAt(),
      run
    })
  })
)
