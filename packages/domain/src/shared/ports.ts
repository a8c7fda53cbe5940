/**
 * Ports: what the domain needs from the outside, one explicit shape each. Every method
 * fails with a domain error or with StorageUnavailable, nothing else.
 *
 * Transactions: `UnitOfWork.transaction` runs an effect so that every repository call
 * made inside it commits together or not at all, serialized against other transactions
 * where the rule needs it (quota, key caps, idempotency). Repository calls made outside
 * a transaction are atomic one by one. A transaction run inside another is part of it
 * (no savepoint): when it fails, the enclosing one must fail too, never go on.
 */
import { Context, Data, type Effect, type Option, type Scope } from "effect"
import type { IdempotencyConflict, PlanLimitExceeded, StorageUnavailable } from "./errors.js"
import type {
  ApiKey,
  Contact,
  CreatedRange,
  Delivery,
  DeliveryFilter,
  DomainEvent,
  EpochMillis,
  IdPrefix,
  IntakeBot,
  IntakeBotListItem,
  ListPosition,
  Message,
  MessageRole,
  OccurrenceWindow,
  Page,
  PageRequest,
  RecoverableEvent,
  Submission,
  SubmissionDetail,
  SubmissionListItem,
  SummaryJob,
  WebhookEndpoint,
  Workspace
} from "./models.js"
import type { IsolationPolicy } from "../webhooks/delivery-isolation.js"

type Stored<A, E = never> = Effect.Effect<A, E | StorageUnavailable>

// ---------------------------------------------------------------- platform

/** Cryptographic primitives. Synchronous: they are cheap and have no failure mode. */
export class Crypto extends Context.Tag("@intake/Crypto")<
  Crypto,
  {
    readonly sha256Hex: (input: string) => string
    readonly hmacSha256: (key: Uint8Array, message: string) => Uint8Array
    readonly randomBytes: (size: number) => Uint8Array
    /** Constant-time equality of two strings (false when the lengths differ). */
    readonly constantTimeEqual: (a: string, b: string) => boolean
  }
>() {}

/** Identifier source: prefixed, time-sortable, unique (`sub_01J…`). */
export class Ids extends Context.Tag("@intake/Ids")<
  Ids,
  {
    readonly next: (prefix: IdPrefix) => Effect.Effect<string>
    /**
     * An id for a time the caller has read from the Clock already: the ids of one
     * operation (a create's submission, events and attempts) from one read, without a step
     * of the fiber per id.
     */
    readonly at: (prefix: IdPrefix, millis: number) => string
  }
>() {}

