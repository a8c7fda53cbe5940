/**
 * The use cases the adapters call, as services. Their layers live beside this file, one
 * per area; the HTTP layer depends only on these shapes.
 */
import { Context, type Effect, type Option, type Redacted } from "effect"
import type { RateLimitDecision, StoredResponse } from "../access/ports.js"
import type { SummaryUnavailable } from "../summaries/ports.js"
import type { WebhookPayload } from "../webhooks/event-payloads.js"
import type { ClaimedAttempts, DispatchSources } from "../webhooks/ports.js"
import type {
  AuthenticationRequired,
  Conflict,
  FeatureNotAvailable,
  IdempotencyConflict,
  InsufficientScopes,
  PlanLimitExceeded,
  RateLimitExceeded,
  ResourceNotFound,
  StorageUnavailable,
  ValidationFailed,
  WorkspaceArchived
} from "./errors.js"
import type {
  ApiKey,
  BotStatus,
  Delivery,
  DeliveryStatus,
  DomainEvent,
  EpochMillis,
  IntakeBot,
  IntakeBotListItem,
  MessageRole,
  Plan,
  SchemaField,
  Scope,
  SubmissionDetail,
  SubmissionListItem,
  SummaryJob,
  WebhookEndpoint,
  Workspace,
  WorkspaceStatus
} from "./models.js"

// ---------------------------------------------------------------- shared shapes

/** Who is calling: a usable key and its workspace, checked for archive and plan. */
export interface Principal {
  readonly apiKey: ApiKey
  readonly workspace: Workspace
}

/** A list request as the client sent it: limit already range-checked, cursor still opaque. */
export interface ListQuery {
  readonly limit: number
  readonly cursor: string | null
}

export interface Listed<A> {
  readonly items: ReadonlyArray<A>
  readonly nextCursor: string | null
}

type Fails<E = never> = E | StorageUnavailable

// ---------------------------------------------------------------- access

export class Access extends Context.Tag("@intake/Access")<
  Access,
  {
    /**
     * Checks the Authorization header in the order of docs/rules.md, Checks in order: the key
     * (401), then an archived workspace, then a plan without API access (403). Records
     * last_used_at at most once a minute.
     */
    readonly authenticate: (
      authorization: string | undefined
    ) => Effect.Effect<Principal, Fails<AuthenticationRequired | WorkspaceArchived | FeatureNotAvailable>>
    /**
     * The operator token of /admin (`Authorization: Bearer <token>`, compared in constant
     * time), with failed tries limited per client address: past
     * OPERATOR_AUTH_FAILURES_PER_MINUTE in a minute, 429 for every request from it, the
     * right token included. Fails open like the other limits.
     */
    readonly authorizeOperator: (
      authorization: string | undefined,
      token: Redacted.Redacted,
      clientIp: string
    ) => Effect.Effect<void, AuthenticationRequired | RateLimitExceeded>
    /** The key's sliding window (plan limit or the workspace's override). Fails open. */
    readonly limitKey: (principal: Principal) => Effect.Effect<RateLimitDecision>
    /** The per-client-IP window for requests without a valid key (100 per minute). Fails open. */
    readonly limitAnonymous: (clientIp: string) => Effect.Effect<RateLimitDecision>
    /**
     * That window as it stands, counting nothing: the rate-limit headers of an answer given
     * before the request could be authenticated (a malformed request, one shed by an
     * overloaded server). Fails open.
     */
    readonly peekAnonymous: (clientIp: string) => Effect.Effect<RateLimitDecision>
    readonly requireScope: (principal: Principal, scope: Scope) => Effect.Effect<void, InsufficientScopes>
    /**
     * Whether the limits are off for now because the limiter failed (its last answer was a
     * failure, or its cool-down runs): what /readyz reports (docs/rules.md, Running).
     */
    readonly limiterFailingOpen: Effect.Effect<boolean>
    /** How many requests were let through because the limiter failed, since start (a metric). */
    readonly limiterFailedOpen: Effect.Effect<number>
  }
>() {}

// ---------------------------------------------------------------- operator interface

export interface NewWorkspace {
  readonly name: string
  readonly plan: Plan
  readonly monthlySubmissionQuota?: number | null
}

export interface WorkspaceChanges {
  readonly plan?: Plan
  readonly status?: WorkspaceStatus
  readonly monthlySubmissionQuota?: number | null
  readonly rateLimitPerMinute?: number | null
}

export interface NewApiKey {
  readonly scopes: ReadonlyArray<Scope>
  readonly name?: string | null
  readonly expiresAt?: EpochMillis | null
}

/** A created key: `key` is the full secret, shown this once and never again. */
export interface IssuedApiKey {
  readonly apiKey: ApiKey
  readonly key: string
}

