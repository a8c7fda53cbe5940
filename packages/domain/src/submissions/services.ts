/**
 * The use cases of submissions: intake bots and their submissions, as services the
 * adapters and the HTTP layer call. Their layers live beside this file; the HTTP layer
 * depends only on these shapes.
 */
import { Context, type Effect } from "effect"
import type { Conflict, PlanLimitExceeded, ResourceNotFound, ValidationFailed } from "../shared/errors.js"
import type { IntakeBotId, SubmissionId, WorkspaceId } from "../shared/ids.js"
import type { Listed, ListQuery } from "../shared/lists.js"
import type {
  BotStatus,
  EpochMillis,
  IntakeBot,
  IntakeBotListItem,
  MessageRole,
  SchemaField,
  SubmissionDetail,
  SubmissionListItem
} from "../shared/models.js"
import type { Fails } from "../shared/stored.js"

// ---------------------------------------------------------------- intake bots

export interface NewIntakeBot {
  readonly name: string
  readonly description?: string
  readonly status?: BotStatus
  readonly schema: ReadonlyArray<SchemaField>
}

export interface IntakeBotChanges {
  readonly name?: string
  readonly description?: string
  readonly status?: BotStatus
  /** A new schema; schema_version grows by one when it differs from the current one. */
  readonly schema?: ReadonlyArray<SchemaField>
}

export class IntakeBots extends Context.Tag("@intake/IntakeBots")<
  IntakeBots,
  {
    readonly list: (
      workspaceId: WorkspaceId,
      query: ListQuery
    ) => Effect.Effect<Listed<IntakeBotListItem>, Fails<ValidationFailed>>
    readonly get: (
      workspaceId: WorkspaceId,
      id: IntakeBotId
    ) => Effect.Effect<IntakeBot, Fails<ResourceNotFound>>
    /** Operator interface. */
    readonly create: (
      workspaceId: WorkspaceId,
      input: NewIntakeBot
    ) => Effect.Effect<IntakeBot, Fails<ResourceNotFound | ValidationFailed>>
    /** Operator interface. */
    readonly update: (
      id: IntakeBotId,
      changes: IntakeBotChanges
    ) => Effect.Effect<IntakeBot, Fails<ResourceNotFound | ValidationFailed>>
  }
>() {}

// ---------------------------------------------------------------- submissions

export interface SubmissionQuery extends ListQuery {
  readonly createdAfter: EpochMillis | null
  readonly createdBefore: EpochMillis | null
}

export interface NewSubmission {
  /** Field values as the client sent them; validated against the bot's schema. */
  readonly data: Readonly<Record<string, unknown>>
  /** IN_PROGRESS or COMPLETED; omitted means COMPLETED. */
  readonly status?: "IN_PROGRESS" | "COMPLETED"
  readonly isTest?: boolean
  /** Only the operator interface (the conversational collector) passes messages. */
  readonly messages?: ReadonlyArray<{ readonly role: MessageRole; readonly content: string }>
  /** The request's id, kept on the events it raises (docs/operations.md, Request ids). */
  readonly requestId?: string
  /** The traceparent of the request's span when traces are on, kept on its events too (docs/operations.md, Traces). */
  readonly traceParent?: string
}

/** A stored submission, and the id of the submission.completed event it raised, if it did. */
export interface CreatedSubmission extends SubmissionDetail {
  readonly completedEventId: string | null
}

export class Submissions extends Context.Tag("@intake/Submissions")<
  Submissions,
  {
    readonly list: (
      workspaceId: WorkspaceId,
      intakeBotId: IntakeBotId,
      query: SubmissionQuery
    ) => Effect.Effect<
      { readonly submissions: Listed<SubmissionListItem>; readonly schema: ReadonlyArray<SchemaField> },
      Fails<ResourceNotFound | ValidationFailed>
    >
    readonly get: (
      workspaceId: WorkspaceId,
      intakeBotId: IntakeBotId,
      id: SubmissionId
    ) => Effect.Effect<SubmissionDetail, Fails<ResourceNotFound>>
    /**
     * Validates, reserves the monthly quota, stores the submission with its messages,
     * finds or creates the contact and appends the events, all in one unit of work.
     */
    readonly create: (
      workspaceId: WorkspaceId,
      intakeBotId: IntakeBotId,
      input: NewSubmission
    ) => Effect.Effect<
      CreatedSubmission,
      Fails<ResourceNotFound | ValidationFailed | Conflict | PlanLimitExceeded>
    >
    /** Operator interface: any workspace's bot. */
    readonly createForBot: (
      intakeBotId: IntakeBotId,
      input: NewSubmission
    ) => Effect.Effect<
      SubmissionDetail,
      Fails<ResourceNotFound | ValidationFailed | Conflict | PlanLimitExceeded>
    >
    /** Operator interface. */
    readonly remove: (id: SubmissionId) => Effect.Effect<void, Fails<ResourceNotFound>>
  }
>() {}