export class UnitOfWork extends Context.Tag("@intake/UnitOfWork")<
  UnitOfWork,
  {
    readonly transaction: <A, E, R>(
      self: Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | StorageUnavailable, R>
    /**
     * Runs `step` as the last step of the unit of work it runs in: nothing runs in that unit
     * after it. A storage may commit the unit with the step's final statement, in the same
     * round trip (PostgreSQL: docs/performance.md, "Round trips of a create"); in a nested unit
     * of work, or outside one, the step runs as it is.
     */
    readonly commitWith: <A, E, R>(step: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  }
>() {}

// ---------------------------------------------------------------- repositories

export class WorkspaceRepository extends Context.Tag("@intake/WorkspaceRepository")<
  WorkspaceRepository,
  {
    readonly insert: (workspace: Workspace) => Stored<void>
    readonly update: (workspace: Workspace) => Stored<void>
    readonly findById: (id: string) => Stored<Option.Option<Workspace>>
  }
>() {}

export class ApiKeyRepository extends Context.Tag("@intake/ApiKeyRepository")<
  ApiKeyRepository,
  {
    /**
     * Inserts the key unless the workspace already has `max` usable keys (not revoked,
     * not expired at `now`); atomic with respect to concurrent inserts.
     */
    readonly insertWithinCap: (key: ApiKey, max: number, now: EpochMillis) => Stored<void, PlanLimitExceeded>
    readonly findByHash: (keyHash: string) => Stored<Option.Option<ApiKey>>
    readonly findById: (id: string) => Stored<Option.Option<ApiKey>>
    /** Sets revoked_at unless already set; answers the key as stored afterwards. */
    readonly revoke: (id: string, at: EpochMillis) => Stored<Option.Option<ApiKey>>
    /** Writes last_used_at = at only when it is null or at most `at - minIntervalMs`; true when written. */
    readonly touchLastUsed: (id: string, at: EpochMillis, minIntervalMs: number) => Stored<boolean>
  }
>() {}

export class IntakeBotRepository extends Context.Tag("@intake/IntakeBotRepository")<
  IntakeBotRepository,
  {
    readonly insert: (bot: IntakeBot) => Stored<void>
    readonly update: (bot: IntakeBot) => Stored<void>
    /** Any workspace's bot: for the operator interface only. */
    readonly findById: (id: string) => Stored<Option.Option<IntakeBot>>
    readonly findInWorkspace: (workspaceId: string, id: string) => Stored<Option.Option<IntakeBot>>
    /**
     * What taking a submission for the bot needs, in one read: the bot, its workspace and
     * the workspace's webhook endpoints (oldest first), ACTIVE ones apart from paused and
     * disabled ones. In `workspaceId` only, unless
     * null (the operator interface); none when the bot or its workspace does not exist.
     */
    readonly findIntakeTarget: (id: string, workspaceId: string | null) => Stored<Option.Option<IntakeTarget>>
    readonly list: (workspaceId: string, page: PageRequest) => Stored<Page<IntakeBotListItem>>
    /** Which of `ids` are bots of the workspace. */
    readonly existingIds: (workspaceId: string, ids: ReadonlyArray<string>) => Stored<ReadonlyArray<string>>
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
    readonly findById: (id: string) => Stored<Option.Option<Submission>>
    readonly findInBot: (
      workspaceId: string,
      intakeBotId: string,
      id: string
    ) => Stored<Option.Option<SubmissionDetail>>
    readonly list: (
      workspaceId: string,
      intakeBotId: string,
      page: PageRequest,
      range: CreatedRange
    ) => Stored<Page<SubmissionListItem>>
    /** Deletes the submission and its messages; true when it existed. */
    readonly delete: (id: string) => Stored<boolean>
    /** Replaces its ai_summary and sets updated_at to `at`; false when the submission is gone. */
    readonly replaceSummary: (id: string, summary: string, at: EpochMillis) => Stored<boolean>
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
      workspaceId: string,
      period: string,
      max: number
    ) => Stored<number, PlanLimitExceeded>
    readonly submissionsUsed: (workspaceId: string, period: string) => Stored<number>
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
    readonly findById: (workspaceId: string, id: string) => Stored<Option.Option<Contact>>
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

export class WebhookRepository extends Context.Tag("@intake/WebhookRepository")<
  WebhookRepository,
  {
    /** Inserts unless the workspace already has `max` endpoints; atomic under concurrency. */
    readonly insertWithinCap: (endpoint: WebhookEndpoint, max: number) => Stored<void, PlanLimitExceeded>
    /** Writes the endpoint's fields except its secrets, which only `rotateSecret` changes. */
    readonly update: (endpoint: WebhookEndpoint) => Stored<void>
    /**
     * Makes `secret` the endpoint's secret in one atomic write: the current one becomes the
     * previous secret until `previousExpiresAt` (an older previous one is dropped), or is
     * dropped at once when `previousExpiresAt` is null. Answers the endpoint as stored
     * afterwards; none when it is not the workspace's.
     */
    readonly rotateSecret: (
      workspaceId: string,
      id: string,
      secret: string,
      previousExpiresAt: EpochMillis | null,
      now: EpochMillis
    ) => Stored<Option.Option<WebhookEndpoint>>
    readonly findInWorkspace: (workspaceId: string, id: string) => Stored<Option.Option<WebhookEndpoint>>
    readonly list: (workspaceId: string, page: PageRequest) => Stored<Page<WebhookEndpoint>>
    readonly delete: (workspaceId: string, id: string) => Stored<boolean>
  }
>() {}

// ---------------------------------------------------------------- idempotency

export interface IdempotencyScope {
  readonly apiKeyId: string
  readonly key: string
}

/**
 * `IdempotencyStore.complete` found an unexpired record it may not replace: another unit of
 * work stored one after this one's claim read. Never an answer: the unit of work is rolled
 * back and the key claimed again (usecases/idempotency.ts).
 */
export class IdempotencyRecordExists extends Data.TaggedError("IdempotencyRecordExists") {}

/**
 * `IdempotencyStore.claimFresh` found the scope held by another unit of work or a record
 * stored for it. Never an answer: the unit of work is rolled back and `claim` tells which
 * (usecases/idempotency.ts).
 */
export class IdempotencyClaimNotFresh extends Data.TaggedError("IdempotencyClaimNotFresh") {}

/** A finished operation's answer as the client saw it, replayed verbatim. */
export interface StoredResponse {
  readonly status: number
  readonly body: unknown
}

export type IdempotencyClaim =
  | { readonly _tag: "Fresh" }
  | { readonly _tag: "Replay"; readonly response: StoredResponse }

export class IdempotencyStore extends Context.Tag("@intake/IdempotencyStore")<
  IdempotencyStore,
  {
    /**
     * Called inside the unit of work that performs the operation. Claims the scope for the
     * rest of that unit of work: fails with idempotency_conflict when another unit of work
     * holds it (in flight) or when an unexpired record has another fingerprint; answers
     * Replay when an unexpired record has the same fingerprint. A record stored by a unit
     * of work that ends while the claim runs may go unseen (Fresh): `complete` tells.
     */
    readonly claim: (
      scope: IdempotencyScope,
      fingerprint: string,
      now: EpochMillis
    ) => Stored<IdempotencyClaim, IdempotencyConflict>
    /**
     * Claims the scope as `claim` does when `claim` would answer Fresh, and answers nothing.
     * Otherwise (the scope held, or an unexpired record stored for it, whatever its
     * fingerprint) it claims nothing and fails with IdempotencyClaimNotFresh. A store may
     * send it with the unit of work's next statement (PostgreSQL: docs/performance.md, "Round
     * trips of a create"): that failure may then come from that statement's step, or from
     * the unit of work's end.
     */
    readonly claimFresh: (
      scope: IdempotencyScope,
      fingerprint: string,
      now: EpochMillis
    ) => Stored<void, IdempotencyClaimNotFresh>
    /**
     * For an operation that must not run inside a unit of work (it calls out): called in a
     * unit of work of its own, answers as `claim` does, and when Fresh records the scope as
     * reserved (in flight) until `until`, committed with that unit of work. `claim` and
     * `reserve` answer idempotency_conflict for a reserved scope until it is completed,
     * released, or its reservation runs out (a process that died mid-operation).
     */
    readonly reserve: (
      scope: IdempotencyScope,
      fingerprint: string,
      now: EpochMillis,
      until: EpochMillis
    ) => Stored<IdempotencyClaim, IdempotencyConflict>
    /** Drops the reservation of `scope` for `fingerprint` (the operation stored nothing); a completed record stays. */
    readonly release: (scope: IdempotencyScope, fingerprint: string) => Stored<void>
    /**
     * Stores the response in the same unit of work as the claim (or after a reservation of
     * the same fingerprint, replacing it), unless another record that has not expired at
     * `createdAt` is stored already (another unit of work stored one after this one's claim
     * read): then it stores nothing and fails with IdempotencyRecordExists. A store may send
     * it with the unit of work's next statement (PostgreSQL: docs/performance.md, "Round trips
     * of a create"): that failure may then come from that statement's step, or from the
     * unit of work's end.
     */
    readonly complete: (
      scope: IdempotencyScope,
      fingerprint: string,
      response: StoredResponse,
      createdAt: EpochMillis,
      expiresAt: EpochMillis
    ) => Stored<void, IdempotencyRecordExists>
    /** Deletes records whose expiry is at or before `now`; answers how many. */
    readonly purgeExpired: (now: EpochMillis) => Stored<number>
  }
>() {}

// ---------------------------------------------------------------- rate limiting

/** What a sliding-window check decided, and what the rate-limit headers need. */
export interface RateLimitDecision {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  /** Epoch ms at which the oldest request in the window leaves it (now when the window is empty). */
  readonly resetAt: EpochMillis
  /** Whole seconds until a request would be admitted, at least 1; 0 when allowed. */
  readonly retryAfterSeconds: number
}

export class RateLimiter extends Context.Tag("@intake/RateLimiter")<
  RateLimiter,
  {
    /**
     * Counts one request for `bucket` if fewer than `limit` were admitted in the last
     * `windowMs`; refused requests are not counted. Exact: no span of `windowMs` ever
     * admits more than `limit`. Answers within `timeoutMs` (on the Clock) or fails with
     * StorageUnavailable: the adapter bounds its own wait, which costs it a timer where a
     * race around it would cost the caller two fibers per request.
     */
    readonly hit: (
      bucket: string,
      limit: number,
      windowMs: number,
      timeoutMs: number
    ) => Stored<RateLimitDecision>
    /**
     * What `hit` would answer now, counting nothing: `allowed` when fewer than `limit` were
     * admitted in the last `windowMs`, `remaining` the requests that still would be. Bounded
     * by `timeoutMs` as `hit` is.
     */
    readonly peek: (
      bucket: string,
      limit: number,
      windowMs: number,
      timeoutMs: number
    ) => Stored<RateLimitDecision>
  }
>() {}

// ---------------------------------------------------------------- access cache invalidation

/** A change that makes cached data stale: authentication's, or a cached bot. */
export type AccessInvalidationEvent =
  /** The key with this hash changed (revoked). */
  | { readonly _tag: "ApiKeyChanged"; readonly keyHash: string }
  /** The workspace changed (plan, status, overrides): every cached key of it is stale. */
  | { readonly _tag: "WorkspaceChanged"; readonly workspaceId: string }
  /** The bot changed (name, description, status, schema): its cached copy is stale. */
  | { readonly _tag: "IntakeBotChanged"; readonly intakeBotId: string }

/**
 * Tells every instance's authentication cache to drop stale entries. `publish` delivers to
 * this instance's subscribers before it returns (so a change is effective here at once)
 * and to other instances' subscribers as soon as the transport allows. It never fails: a
 * lost message only means other instances notice at the cache's TTL (at most 60 s).
 */
export class AccessInvalidation extends Context.Tag("@intake/AccessInvalidation")<
  AccessInvalidation,
  {
    readonly publish: (event: AccessInvalidationEvent) => Effect.Effect<void>
    /** Registers `handler` for events from this and other instances, until the scope closes. */
    readonly subscribe: (
      handler: (event: AccessInvalidationEvent) => Effect.Effect<void>
    ) => Effect.Effect<void, never, Scope.Scope>
  }
>() {}

// ---------------------------------------------------------------- summaries

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
    /** A summary as the summarizer wrote it; the caller sanitizes it (policies/model-summary.ts). */
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
    readonly finish: (submissionId: string, claimToken: string) => Stored<boolean>
    /**
     * Makes a claimed job due again at `dueAt` with one more attempt counted and no
     * deliveries held any more; false when the claim is no longer `claimToken`'s.
     */
    readonly retryAt: (submissionId: string, claimToken: string, dueAt: EpochMillis) => Stored<boolean>
    /** Gives claimed jobs back, due at once (a process stopping). */
    readonly release: (submissionIds: ReadonlyArray<string>, claimToken: string) => Stored<void>
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

// ---------------------------------------------------------------- name resolution

/** DNS, for the receiver-address rule of webhooks (checked at creation and every delivery). */
export class AddressResolver extends Context.Tag("@intake/AddressResolver")<
  AddressResolver,
  {
    /** Every A and AAAA address of `host`; empty when the name does not resolve. */
    readonly resolve: (host: string) => Effect.Effect<ReadonlyArray<string>, StorageUnavailable>
  }
>() {}

// ---------------------------------------------------------------- webhook deliveries

/** What one attempt did to its endpoint's delivery state (see policies/endpoint-health.ts). */
export interface AttemptOutcome {
  readonly ok: boolean
  /** The receiver's status, when it answered. */
  readonly responseStatus: number | null
  readonly at: EpochMillis
  /** How long it took: the circuit breaker's cool-down runs from the attempt's end. */
  readonly durationMs?: number
}

/** An endpoint after recordOutcome, and its status before: tells who disabled it. */
export interface OutcomeRecorded {
  readonly endpoint: WebhookEndpoint
  readonly previousStatus: WebhookEndpoint["status"]
}

/**
 * What sending one claimed attempt needs, read for a whole claim at once
 * (DeliveryRepository.dispatchSources): its endpoint and the endpoint's workspace, its
 * event, and the event's sources (the submission with its messages and its bot for
 * submission.completed, the contact for contact.created). null where a row is gone or the
 * event's type has no such source.
 */
export interface DispatchSources {
  readonly endpoint: WebhookEndpoint | null
  readonly workspace: Workspace | null
  readonly event: DomainEvent | null
  readonly submission: SubmissionDetail | null
  readonly bot: IntakeBot | null
  readonly contact: Contact | null
}

/** What one claim leased, and whether it left due attempts waiting (DeliveryIsolation.ClaimPlan.more). */
export interface ClaimedAttempts {
  readonly deliveries: ReadonlyArray<Delivery>
  readonly more: boolean
  /** The claim's `now`: its leases run from then. */
  readonly claimedAt: EpochMillis
  /** What sending each needs, when the store read it with the claim (as `dispatchSources` reads it). */
  readonly sources?: ReadonlyMap<string, DispatchSources>
}

/** One finished attempt to write, and the attempt that follows it (a retry), if any. */
export interface FinishedAttempt {
  readonly finished: Delivery
  readonly next: { readonly delivery: Delivery; readonly dueAt: EpochMillis } | null
}

/**
 * The delivery queue at a glance, for the operator's metrics (docs/operations.md, Metrics):
 * read at scrape time, in one cheap read.
 */
export interface QueueHealth {
  /** Pending attempts: due now, or later (a retry's wait, a held summary's). */
  readonly pending: number
  /** The earliest due time among them, null when none is pending. */
  readonly oldestDueAt: EpochMillis | null
  /** Endpoints whose circuit is open at `now` (circuit_open_until in the future). */
  readonly circuitsOpen: number
}

/** What one retention purge deleted. */
export interface PurgedHistory {
  readonly deliveries: number
  readonly events: number
}

/**
 * Delivery attempts and the queue of pending ones. A pending attempt is due at a time
 * and, once claimed, leased to one dispatcher until the lease ends: a dispatcher that
 * dies gives its claims back by letting the lease run out.
 */
export class DeliveryRepository extends Context.Tag("@intake/DeliveryRepository")<
  DeliveryRepository,
  {
    /** The ACTIVE endpoints of a workspace: who may receive its new events. */
    readonly activeEndpoints: (workspaceId: string) => Stored<ReadonlyArray<WebhookEndpoint>>
    /** Any workspace's endpoint: the dispatcher's view. */
    readonly endpoint: (webhookId: string) => Stored<Option.Option<WebhookEndpoint>>
    /** Stores pending attempts, due at `dueAt`; inside the caller's unit of work. */
    readonly enqueue: (deliveries: ReadonlyArray<Delivery>, dueAt: EpochMillis) => Stored<void>
    /** Makes the pending attempts among `ids` due at `dueAt` unless they are due sooner (a held attempt let go). */
    readonly advance: (ids: ReadonlyArray<string>, dueAt: EpochMillis) => Stored<void>
    /**
     * Leases up to `limit` pending attempts that are due at `now` and not leased (or whose
     * lease ended), until `now + leaseMs`, under `claimToken`, as `isolation` allows
     * (policies/delivery-isolation.ts, atomically across dispatchers): never more of one
     * endpoint in flight than its limit, nothing of an endpoint whose circuit is open, one
     * probe when half open, sends spaced by its rate limit; endpoints and workspaces take
     * turns (`fairOrder`), each endpoint's earliest due first.
     */
    readonly claimDue: (
      now: EpochMillis,
      limit: number,
      leaseMs: number,
      claimToken: string,
      isolation?: IsolationPolicy
    ) => Stored<ReadonlyArray<Delivery>>
    /** As `claimDue`, telling also whether due attempts were left waiting (ClaimPlan.more). */
    readonly claim: (
      now: EpochMillis,
      limit: number,
      leaseMs: number,
      claimToken: string,
      isolation?: IsolationPolicy
    ) => Stored<ClaimedAttempts>
    /**
     * Replaces a claimed pending attempt by its finished record and, when given, queues
     * the next attempt. Does nothing and answers false when the claim is no longer
     * `claimToken`'s (its lease ended and another dispatcher took it).
     */
    readonly complete: (
      finished: Delivery,
      claimToken: string,
      next: { readonly delivery: Delivery; readonly dueAt: EpochMillis } | null
    ) => Stored<boolean>
    /**
     * Replaces claimed pending attempts by their finished records, queues the attempts that
     * follow them, and writes the delivery state of the endpoints `health` (status, last
     * delivery, failure streak, circuit: as EndpointHealth.afterAttempt computed it over rows
     * `lockEndpoints` locked), in one write. When any attempt is no longer `claimToken`'s
     * (its lease ended and another dispatcher took it), writes none of it and answers their
     * ids: the caller writes the others again without them. A unit of work's last step, so
     * it may carry the commit (UnitOfWork.commitWith).
     */
    readonly completeMany: (
      attempts: ReadonlyArray<FinishedAttempt>,
      claimToken: string,
      health: ReadonlyArray<WebhookEndpoint>
    ) => Stored<ReadonlyArray<string>>
    /**
     * The rate limit's gate, at the moment of sending (docs/webhooks.md, "How the engine
     * sends"): when
     * the endpoint's last gated send started at least `spacingMs` before `at`, makes `at` its
     * last send and answers null (send now); otherwise answers when the next may start.
     */
    readonly reserveSend: (
      webhookId: string,
      at: EpochMillis,
      spacingMs: number
    ) => Stored<EpochMillis | null>
    /** Gives claimed attempts back, due at once (a dispatcher stopping). */
    readonly release: (ids: ReadonlyArray<string>, claimToken: string) => Stored<void>
    /** What sending each of `deliveries` needs, by delivery id, read at once (one statement on PostgreSQL). */
    readonly dispatchSources: (
      deliveries: ReadonlyArray<Delivery>
    ) => Stored<ReadonlyMap<string, DispatchSources>>
    /**
     * The endpoints among `ids` that exist, their rows locked until the unit of work ends,
     * in the order of their ids (so concurrent batches lock alike and never deadlock):
     * the outcomes of a batch of attempts are applied to them, then `completeMany` writes them.
     */
    readonly lockEndpoints: (ids: ReadonlyArray<string>) => Stored<ReadonlyArray<WebhookEndpoint>>
    /** Stores a finished attempt that never queued (test and redeliver). */
    readonly insertFinished: (delivery: Delivery) => Stored<void>
    /**
     * The earliest moment a claim could take a pending attempt it cannot take at `now`
     * (a due time, a lease's end, a circuit half opening, a rate limit's next send), if any:
     * `nextClaimableAt` over every endpoint with pending attempts.
     */
    readonly nextDueAt: (now: EpochMillis, isolation?: IsolationPolicy) => Stored<Option.Option<EpochMillis>>
    /** The queue's size, its earliest due time and the endpoints whose circuit is open at `now`. */
    readonly queueHealth: (now: EpochMillis) => Stored<QueueHealth>
    readonly findInWebhook: (webhookId: string, id: string) => Stored<Option.Option<Delivery>>
    /** Every attempt of one event to one endpoint, oldest first. */
    readonly attemptsOf: (webhookId: string, eventId: string) => Stored<ReadonlyArray<Delivery>>
    /**
     * Newest first (created_at desc, id desc), within `filter` when given. Pending attempts
     * read here and by `findInWebhook` show when they are due as `nextRetryAt`.
     */
    readonly list: (webhookId: string, page: PageRequest, filter?: DeliveryFilter) => Stored<Page<Delivery>>
    /**
     * The endpoint, its row locked until the unit of work ends (recoveries of one endpoint
     * run one at a time); none when it does not exist.
     */
    readonly lockEndpoint: (webhookId: string) => Stored<Option.Option<WebhookEndpoint>>
    /**
     * The workspace's events of `window` (by occurrence) that `endpoint` takes (its events
     * and bots) and that it has neither received (a `succeeded` attempt) nor has pending,
     * oldest first (created_at, id), strictly after `after`, at most `limit`.
     */
    readonly recoverableEvents: (
      endpoint: WebhookEndpoint,
      window: OccurrenceWindow,
      after: ListPosition | null,
      limit: number
    ) => Stored<ReadonlyArray<RecoverableEvent>>
    /**
     * Applies an attempt's outcome to the endpoint's delivery state atomically (last
     * delivery, failure streak, auto-disable after `disableAfterMs` or on 410); answers
     * the endpoint as stored afterwards with its status before, none when it was deleted.
     */
    readonly recordOutcome: (
      webhookId: string,
      outcome: AttemptOutcome,
      disableAfterMs: number,
      isolation?: IsolationPolicy
    ) => Stored<Option.Option<OutcomeRecorded>>
    /**
     * Retention (docs/webhooks.md, "Data kept"): deletes the finished attempts created before
     * `before`, and the events created before it that have no pending attempt, at most
     * `batchSize` rows per statement, until none is left. A pending attempt is never deleted.
     */
    readonly purgeOlderThan: (before: EpochMillis, batchSize: number) => Stored<PurgedHistory>
  }
>() {}

/**
 * Wakes dispatchers when attempts were queued, so a new event leaves at once rather
 * than at the next poll. Best effort: a lost signal only delays until the next poll.
 */
export class DeliveryWakeups extends Context.Tag("@intake/DeliveryWakeups")<
  DeliveryWakeups,
  {
    readonly notify: Effect.Effect<void>
    /** Completes at the next signal, or at once when one came since the last wait. */
    readonly next: Effect.Effect<void>
  }
>() {}

export interface ReceiverRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

export interface ReceiverResponse {
  readonly status: number
  /** At most the first 1 KB of the answer. */
  readonly body: string
  /** The Retry-After header as sent, if any. */
  readonly retryAfter: string | null
}

/** The receiver could not be reached, did not answer in time, or its address is refused. */
export class ReceiverUnreachable extends Data.TaggedError("ReceiverUnreachable")<{
  readonly message: string
}> {}

/**
 * Sends one POST to a receiver: no redirects followed, a 10 s limit for the whole
 * exchange, the answer's body cut at 1 KB, and only to an address the receiver-address
 * rule allows (the adapter resolves the name itself and connects to the address it checked).
 */
export class ReceiverClient extends Context.Tag("@intake/ReceiverClient")<
  ReceiverClient,
  {
    readonly send: (request: ReceiverRequest) => Effect.Effect<ReceiverResponse, ReceiverUnreachable>
  }
>() {}

// ---------------------------------------------------------------- operations

/** A database pool's connections; null where the store has no such thing (PGlite waits in a queue of its own). */
export interface PoolConnections {
  readonly total: number
  readonly idle: number | null
  readonly waiting: number | null
}

/**
 * The database's connections as the operator's metrics show them (docs/operations.md,
 * Metrics): pg's pool on PostgreSQL, PGlite's one connection. Absent on the memory store.
 */
export class ConnectionPool extends Context.Tag("@intake/ConnectionPool")<
  ConnectionPool,
  { readonly connections: () => PoolConnections }
>() {}