export class Provisioning extends Context.Tag("@intake/Provisioning")<
  Provisioning,
  {
    readonly createWorkspace: (input: NewWorkspace) => Effect.Effect<Workspace, Fails<ValidationFailed>>
    readonly updateWorkspace: (
      id: string,
      changes: WorkspaceChanges
    ) => Effect.Effect<Workspace, Fails<ResourceNotFound | ValidationFailed>>
    readonly createApiKey: (
      workspaceId: string,
      input: NewApiKey
    ) => Effect.Effect<IssuedApiKey, Fails<ResourceNotFound | ValidationFailed | PlanLimitExceeded>>
    readonly getApiKey: (id: string) => Effect.Effect<ApiKey, Fails<ResourceNotFound>>
    readonly revokeApiKey: (id: string) => Effect.Effect<ApiKey, Fails<ResourceNotFound>>
  }
>() {}

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
      workspaceId: string,
      query: ListQuery
    ) => Effect.Effect<Listed<IntakeBotListItem>, Fails<ValidationFailed>>
    readonly get: (workspaceId: string, id: string) => Effect.Effect<IntakeBot, Fails<ResourceNotFound>>
    /** Operator interface. */
    readonly create: (
      workspaceId: string,
      input: NewIntakeBot
    ) => Effect.Effect<IntakeBot, Fails<ResourceNotFound | ValidationFailed>>
    /** Operator interface. */
    readonly update: (
      id: string,
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
      workspaceId: string,
      intakeBotId: string,
      query: SubmissionQuery
    ) => Effect.Effect<
      { readonly submissions: Listed<SubmissionListItem>; readonly schema: ReadonlyArray<SchemaField> },
      Fails<ResourceNotFound | ValidationFailed>
    >
    readonly get: (
      workspaceId: string,
      intakeBotId: string,
      id: string
    ) => Effect.Effect<SubmissionDetail, Fails<ResourceNotFound>>
    /**
     * Validates, reserves the monthly quota, stores the submission with its messages,
     * finds or creates the contact and appends the events, all in one unit of work.
     */
    readonly create: (
      workspaceId: string,
      intakeBotId: string,
      input: NewSubmission
    ) => Effect.Effect<
      CreatedSubmission,
      Fails<ResourceNotFound | ValidationFailed | Conflict | PlanLimitExceeded>
    >
    /** Operator interface: any workspace's bot. */
    readonly createForBot: (
      intakeBotId: string,
      input: NewSubmission
    ) => Effect.Effect<
      SubmissionDetail,
      Fails<ResourceNotFound | ValidationFailed | Conflict | PlanLimitExceeded>
    >
    /** Operator interface. */
    readonly remove: (id: string) => Effect.Effect<void, Fails<ResourceNotFound>>
  }
>() {}

// ---------------------------------------------------------------- webhooks

export interface NewWebhook {
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly description?: string
  readonly intakeBotIds?: ReadonlyArray<string>
  /** Deliveries per second, 1..1000; null or omitted is unlimited. */
  readonly rateLimit?: number | null
}

export interface WebhookChanges {
  readonly events?: ReadonlyArray<string>
  readonly description?: string
  readonly status?: "active" | "paused"
  readonly intakeBotIds?: ReadonlyArray<string>
  /** Deliveries per second, 1..1000; null is unlimited. */
  readonly rateLimit?: number | null
}

export interface SecretRotation {
  /** How long the old secret keeps signing, 0 to 7 days; 24 h when omitted. */
  readonly gracePeriodSeconds?: number
}

export class Webhooks extends Context.Tag("@intake/Webhooks")<
  Webhooks,
  {
    readonly list: (
      workspaceId: string,
      query: ListQuery
    ) => Effect.Effect<Listed<WebhookEndpoint>, Fails<ValidationFailed>>
    readonly get: (workspaceId: string, id: string) => Effect.Effect<WebhookEndpoint, Fails<ResourceNotFound>>
    /** Answers the endpoint with its secret: the only time the secret leaves the service. */
    readonly create: (
      workspaceId: string,
      input: NewWebhook
    ) => Effect.Effect<WebhookEndpoint, Fails<ValidationFailed | PlanLimitExceeded>>
    readonly update: (
      workspaceId: string,
      id: string,
      changes: WebhookChanges
    ) => Effect.Effect<WebhookEndpoint, Fails<ResourceNotFound | ValidationFailed>>
    readonly remove: (workspaceId: string, id: string) => Effect.Effect<void, Fails<ResourceNotFound>>
    /**
     * Gives the endpoint a new secret and answers it with that secret (shown this once); the
     * old one keeps signing beside it for the grace period (docs/webhooks.md, "Secret rotation").
     */
    readonly rotateSecret: (
      workspaceId: string,
      id: string,
      input: SecretRotation
    ) => Effect.Effect<WebhookEndpoint, Fails<ResourceNotFound | ValidationFailed>>
  }
