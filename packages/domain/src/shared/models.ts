/**
 * The domain's records. Timestamps are epoch milliseconds (UTC); the HTTP layer renders
 * them as ISO 8601 with exactly three fraction digits.
 */
import { Schema } from "effect"
import { ApiKeyId, DeliveryId, IntakeBotId, SubmissionId, WebhookId, WorkspaceId } from "./ids.js"

export const EpochMillis = Schema.Number.annotations({ identifier: "EpochMillis" })
export type EpochMillis = number

// ---------------------------------------------------------------- workspaces and plans

export const Plan = Schema.Literal("free", "pro", "business")
export type Plan = typeof Plan.Type

export const WorkspaceStatus = Schema.Literal("active", "archived")
export type WorkspaceStatus = typeof WorkspaceStatus.Type

export const Workspace = Schema.Struct({
  id: WorkspaceId,
  name: Schema.String,
  plan: Plan,
  status: WorkspaceStatus,
  /** Operator override of the plan's monthly submission quota; null means the plan's. */
  monthlySubmissionQuota: Schema.NullOr(Schema.Number),
  /** Operator override of the plan's per-key requests per minute; null means the plan's. */
  rateLimitPerMinute: Schema.NullOr(Schema.Number),
  createdAt: EpochMillis,
  updatedAt: EpochMillis
})
export type Workspace = typeof Workspace.Type

// ---------------------------------------------------------------- API keys and scopes

export const Scope = Schema.Literal(
  "read:intake-bots",
  "write:intake-bots",
  "read:submissions",
  "read:contacts",
  "read:records",
  "manage:webhooks"
)
export type Scope = typeof Scope.Type
export const allScopes: ReadonlyArray<Scope> = Scope.literals

export const ApiKey = Schema.Struct({
  id: ApiKeyId,
  workspaceId: WorkspaceId,
  name: Schema.NullOr(Schema.String),
  /** Hex SHA-256 of the full key; the key itself is never stored. */
  keyHash: Schema.String,
  scopes: Schema.Array(Scope),
  expiresAt: Schema.NullOr(EpochMillis),
  revokedAt: Schema.NullOr(EpochMillis),
  lastUsedAt: Schema.NullOr(EpochMillis),
  createdAt: EpochMillis
})
export type ApiKey = typeof ApiKey.Type

// ---------------------------------------------------------------- intake bots

export const FieldType = Schema.Literal(
  "text",
  "long_text",
  "email",
  "phone",
  "url",
  "number",
  "boolean",
  "date",
  "select",
  "multi_select"
)
export type FieldType = typeof FieldType.Type

export const SchemaField = Schema.Struct({
  name: Schema.String,
  label: Schema.String,
  type: FieldType,
  required: Schema.optional(Schema.Boolean),
  options: Schema.optional(Schema.Array(Schema.String))
})
export type SchemaField = typeof SchemaField.Type

export const BotStatus = Schema.Literal("ACTIVE", "PAUSED", "ARCHIVED")
export type BotStatus = typeof BotStatus.Type

export const IntakeBot = Schema.Struct({
  id: IntakeBotId,
  workspaceId: WorkspaceId,
  name: Schema.String,
  description: Schema.String,
  status: BotStatus,
  /** The short slug served as share_url: 8 letters and digits, unique. */
  shareSlug: Schema.String,
  schema: Schema.Array(SchemaField),
  schemaVersion: Schema.Number,
  createdAt: EpochMillis,
  updatedAt: EpochMillis
})
export type IntakeBot = typeof IntakeBot.Type

export type IntakeBotListItem = IntakeBot & { readonly submissionCount: number }

// ---------------------------------------------------------------- submissions

export const SubmissionStatus = Schema.Literal("IN_PROGRESS", "COMPLETED", "ABANDONED")
export type SubmissionStatus = typeof SubmissionStatus.Type

/** A stored field value: what the schema's types admit, or null for an omitted optional. */
export const FieldValue = Schema.Union(
  Schema.String,
  Schema.Number,
  Schema.Boolean,
  Schema.Array(Schema.String),
  Schema.Null
)
export type FieldValue = typeof FieldValue.Type

export const MessageRole = Schema.Literal("assistant", "user", "system")
export type MessageRole = typeof MessageRole.Type

export const Message = Schema.Struct({
  id: Schema.String,
  submissionId: SubmissionId,
  role: MessageRole,
  content: Schema.String,
  createdAt: EpochMillis
})
export type Message = typeof Message.Type

