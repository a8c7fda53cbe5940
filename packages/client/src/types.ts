/**
 * The wire types of Intake API v1, as they travel (snake_case, ISO 8601 timestamps). Written
 * by hand so the client has no dependency; test/contract.test.ts checks each against the
 * contract in packages/api, so a change there fails the build here.
 */

export type Timestamp = string

export type Scope =
  | "read:intake-bots"
  | "write:intake-bots"
  | "read:submissions"
  | "read:contacts"
  | "read:records"
  | "manage:webhooks"

export interface Pagination {
  readonly has_more: boolean
  readonly next_cursor: string | null
}

// ---------------------------------------------------------------- intake bots

export type BotStatus = "ACTIVE" | "PAUSED" | "ARCHIVED"
export type FieldType =
  | "text"
  | "long_text"
  | "email"
  | "phone"
  | "number"
  | "url"
  | "date"
  | "select"
  | "multi_select"
  | "boolean"

export interface SchemaField {
  readonly name: string
  readonly label: string
  readonly type: FieldType
  /** Absent means not required. */
  readonly required?: boolean | undefined
  /** For `select` and `multi_select`. */
  readonly options?: ReadonlyArray<string> | undefined
}

export interface IntakeBotListItem {
  readonly id: string
  readonly name: string
  readonly status: BotStatus
  readonly submission_count: number
  readonly created_at: Timestamp
  readonly updated_at: Timestamp
}

export interface IntakeBot {
  readonly id: string
  readonly name: string
  readonly status: BotStatus
  readonly description: string
  readonly share_url: string
  readonly schema: ReadonlyArray<SchemaField>
  readonly created_at: Timestamp
  readonly updated_at: Timestamp
}

export interface IntakeBotListPage {
  readonly intake_bots: ReadonlyArray<IntakeBotListItem>
  readonly pagination: Pagination
}

// ---------------------------------------------------------------- submissions

export type SubmissionStatus = "IN_PROGRESS" | "COMPLETED" | "ABANDONED"
export type FieldValue = string | number | boolean | ReadonlyArray<string> | null

export interface Message {
  readonly id: string
  readonly role: string
  readonly content: string
  readonly created_at: Timestamp
}

export interface SubmissionListItem {
  readonly id: string
  readonly data: { readonly [field: string]: FieldValue }
  readonly status: SubmissionStatus
  readonly ai_summary: string
  readonly is_test: boolean
  readonly file_count: number
  readonly message_count: number
  readonly schema_version: number
  readonly created_at: Timestamp
  readonly updated_at: Timestamp
}

export interface Submission {
  readonly id: string
  readonly data: { readonly [field: string]: FieldValue }
  readonly status: SubmissionStatus
  readonly ai_summary: string
  readonly is_test: boolean
  readonly file_count: number
  readonly schema_version: number
  readonly intake_bot_id: string
  readonly messages: ReadonlyArray<Message>
  readonly created_at: Timestamp
  readonly updated_at: Timestamp
}

export interface SchemaFieldSummary {
  readonly name: string
  readonly label: string
  readonly type: FieldType
}

export interface SubmissionListPage {
  readonly submissions: ReadonlyArray<SubmissionListItem>
  /** The bot's current field schema (name, label, type). */
  readonly schema: ReadonlyArray<SchemaFieldSummary>
  readonly pagination: Pagination
}

export interface CreatedSubmission {
  readonly id: string
  readonly status: SubmissionStatus
  readonly created_at: Timestamp
}

export interface CreateSubmissionBody {
  /** Field values by field name, checked against the bot's schema. */
  readonly data: { readonly [field: string]: unknown }
  /** `COMPLETED` (default) enforces required fields and sends `submission.completed`. */
  readonly status?: "IN_PROGRESS" | "COMPLETED"
  readonly is_test?: boolean
}

// ---------------------------------------------------------------- webhooks

/** What an endpoint can subscribe to. */
export type WebhookEventName = "submission.completed" | "contact.created" | "webhook.disabled"
export type WebhookStatus = "active" | "paused" | "disabled"

