/**
 * The ports of submissions (docs/rules.md, Resources and states): intake bots, submissions
 * and their usage counters, contacts and the event outbox. The rules of every port
 * (failures, units of work) are in shared/ports.ts.
 */
import { Context, type Option } from "effect"
import type { PlanLimitExceeded } from "../shared/errors.js"
import type { IntakeBotId, SubmissionId, WorkspaceId } from "../shared/ids.js"
import type {
  Contact,
  CreatedRange,
  Delivery,
  DomainEvent,
  EpochMillis,
  IntakeBot,
  IntakeBotListItem,
  Message,
  Page,
  PageRequest,
  Submission,
  SubmissionDetail,
  SubmissionListItem,
  WebhookEndpoint,
  Workspace
} from "../shared/models.js"
import type { Stored } from "../shared/stored.js"

export class IntakeBotRepository extends Context.Tag("@intake/IntakeBotRepository")<
  IntakeBotRepository,
  {
    readonly insert: (bot: IntakeBot) => Stored<void>
    readonly update: (bot: IntakeBot) => Stored<void>
    /** Any workspace's bot: for the operator interface only. */
    readonly findById: (id: IntakeBotId) => Stored<Option.Option<IntakeBot>>
    readonly findInWorkspace: (workspaceId: WorkspaceId, id: IntakeBotId) => Stored<Option.Option<IntakeBot>>
    /**
     * What taking a submission for the bot needs, in one read: the bot, its workspace and
     * the workspace's webhook endpoints (oldest first), ACTIVE ones apart from paused and
     * disabled ones. In `workspaceId` only, unless
     * null (the operator interface); none when the bot or its workspace does not exist.
     */
    readonly findIntakeTarget: (
      id: IntakeBotId,
      workspaceId: WorkspaceId | null
    ) => Stored<Option.Option<IntakeTarget>>
    readonly list: (workspaceId: WorkspaceId, page: PageRequest) => Stored<Page<IntakeBotListItem>>
    /** Which of `ids` are bots of the workspace. */
    readonly existingIds: (
      workspaceId: WorkspaceId,
      ids: ReadonlyArray<IntakeBotId>
    ) => Stored<ReadonlyArray<IntakeBotId>>
    readonly slugExists: (slug: string) => Stored<boolean>
  }
>() {}

/** A bot with what a submission for it needs (see IntakeBotRepository.findIntakeTarget). */
export interface IntakeTarget {
  readonly bot: IntakeBot
  readonly workspace: Workspace
  readonly activeEndpoints: ReadonlyArray<WebhookEndpoint>
  /** Paused and disabled endpoints: an event they take is recorded as a `skipped` attempt. */
  readonly inactiveEndpoints: ReadonlyArray<WebhookEndpoint>
}

/** A monthly submission quota: at most `max` submissions counted for `period` ("2026-11"). */
export interface SubmissionQuota {
  readonly period: string
  readonly max: number
}

export class SubmissionRepository extends Context.Tag("@intake/SubmissionRepository")<
  SubmissionRepository,
  {
    readonly insert: (submission: Submission, messages: ReadonlyArray<Message>) => Stored<void>
    /**
     * Counts the submission against its workspace's quota (the usage counter of
     * UsageCounters) and inserts it with its messages, unless the count already reached
     * `quota.max`: then it fails with plan_limit_exceeded (resource "submissions") and
     * writes nothing. Exact under concurrent calls, as UsageCounters.reserveSubmission.
     */
    readonly insertWithinQuota: (
      submission: Submission,
      messages: ReadonlyArray<Message>,
      quota: SubmissionQuota
    ) => Stored<void, PlanLimitExceeded>
    /** Any workspace's submission: for the operator interface only. */
    readonly findById: (id: SubmissionId) => Stored<Option.Option<Submission>>
    readonly findInBot: (
      workspaceId: WorkspaceId,
      intakeBotId: IntakeBotId,
      id: SubmissionId
    ) => Stored<Option.Option<SubmissionDetail>>
    readonly list: (
      workspaceId: WorkspaceId,
      intakeBotId: IntakeBotId,
      page: PageRequest,
      range: CreatedRange
    ) => Stored<Page<SubmissionListItem>>
    /** Deletes the submission and its messages; true when it existed. */
    readonly delete: (id: SubmissionId) => Stored<boolean>
    /** Replaces its ai_summary and sets updated_at to `at`; false when the submission is gone. */
    readonly replaceSummary: (id: SubmissionId, summary: string, at: EpochMillis) => Stored<boolean>
  }
>() {}

/** Monthly usage counters, e.g. submissions per workspace per UTC calendar month. */
export class UsageCounters extends Context.Tag("@intake/UsageCounters")<
  UsageCounters,
  {
    /**
     * Adds one to the workspace's counter for `period` ("2026-11") unless it already
     * reached `max`; answers the new count. Never lets the count pass `max`, also under
     * concurrent calls; fails with plan_limit_exceeded (resource "submissions") instead.
     */
    readonly reserveSubmission: (
      workspaceId: WorkspaceId,
      period: string,
      max: number
    ) => Stored<number, PlanLimitExceeded>
    readonly submissionsUsed: (workspaceId: WorkspaceId, period: string) => Stored<number>
  }
>() {}

export class ContactRepository extends Context.Tag("@intake/ContactRepository")<
  ContactRepository,
  {
    /**
     * The contact a COMPLETED submission names, recorded with the submission's events: finds
     * the workspace's contact with the candidate's email (case-insensitive) or inserts the
     * candidate, then appends `events` and their attempts as EventOutbox.append does, each
     * event naming the contact found (its contactId becomes that contact's id). A
     * contact.created event, and its attempts, is appended only when the candidate was
     * inserted: of concurrent calls for one email, one inserts. Answers nothing, so that a
     * store may send it with the unit of work's next statement (PostgreSQL:
     * docs/performance.md, "Round trips of a create").
     */
    readonly findOrCreateWithEvents: (
      candidate: Contact,
      events: ReadonlyArray<DomainEvent>,
      queued?: QueuedDeliveries
    ) => Stored<void>
    readonly findById: (workspaceId: WorkspaceId, id: string) => Stored<Option.Option<Contact>>
  }
>() {}

/**
 * Delivery attempts to store with the events they deliver: pending ones queued, due at
 * `dueAt`; any other (a `skipped` attempt) stored as finished, never queued.
 */
export interface QueuedDeliveries {
  readonly deliveries: ReadonlyArray<Delivery>
  readonly dueAt: EpochMillis
}

/**
 * The transactional outbox: events are appended in the same unit of work as their data,
 * with the delivery attempts queued for them (as DeliveryRepository.enqueue stores them).
 */
export class EventOutbox extends Context.Tag("@intake/EventOutbox")<
  EventOutbox,
  {
    readonly append: (events: ReadonlyArray<DomainEvent>, queued?: QueuedDeliveries) => Stored<void>
    readonly findById: (id: string) => Stored<Option.Option<DomainEvent>>
  }
>() {}
