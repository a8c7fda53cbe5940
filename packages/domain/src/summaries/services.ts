/**
 * The use cases of summaries: the model summary job, as services the adapters and the HTTP
 * layer call. Their layers live beside this file; the HTTP layer depends only on these
 * shapes.
 */
import { Context, type Effect, type Option } from "effect"
import type { SubmissionId } from "../shared/ids.js"
import type { EpochMillis, SummaryJob } from "../shared/models.js"
import type { Fails } from "../shared/stored.js"
import type { SummaryUnavailable } from "./ports.js"

// ---------------------------------------------------------------- model summaries

/**
 * What one run of a job came to; the runner logs the model's state changes from it. Declared
 * here, beside the service that answers it, so that summaries.ts (the layer) imports this
 * file and not the other way round.
 */
export type SummaryOutcome =
  | { readonly _tag: "Stored" }
  | { readonly _tag: "Failed"; readonly failure: SummaryUnavailable; readonly retryAt: number | null }
  /** The submission is gone, or another process took the job over. */
  | { readonly _tag: "Dropped" }

/** The summary job's use cases, for the runner of packages/delivery (see summaries.ts). */
export class SummaryJobs extends Context.Tag("@intake/SummaryJobs")<
  SummaryJobs,
  {
    readonly claimDue: (limit: number, claimToken: string) => Effect.Effect<ReadonlyArray<SummaryJob>, Fails>
    readonly release: (
      submissionIds: ReadonlyArray<SubmissionId>,
      claimToken: string
    ) => Effect.Effect<void, Fails>
    readonly nextDueAt: Effect.Effect<Option.Option<EpochMillis>, Fails>
    /** Asks the model for one claimed job and stores what comes of it. */
    readonly run: (job: SummaryJob, claimToken: string) => Effect.Effect<SummaryOutcome, Fails>
  }
>() {}