export interface Webhook {
  readonly id: string
  readonly url: string
  readonly events: ReadonlyArray<WebhookEventName>
  readonly status: WebhookStatus
  readonly description: string
  readonly intake_bot_ids: ReadonlyArray<string>
  readonly last_delivery_at: Timestamp | null
  readonly last_delivery_ok: boolean | null
  readonly consecutive_fails: number
  /** Deliveries per second the receiver asked for (1 to 1000); null: no limit. */
  readonly rate_limit: number | null
  /** The circuit breaker: open after repeated failures (attempts stay queued), half open while a probe may go. */
  readonly circuit: CircuitState
  /** While the circuit is not closed: when its cool-down ends (or ended). */
  readonly circuit_retry_at: Timestamp | null
  /** Until when the secret replaced by the last rotation still signs beside the current one. */
  readonly previous_secret_expires_at: Timestamp | null
  readonly created_at: Timestamp
  readonly updated_at: Timestamp
}

export type CircuitState = "closed" | "open" | "half_open"

/** The create and rotate answers: the signing secret (`whsec_…`), shown this once. */
export interface WebhookWithSecret extends Webhook {
  readonly secret: string
}

export interface WebhookListPage {
  readonly webhooks: ReadonlyArray<Webhook>
  readonly pagination: Pagination
}

export interface CreateWebhookBody {
  readonly url: string
  readonly events: ReadonlyArray<WebhookEventName>
  readonly description?: string
  /** Only these bots' events; all bots when omitted. */
  readonly intake_bot_ids?: ReadonlyArray<string>
  /** At most this many deliveries per second (1 to 1000); null or omitted: no limit. */
  readonly rate_limit?: number | null
}

export interface UpdateWebhookBody {
  readonly events?: ReadonlyArray<WebhookEventName>
  readonly description?: string
  readonly status?: "active" | "paused"
  readonly intake_bot_ids?: ReadonlyArray<string>
  /** At most this many deliveries per second (1 to 1000); null: no limit. */
  readonly rate_limit?: number | null
}

export interface RotateWebhookSecretBody {
  /** 0 (the old secret stops at once) to 604800 (7 days); 86400 (24 h) when omitted. */
  readonly grace_period_seconds?: number
}

export interface Deleted {
  readonly id: string
  readonly deleted: true
}

export type DeliveryTrigger = "event" | "retry" | "test" | "redeliver" | "recover"
/** `skipped`: the event occurred while the endpoint was paused or disabled; never sent (recover sends it). */
export type DeliveryStatus = "pending" | "succeeded" | "failed" | "skipped"

export interface Delivery {
  readonly id: string
  readonly webhook_id: string
  readonly event_id: string
  readonly event_type: string
  readonly attempt: number
  readonly trigger: DeliveryTrigger
  readonly status: DeliveryStatus
  readonly response_status: number | null
  readonly response_body: string | null
  readonly error: string | null
  readonly duration_ms: number | null
  /** Failed: when its retry is due; pending: when it is due. */
  readonly next_retry_at: Timestamp | null
  /** When the request left for the receiver; null while pending and for an attempt never sent. */
  readonly sent_at: Timestamp | null
  readonly created_at: Timestamp
  /** The X-Request-Id of the request that raised the event; null when none did (a test, a notice). */
  readonly request_id: string | null
}

export interface DeliveryListPage {
  readonly deliveries: ReadonlyArray<Delivery>
  readonly pagination: Pagination
}

export interface RecoverWebhookBody {
  /** ISO 8601 date-time: the first occurrence time to recover. */
  readonly since: string
  /** ISO 8601 date-time; now when omitted. */
  readonly until?: string
}

/** What a recovery queued, for the window it covered. */
export interface Recovery {
  readonly queued: number
  readonly since: Timestamp
  readonly until: Timestamp
}

// ---------------------------------------------------------------- list parameters

export interface ListParams {
  /** 1 to 100 (default 50). */
  readonly limit?: number
  /** The `next_cursor` of the previous page. */
  readonly cursor?: string
}