export const Submission = Schema.Struct({
  id: SubmissionId,
  workspaceId: WorkspaceId,
  intakeBotId: IntakeBotId,
  data: Schema.Record({ key: Schema.String, value: FieldValue }),
  status: SubmissionStatus,
  aiSummary: Schema.String,
  isTest: Schema.Boolean,
  fileCount: Schema.Number,
  schemaVersion: Schema.Number,
  createdAt: EpochMillis,
  updatedAt: EpochMillis
})
export type Submission = typeof Submission.Type

/**
 * A submission as a page of its bot's list shows it: with its message count, and its data as
 * the JSON text the store keeps (the answer passes it through unparsed; docs/performance.md,
 * Lists). The text is the JSON of a `Submission["data"]`, keys in the order
 * they were given.
 */
export type SubmissionListItem = Omit<Submission, "data"> & {
  readonly dataJson: string
  readonly messageCount: number
}
export type SubmissionDetail = Submission & { readonly messages: ReadonlyArray<Message> }

// ---------------------------------------------------------------- contacts

export const Contact = Schema.Struct({
  id: Schema.String,
  workspaceId: WorkspaceId,
  /** As first given; matched case-insensitively. */
  email: Schema.String,
  name: Schema.NullOr(Schema.String),
  createdAt: EpochMillis
})
export type Contact = typeof Contact.Type

// ---------------------------------------------------------------- events and webhooks

export const EventType = Schema.Literal("submission.completed", "contact.created", "webhook.disabled")
export type EventType = typeof EventType.Type
export const eventTypes: ReadonlyArray<EventType> = EventType.literals

/** Why the service disabled an endpoint: a 410 Gone, or failures for WEBHOOK_DISABLE_AFTER. */
export const WebhookDisabledReason = Schema.Literal("gone", "failing")
export type WebhookDisabledReason = typeof WebhookDisabledReason.Type

/**
 * An event in the outbox. It names its sources rather than carrying a payload, so that
 * a delivery (and a redelivery) rebuilds the payload from them, and knows when they are gone.
 * A `webhook.disabled` event's source is the endpoint (`webhookId`, with `disabledReason`);
 * its intakeBotId and submissionId are empty (docs/webhooks.md, "Webhook notifications").
 */
export const DomainEvent = Schema.Struct({
  id: Schema.String,
  workspaceId: WorkspaceId,
  type: EventType,
  intakeBotId: IntakeBotId,
  submissionId: SubmissionId,
  contactId: Schema.NullOr(Schema.String),
  webhookId: Schema.optional(WebhookId),
  disabledReason: Schema.optional(WebhookDisabledReason),
  /** The X-Request-Id of the request that raised it, when one did (docs/operations.md, Request ids). */
  requestId: Schema.optional(Schema.String),
  /**
   * The W3C traceparent of the request's span, when traces are on (docs/operations.md,
   * Traces): the delivery attempts of the event are spans of that trace.
   */
  traceParent: Schema.optional(Schema.String),
  createdAt: EpochMillis
})
export type DomainEvent = typeof DomainEvent.Type

export const WebhookStatus = Schema.Literal("active", "paused", "disabled")
export type WebhookStatus = typeof WebhookStatus.Type

export const WebhookEndpoint = Schema.Struct({
  id: WebhookId,
  workspaceId: WorkspaceId,
  url: Schema.String,
  events: Schema.Array(EventType),
  status: WebhookStatus,
  description: Schema.String,
  intakeBotIds: Schema.Array(IntakeBotId),
  /** whsec_…; returned to the client only by the create and rotate calls. */
  secret: Schema.String,
  /**
   * The secret before the last rotation, still signing deliveries (beside `secret`) until
   * `previousSecretExpiresAt`; null when there is none (docs/webhooks.md, "Secret rotation").
   */
  previousSecret: Schema.NullOr(Schema.String),
  previousSecretExpiresAt: Schema.NullOr(EpochMillis),
  lastDeliveryAt: Schema.NullOr(EpochMillis),
  lastDeliveryOk: Schema.NullOr(Schema.Boolean),
  consecutiveFails: Schema.Number,
  /** Start of the current failure streak; null while the last attempt succeeded. */
  failingSince: Schema.NullOr(EpochMillis),
  /** Deliveries per second the receiver asked for (1..1000); null is unlimited (docs/webhooks.md). */
  rateLimit: Schema.NullOr(Schema.Number),
  /**
   * The circuit breaker (docs/webhooks.md): set while the circuit is not closed; until then
   * it is open (nothing sent), from then half open (one probe at a time).
   */
  circuitOpenUntil: Schema.NullOr(EpochMillis),
  createdAt: EpochMillis,
  updatedAt: EpochMillis
})
export type WebhookEndpoint = typeof WebhookEndpoint.Type

