/**
 * The ports of webhooks and their deliveries (docs/webhooks.md): endpoints, the delivery
 * queue and its wake-ups, the receivers' client and name resolution. The rules of every
 * port (failures, units of work) are in shared/ports.ts.
 */
import { Context, Data, type Effect, type Option } from "effect"
import type { PlanLimitExceeded, StorageUnavailable } from "../shared/errors.js"
import type { DeliveryId, WebhookId, WorkspaceId } from "../shared/ids.js"
import type {
  Contact,
  Delivery,
  DeliveryFilter,
  DomainEvent,
  EpochMillis,
  IntakeBot,
  ListPosition,
  OccurrenceWindow,
  Page,
  PageRequest,
  RecoverableEvent,
  SubmissionDetail,
  WebhookEndpoint,
  Workspace
} from "../shared/models.js"
import type { Stored } from "../shared/stored.js"
import type { IsolationPolicy } from "./delivery-isolation.js"

// ---------------------------------------------------------------- endpoints

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
      workspaceId: WorkspaceId,
      id: WebhookId,
      secret: string,
      previousExpiresAt: EpochMillis | null,
      now: EpochMillis
    ) => Stored<Option.Option<WebhookEndpoint>>
    readonly findInWorkspace: (
      workspaceId: WorkspaceId,
      id: WebhookId
    ) => Stored<Option.Option<WebhookEndpoint>>
    readonly list: (workspaceId: WorkspaceId, page: PageRequest) => Stored<Page<WebhookEndpoint>>
    readonly delete: (workspaceId: WorkspaceId, id: WebhookId) => Stored<boolean>
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

/** What one attempt did to its endpoint's delivery state (see endpoint-health.ts). */
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
    readonly activeEndpoints: (workspaceId: WorkspaceId) => Stored<ReadonlyArray<WebhookEndpoint>>
    /** Any workspace's endpoint: the dispatcher's view. */
    readonly endpoint: (webhookId: WebhookId) => Stored<Option.Option<WebhookEndpoint>>
    /** Stores pending attempts, due at `dueAt`; inside the caller's unit of work. */
    readonly enqueue: (deliveries: ReadonlyArray<Delivery>, dueAt: EpochMillis) => Stored<void>
    /** Makes the pending attempts among `ids` due at `dueAt` unless they are due sooner (a held attempt let go). */
    readonly advance: (ids: ReadonlyArray<DeliveryId>, dueAt: EpochMillis) => Stored<void>
    /**
     * Leases up to `limit` pending attempts that are due at `now` and not leased (or whose
     * lease ended), until `now + leaseMs`, under `claimToken`, as `isolation` allows
     * (delivery-isolation.ts, atomically across dispatchers): never more of one
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
      webhookId: WebhookId,
      at: EpochMillis,
      spacingMs: number
    ) => Stored<EpochMillis | null>
    /** Gives claimed attempts back, due at once (a dispatcher stopping). */
    readonly release: (ids: ReadonlyArray<DeliveryId>, claimToken: string) => Stored<void>
    /** What sending each of `deliveries` needs, by delivery id, read at once (one statement on PostgreSQL). */
    readonly dispatchSources: (
      deliveries: ReadonlyArray<Delivery>
    ) => Stored<ReadonlyMap<string, DispatchSources>>
    /**
     * The endpoints among `ids` that exist, their rows locked until the unit of work ends,
     * in the order of their ids (so concurrent batches lock alike and never deadlock):
     * the outcomes of a batch of attempts are applied to them, then `completeMany` writes them.
     */
    readonly lockEndpoints: (ids: ReadonlyArray<WebhookId>) => Stored<ReadonlyArray<WebhookEndpoint>>
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
    readonly findInWebhook: (webhookId: WebhookId, id: DeliveryId) => Stored<Option.Option<Delivery>>
    /** Every attempt of one event to one endpoint, oldest first. */
    readonly attemptsOf: (webhookId: WebhookId, eventId: string) => Stored<ReadonlyArray<Delivery>>
    /**
     * Newest first (created_at desc, id desc), within `filter` when given. Pending attempts
     * read here and by `findInWebhook` show when they are due as `nextRetryAt`.
     */
    readonly list: (
      webhookId: WebhookId,
      page: PageRequest,
      filter?: DeliveryFilter
    ) => Stored<Page<Delivery>>
    /**
     * The endpoint, its row locked until the unit of work ends (recoveries of one endpoint
     * run one at a time); none when it does not exist.
     */
    readonly lockEndpoint: (webhookId: WebhookId) => Stored<Option.Option<WebhookEndpoint>>
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
      webhookId: WebhookId,
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