>() {}

// ---------------------------------------------------------------- deliveries

/** A list query of the delivery log; an omitted filter means any. */
export interface DeliveryQuery extends ListQuery {
  readonly status?: DeliveryStatus | null
  readonly eventType?: string | null
  readonly submissionId?: string | null
  readonly createdAfter?: EpochMillis | null
  readonly createdBefore?: EpochMillis | null
}

/** What a recovery queued, and the window it covered (`until` resolved). */
export interface Recovery {
  readonly queued: number
  readonly since: EpochMillis
  readonly until: EpochMillis
}

/** A claimed attempt ready to go: what to send and where, or why it is closed unsent. */
export type PreparedAttempt =
  | {
      readonly _tag: "Send"
      readonly delivery: Delivery
      readonly endpoint: WebhookEndpoint
      readonly payload: WebhookPayload
      /** The latest it may start (DeliverySettings.sendWindowMs after its claim); later it is given back. */
      readonly sendBy: EpochMillis
      /** The event it delivers, when read with it: its log line names its submission and request. */
      readonly event?: DomainEvent | null
    }
  | {
      readonly _tag: "Drop"
      readonly delivery: Delivery
      readonly error: string
      readonly event?: DomainEvent | null
    }

/** What one send did, before it is written down. */
export interface SendResult {
  readonly ok: boolean
  readonly responseStatus: number | null
  readonly responseBody: string | null
  readonly error: string | null
  readonly retryAfter: string | null
  readonly durationMs: number
  readonly startedAt: number
  /** When the request was handed to the receiver client; null when it never was (address refused). */
  readonly sentAt: number | null
}

/** An attempt made (or closed unsent), not yet written down. */
export type AttemptMade =
  | {
      readonly _tag: "Sent"
      readonly delivery: Delivery
      readonly result: SendResult
      /** When its retry is due and its id, if it failed; the retry is queued only if the endpoint stays active. */
      readonly retry: { readonly dueAt: number; readonly id: string } | null
      readonly finishedAt: number
      readonly event?: DomainEvent | null
    }
  | {
      readonly _tag: "Dropped"
      readonly delivery: Delivery
      readonly error: string
      readonly event?: DomainEvent | null
    }
  /** Not started within its send window (a frozen process, a rate limit's wait): its claim is given back. */
  | { readonly _tag: "Expired"; readonly delivery: Delivery }

export class Deliveries extends Context.Tag("@intake/Deliveries")<
  Deliveries,
  {
    /** The endpoint's attempts, newest first, within the query's filters (the cursor is bound to them). */
    readonly list: (
      workspaceId: string,
      webhookId: string,
      query: DeliveryQuery
    ) => Effect.Effect<Listed<Delivery>, Fails<ResourceNotFound | ValidationFailed>>
    /** One attempt of the endpoint (404 webhook, then 404 delivery). */
    readonly get: (
      workspaceId: string,
      webhookId: string,
      deliveryId: string
    ) => Effect.Effect<Delivery, Fails<ResourceNotFound>>
    /**
     * Queues again, once each and oldest first, every event of the window that the endpoint
     * takes and has neither received nor has pending (docs/webhooks.md, Recovery). 404 for
     * another workspace's endpoint, 400 when `since` is after `until` (default: now), 409
     * while the endpoint is not active.
     */
    readonly recover: (
      workspaceId: string,
      webhookId: string,
      window: { readonly since: EpochMillis; readonly until: EpochMillis | null }
    ) => Effect.Effect<Recovery, Fails<ResourceNotFound | ValidationFailed | Conflict>>
    /** Sends a `webhook.test` event at once, whatever the endpoint's status; answers the finished attempt. */
    readonly test: (
      workspaceId: string,
      webhookId: string
    ) => Effect.Effect<Delivery, Fails<ResourceNotFound>>
    /**
     * Sends the attempt's event again at once, rebuilt from its source (409 conflict when
     * the source is gone; 404 delivery when the id is not this endpoint's attempt).
     */
    readonly redeliver: (
      workspaceId: string,
      webhookId: string,
      deliveryId: string
    ) => Effect.Effect<Delivery, Fails<ResourceNotFound | Conflict>>
    /** The dispatcher's side: lease up to `limit` due attempts under `claimToken`. */
    readonly claimDue: (limit: number, claimToken: string) => Effect.Effect<ReadonlyArray<Delivery>, Fails>
    /** As `claimDue`, telling also whether due attempts were left waiting. */
    readonly claim: (limit: number, claimToken: string) => Effect.Effect<ClaimedAttempts, Fails>
    /**
     * Makes one claimed attempt and logs it; answers the finished attempt. The same as
     * `prepare`, `attempt` and `record` of that one attempt.
     */
    readonly dispatch: (delivery: Delivery, claimToken: string) => Effect.Effect<Delivery, Fails>
    /**
     * What to do with each claimed attempt, read for all of them at once
     * (docs/webhooks.md, "How the engine sends"): send it to its endpoint, or close it
     * unsent (the endpoint gone, paused or disabled, the workspace withheld, the source gone).
     */
    readonly prepare: (
      deliveries: ReadonlyArray<Delivery>,
      claimedAt?: EpochMillis,
      sources?: ReadonlyMap<string, DispatchSources>
    ) => Effect.Effect<ReadonlyArray<PreparedAttempt>, Fails>
    /** Makes one prepared attempt (signs and sends it, or closes it unsent), without writing it down. */
    readonly attempt: (prepared: PreparedAttempt) => Effect.Effect<AttemptMade, Fails>
    /**
     * Writes attempts down in one unit of work: each one's finished record and retry, and the
     * outcomes applied to their endpoints (a streak, a circuit, a disable and its notice).
     * Logs each; answers the finished attempts in the same order. An attempt whose claim
     * another dispatcher took over is left to it, unwritten.
     */
    readonly record: (
      made: ReadonlyArray<AttemptMade>,
      claimToken: string
    ) => Effect.Effect<ReadonlyArray<Delivery>, Fails>
    /** Gives claimed attempts back (a dispatcher stopping before it made them). */
    readonly release: (deliveryIds: ReadonlyArray<string>, claimToken: string) => Effect.Effect<void, Fails>
    /** When the earliest pending attempt is due, if any. */
    readonly nextDueAt: Effect.Effect<Option.Option<EpochMillis>, Fails>
  }