/** `recover`: queued by POST /webhooks/:id/recover (docs/webhooks.md). */
export const DeliveryTrigger = Schema.Literal("event", "retry", "test", "redeliver", "recover")
export type DeliveryTrigger = typeof DeliveryTrigger.Type
/**
 * `skipped`: recorded, never sent, never retried: the event occurred while the endpoint was
 * paused or disabled (`error` says which); POST /webhooks/:id/recover queues it again.
 */
export const DeliveryStatus = Schema.Literal("pending", "succeeded", "failed", "skipped")
export type DeliveryStatus = typeof DeliveryStatus.Type

export const Delivery = Schema.Struct({
  id: DeliveryId,
  webhookId: WebhookId,
  eventId: Schema.String,
  eventType: Schema.String,
  attempt: Schema.Number,
  trigger: DeliveryTrigger,
  status: DeliveryStatus,
  responseStatus: Schema.NullOr(Schema.Number),
  responseBody: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  durationMs: Schema.NullOr(Schema.Number),
  /**
   * A failed attempt: when its retry is due. A pending one, as the log reads it: when it is
   * due (a claimed one keeps the time it was due); the queue itself keeps that apart.
   */
  nextRetryAt: Schema.NullOr(EpochMillis),
  /** When the request left for the receiver; null while pending and for an attempt never sent. */
  sentAt: Schema.NullOr(EpochMillis),
  /** When the attempt was recorded: an event's first attempt with the event, a retry when it was scheduled. */
  createdAt: EpochMillis,
  /**
   * The log's reads (list, get) and a redelivery: the X-Request-Id of the request that raised
   * the event, read from the event (docs/operations.md, Request ids); absent when none did.
   */
  requestId: Schema.optional(Schema.String)
})
export type Delivery = typeof Delivery.Type

/** Filters of an endpoint's delivery log; null means any. */
export interface DeliveryFilter {
  readonly status: DeliveryStatus | null
  readonly eventType: string | null
  /** The attempts of the events raised by this submission (submission.completed, contact.created). */
  readonly submissionId: SubmissionId | null
  readonly createdAfter: EpochMillis | null
  readonly createdBefore: EpochMillis | null
}

export const noDeliveryFilter: DeliveryFilter = {
  status: null,
  eventType: null,
  submissionId: null,
  createdAfter: null,
  createdBefore: null
}

/** An event a recovery queues again, with the attempts its endpoint already had of it. */
export interface RecoverableEvent {
  readonly event: DomainEvent
  /** The highest attempt number of this event on the endpoint, 0 when none. */
  readonly attemptsMade: number
}

/** A window of event occurrence times, both ends inclusive. */
export interface OccurrenceWindow {
  readonly since: EpochMillis
  readonly until: EpochMillis
}

// ---------------------------------------------------------------- model summaries

/**
 * A submission waiting for the model's summary (docs/summaries.md): queued in
 * the unit of work that stores the submission, done by whichever server or worker claims it.
 */
export interface SummaryJob {
  readonly submissionId: SubmissionId
  readonly workspaceId: WorkspaceId
  readonly intakeBotId: IntakeBotId
  /** Model calls already made for it. */
  readonly attempts: number
  /** The submission.completed attempts held back until this summary is stored (or the wait ends). */
  readonly heldDeliveryIds: ReadonlyArray<DeliveryId>
  readonly createdAt: EpochMillis
}

// ---------------------------------------------------------------- lists

/** A position in a newest-first list: the last item seen. */
export interface ListPosition {
  readonly createdAt: EpochMillis
  readonly id: string
}

/** Keyset page request: up to `limit` items strictly after `after` in (createdAt desc, id desc) order. */
export interface PageRequest {
  readonly limit: number
  readonly after: ListPosition | null
}

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly hasMore: boolean
}

/** Inclusive bounds of the submissions list. */
export interface CreatedRange {
  readonly createdAfter: EpochMillis | null
  readonly createdBefore: EpochMillis | null
}
