/**
 * The use cases of webhooks: endpoints and their deliveries, as services the adapters and
 * the HTTP layer call. Their layers live beside this file; the HTTP layer depends only on
 * these shapes.
 */
import { Context, type Effect, type Option } from "effect"
import type { Conflict, PlanLimitExceeded, ResourceNotFound, ValidationFailed } from "../shared/errors.js"
import type { DeliveryId, IntakeBotId, SubmissionId, WebhookId, WorkspaceId } from "../shared/ids.js"
import type { Listed, ListQuery } from "../shared/lists.js"
import type { Delivery, DeliveryStatus, DomainEvent, EpochMillis, WebhookEndpoint } from "../shared/models.js"
import type { Fails } from "../shared/stored.js"
import type { WebhookPayload } from "./event-payloads.js"
import type { ClaimedAttempts, DispatchSources } from "./ports.js"

// ---------------------------------------------------------------- webhooks

export interface NewWebhook {
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly description?: string
  readonly intakeBotIds?: ReadonlyArray<IntakeBotId>
  /** Deliveries per second, 1..1000; null or omitted is unlimited. */
  readonly rateLimit?: number | null
}

export interface WebhookChanges {
  readonly events?: ReadonlyArray<string>
  readonly description?: string
  readonly status?: "active" | "paused"
  readonly intakeBotIds?: ReadonlyArray<IntakeBotId>
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
      workspaceId: WorkspaceId,
      query: ListQuery
    ) => Effect.Effect<Listed<WebhookEndpoint>, Fails<ValidationFailed>>
    readonly get: (
      workspaceId: WorkspaceId,
      id: WebhookId
    ) => Effect.Effect<WebhookEndpoint, Fails<ResourceNotFound>>
    /** Answers the endpoint with its secret: the only time the secret leaves the service. */
    readonly create: (
      workspaceId: WorkspaceId,
      input: NewWebhook
    ) => Effect.Effect<WebhookEndpoint, Fails<ValidationFailed | PlanLimitExceeded>>
    readonly update: (
      workspaceId: WorkspaceId,
      id: WebhookId,
      changes: WebhookChanges
    ) => Effect.Effect<WebhookEndpoint, Fails<ResourceNotFound | ValidationFailed>>
    readonly remove: (workspaceId: WorkspaceId, id: WebhookId) => Effect.Effect<void, Fails<ResourceNotFound>>
    /**
     * Gives the endpoint a new secret and answers it with that secret (shown this once); the
     * old one keeps signing beside it for the grace period (docs/webhooks.md, "Secret rotation").
     */
    readonly rotateSecret: (
      workspaceId: WorkspaceId,
      id: WebhookId,
      input: SecretRotation
    ) => Effect.Effect<WebhookEndpoint, Fails<ResourceNotFound | ValidationFailed>>
  }
>() {}

// ---------------------------------------------------------------- deliveries

/** A list query of the delivery log; an omitted filter means any. */
export interface DeliveryQuery extends ListQuery {
  readonly status?: DeliveryStatus | null
  readonly eventType?: string | null
  readonly submissionId?: SubmissionId | null
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
      readonly retry: { readonly dueAt: number; readonly id: DeliveryId } | null
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
      workspaceId: WorkspaceId,
      webhookId: WebhookId,
      query: DeliveryQuery
    ) => Effect.Effect<Listed<Delivery>, Fails<ResourceNotFound | ValidationFailed>>
    /** One attempt of the endpoint (404 webhook, then 404 delivery). */
    readonly get: (
      workspaceId: WorkspaceId,
      webhookId: WebhookId,
      deliveryId: DeliveryId
    ) => Effect.Effect<Delivery, Fails<ResourceNotFound>>
    /**
     * Queues again, once each and oldest first, every event of the window that the endpoint
     * takes and has neither received nor has pending (docs/webhooks.md, Recovery). 404 for
     * another workspace's endpoint, 400 when `since` is after `until` (default: now), 409
     * while the endpoint is not active.
     */
    readonly recover: (
      workspaceId: WorkspaceId,
      webhookId: WebhookId,
      window: { readonly since: EpochMillis; readonly until: EpochMillis | null }
    ) => Effect.Effect<Recovery, Fails<ResourceNotFound | ValidationFailed | Conflict>>
    /** Sends a `webhook.test` event at once, whatever the endpoint's status; answers the finished attempt. */
    readonly test: (
      workspaceId: WorkspaceId,
      webhookId: WebhookId
    ) => Effect.Effect<Delivery, Fails<ResourceNotFound>>
    /**
     * Sends the attempt's event again at once, rebuilt from its source (409 conflict when
     * the source is gone; 404 delivery when the id is not this endpoint's attempt).
     */
    readonly redeliver: (
      workspaceId: WorkspaceId,
      webhookId: WebhookId,
      deliveryId: DeliveryId
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
    readonly release: (
      deliveryIds: ReadonlyArray<DeliveryId>,
      claimToken: string
    ) => Effect.Effect<void, Fails>
    /** When the earliest pending attempt is due, if any. */
    readonly nextDueAt: Effect.Effect<Option.Option<EpochMillis>, Fails>
  }
>() {}
