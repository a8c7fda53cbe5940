/**
 * The ports of summaries (docs/summaries.md): the summarizer, the summary job queue and
 * its wake-ups. The rules of every port (failures, units of work) are in shared/ports.ts.
 */
import { Context, Data, type Effect, type Option } from "effect"
import type { SubmissionId } from "../shared/ids.js"
import type { EpochMillis, IntakeBot, MessageRole, SummaryJob } from "../shared/models.js"
import type { Stored } from "../shared/stored.js"

/** Everything a summary is made of: the bot's name and field labels, the data, the status, the conversation. */
export interface SummaryInput {
  readonly bot: Pick<IntakeBot, "name" | "schema">
  readonly data: Readonly<Record<string, unknown>>
  readonly status: string
  /** The conversation, oldest first (empty for a form filled in at once). */
  readonly messages: ReadonlyArray<{ readonly role: MessageRole; readonly content: string }>
}

/**
 * Why a summarizer gave no summary. Only a category (and the HTTP status, when there was
 * one) travels: never the model's or its server's own words, which may echo the request.
 */
export class SummaryUnavailable extends Data.TaggedError("SummaryUnavailable")<{
  readonly reason:
    | "timeout"
    | "unreachable"
    | "rate_limited"
    | "rejected"
    | "server_error"
    | "malformed"
    | "empty"
  readonly status: number | null
}> {}

export class Summarizer extends Context.Tag("@intake/Summarizer")<
  Summarizer,
  {
    /**
     * "built-in": deterministic and immediate, stored with the submission. "model": asked
     * by the summary job after the submission is stored, never on the request path.
     */
    readonly kind: "built-in" | "model"
    /** A summary as the summarizer wrote it; the caller sanitizes it (model-summary.ts). */
    readonly summarize: (input: SummaryInput) => Effect.Effect<string, SummaryUnavailable>
  }
>() {}

/**
 * The queue of submissions waiting for the model's summary, leased like delivery attempts:
 * a job claimed by a process that dies returns when its lease ends.
 */
export class SummaryJobRepository extends Context.Tag("@intake/SummaryJobRepository")<
  SummaryJobRepository,
  {
    /** Queues the job, due at `dueAt`; inside the unit of work that stores its submission. */
    readonly enqueue: (job: SummaryJob, dueAt: EpochMillis) => Stored<void>
    /** Leases up to `limit` due jobs (not leased, or whose lease ended), earliest due first. */
    readonly claimDue: (
      now: EpochMillis,
      limit: number,
      leaseMs: number,
      claimToken: string
    ) => Stored<ReadonlyArray<SummaryJob>>
    /** Removes a claimed job (done, or given up); false when the claim is no longer `claimToken`'s. */
    readonly finish: (submissionId: SubmissionId, claimToken: string) => Stored<boolean>
    /**
     * Makes a claimed job due again at `dueAt` with one more attempt counted and no
     * deliveries held any more; false when the claim is no longer `claimToken`'s.
     */
    readonly retryAt: (submissionId: SubmissionId, claimToken: string, dueAt: EpochMillis) => Stored<boolean>
    /** Gives claimed jobs back, due at once (a process stopping). */
    readonly release: (submissionIds: ReadonlyArray<SubmissionId>, claimToken: string) => Stored<void>
    /** When the earliest job is due (leased ones at their lease's end), if any. */
    readonly nextDueAt: () => Stored<Option.Option<EpochMillis>>
  }
>() {}

/** Wakes this process's summary runner when a job was queued. Best effort, like DeliveryWakeups. */
export class SummaryWakeups extends Context.Tag("@intake/SummaryWakeups")<
  SummaryWakeups,
  {
    readonly notify: Effect.Effect<void>
    readonly next: Effect.Effect<void>
  }
>() {}