>() {}

// ---------------------------------------------------------------- idempotency

export interface IdempotentRequest {
  readonly apiKeyId: string
  /** The Idempotency-Key header, already checked (1 to 255 printable ASCII characters). */
  readonly key: string
  /** From `Idempotency.fingerprint(method, path, body)`. */
  readonly fingerprint: string
}

export type IdempotentOutcome<A> =
  | { readonly _tag: "Fresh"; readonly value: A }
  | { readonly _tag: "Replayed"; readonly response: StoredResponse }

export interface IdempotentResponses<A, E> {
  /** The response a later replay returns for this success. */
  readonly onSuccess: (value: A) => StoredResponse
  /**
   * The response to store for a failure of the operation once it started (404, 409, 429
   * quota), or undefined to store nothing (validation failures, storage faults).
   */
  readonly onFailure: (error: E) => StoredResponse | undefined
}

export class Idempotency extends Context.Tag("@intake/Idempotency")<
  Idempotency,
  {
    /** Method, path and a hash of the parsed JSON body in a canonical form (key order ignored). */
    readonly fingerprint: (method: string, path: string, body: unknown) => string
    /**
     * Runs the operation under the key (docs/rules.md, Idempotency): the stored response and
     * the operation's writes commit together; a replay returns the stored response; a
     * key in flight or reused with another fingerprint fails with idempotency_conflict.
     */
    readonly run: <A, E, R>(
      request: IdempotentRequest,
      operation: Effect.Effect<A, E, R>,
      responses: IdempotentResponses<A, E>
    ) => Effect.Effect<IdempotentOutcome<A>, E | IdempotencyConflict | StorageUnavailable, R>
    /**
     * `run` for an operation that calls out (test and redeliver send a webhook, up to 10 s)
     * and so must not run inside a unit of work (docs/choices.md, Idempotency): the key is
     * reserved in a unit of work of its own (a duplicate meanwhile is idempotency_conflict),
     * the operation runs outside any and commits its own writes, and its response is stored
     * in a third. A failure that stores nothing releases the key.
     */
    readonly runOutsideTransaction: <A, E, R>(
      request: IdempotentRequest,
      operation: Effect.Effect<A, E, R>,
      responses: IdempotentResponses<A, E>
    ) => Effect.Effect<IdempotentOutcome<A>, E | IdempotencyConflict | StorageUnavailable, R>
  }
>() {}

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
    readonly release: (submissionIds: ReadonlyArray<string>, claimToken: string) => Effect.Effect<void, Fails>
    readonly nextDueAt: Effect.Effect<Option.Option<EpochMillis>, Fails>
    /** Asks the model for one claimed job and stores what comes of it. */
    readonly run: (job: SummaryJob, claimToken: string) => Effect.Effect<SummaryOutcome, Fails>
  }
>() {}