export interface SubmissionListParams extends ListParams {
  /** ISO 8601 date-time. */
  readonly created_after?: string
  readonly created_before?: string
}

/** The delivery log's filters; the cursor works only with the filters it was made with. */
export interface DeliveryListParams extends SubmissionListParams {
  readonly status?: DeliveryStatus
  readonly event_type?: WebhookEventName | "webhook.test"
  /** The attempts of the events this submission raised. */
  readonly submission_id?: string
}

// ---------------------------------------------------------------- webhook events

export interface SubmissionCompletedEvent {
  readonly id: string
  readonly type: "submission.completed"
  readonly timestamp: Timestamp
  readonly data: {
    readonly submission: Submission
    readonly intake_bot: { readonly id: string; readonly name: string }
  }
}

export interface ContactCreatedEvent {
  readonly id: string
  readonly type: "contact.created"
  readonly timestamp: Timestamp
  readonly data: {
    readonly contact: {
      readonly id: string
      readonly email: string
      readonly name: string | null
      readonly created_at: Timestamp
    }
    readonly submission_id: string
  }
}

export interface WebhookTestEvent {
  readonly id: string
  readonly type: "webhook.test"
  readonly timestamp: Timestamp
  readonly data: { readonly webhook_id: string }
}

/** The service disabled another endpoint of the workspace (410 Gone, or failing too long). */
export interface WebhookDisabledEvent {
  readonly id: string
  readonly type: "webhook.disabled"
  readonly timestamp: Timestamp
  readonly data: {
    readonly webhook: {
      readonly id: string
      readonly url: string
      readonly description: string
      readonly events: ReadonlyArray<WebhookEventName>
      readonly intake_bot_ids: ReadonlyArray<string>
      readonly status: WebhookStatus
      readonly consecutive_fails: number
      readonly last_delivery_at: Timestamp | null
      readonly created_at: Timestamp
    }
    readonly reason: "gone" | "failing"
    readonly disabled_at: Timestamp
  }
}

/** Any event a webhook endpoint receives; `type` tells which. */
export type WebhookEvent =
  | SubmissionCompletedEvent
  | ContactCreatedEvent
  | WebhookDisabledEvent
  | WebhookTestEvent

// ---------------------------------------------------------------- errors

export interface ValidationIssue {
  readonly path: string
  readonly message: string
}

/** Every error the API answers, discriminated by `code`, each with its own `details`. */
export type ApiError =
  | {
      readonly code: "validation_failed"
      readonly message: string
      readonly details: {
        readonly issues: ReadonlyArray<ValidationIssue>
        /** How many issues there were when more than `issues` lists (at most 100 are listed). */
        readonly issue_count?: number
        readonly unknown_keys?: ReadonlyArray<string>
        /** How many unknown keys there were when more than `unknown_keys` lists. */
        readonly unknown_key_count?: number
      }
    }
  | { readonly code: "authentication_required"; readonly message: string }
  | {
      readonly code: "insufficient_scopes"
      readonly message: string
      readonly details: { readonly required: ReadonlyArray<Scope>; readonly granted: ReadonlyArray<Scope> }
    }
  | {
      readonly code: "feature_not_available"
      readonly message: string
      readonly details: { readonly feature: "api_access" }
    }
  | { readonly code: "workspace_archived"; readonly message: string }
  | {
      readonly code: "resource_not_found"
      readonly message: string
      readonly details: { readonly resource: "intake_bot" | "submission" | "webhook" | "delivery" | "route" }
    }
  | { readonly code: "conflict"; readonly message: string }
  | { readonly code: "idempotency_conflict"; readonly message: string }
  | {
      readonly code: "rate_limit_exceeded"
      readonly message: string
      readonly details: { readonly retry_after: number }
    }
  | {
      readonly code: "plan_limit_exceeded"
      readonly message: string
      readonly details: {
        readonly resource: "submissions" | "api_keys" | "webhook_endpoints"
        readonly current: number
        readonly max: number
      }
    }
  | { readonly code: "internal_error"; readonly message: string }

export type ErrorCode = ApiError["code"]
