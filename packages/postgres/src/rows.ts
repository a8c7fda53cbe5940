/**
 * The row of each table as the driver returns it (pg and PGlite alike): the one place where
 * a column's TypeScript type is declared. The repositories read their rows through these
 * interfaces, typed by the statement's step or `sql<...>` call, never by casts at each use.
 * Below them, the mappings of the rows several repositories read to domain values, shared by
 * the repository of the table and the reads that join it (dispatch-sources.ts).
 */
import type {
  ApiKeyId,
  Contact,
  Delivery,
  DeliveryId,
  DomainEvent,
  IntakeBot,
  IntakeBotId,
  Message,
  Submission,
  SubmissionId,
  WebhookEndpoint,
  WebhookId,
  Workspace,
  WorkspaceId
} from "@intake/domain"
import { fromJson, toMillis, toMillisOrNull, toNumber } from "./storage.js"

/** A timestamptz: a Date from the driver; its text inside a json column (dispatch-sources.ts). */
export type Timestamp = Date | string
/** An int8, a count or a numeric: text from the driver, a number inside a json column (toNumber). */
export type Int8 = string | number
/** A json column: parsed by the driver, or its text (fromJson). */
export type Json = unknown

export interface WorkspaceRow {
  readonly id: WorkspaceId
  readonly name: string
  readonly plan: Workspace["plan"]
  readonly status: Workspace["status"]
  readonly monthly_submission_quota: number | null
  readonly rate_limit_per_minute: number | null
  readonly created_at: Timestamp
  readonly updated_at: Timestamp
}

export interface ApiKeyRow {
  readonly id: ApiKeyId
  readonly workspace_id: WorkspaceId
  readonly name: string | null
  readonly key_hash: string
  readonly scopes: Json
  readonly expires_at: Timestamp | null
  readonly revoked_at: Timestamp | null
  readonly last_used_at: Timestamp | null
  readonly created_at: Timestamp
}

export interface BotRow {
  readonly id: IntakeBotId
  readonly workspace_id: WorkspaceId
  readonly name: string
  readonly description: string
  readonly status: IntakeBot["status"]
  readonly share_slug: string
  readonly schema: Json
  readonly schema_version: number
  readonly created_at: Timestamp
  readonly updated_at: Timestamp
}

export interface SubmissionRow {
  readonly id: SubmissionId
  readonly workspace_id: WorkspaceId
  readonly intake_bot_id: IntakeBotId
  readonly status: Submission["status"]
  readonly ai_summary: string
  readonly is_test: boolean
  readonly file_count: number
  readonly schema_version: number
  readonly data: Json
  /** NULL for rows written before migration 13: counted on read. */
  readonly message_count: number | null
  readonly created_at: Timestamp
  readonly updated_at: Timestamp
}

export interface MessageRow {
  readonly id: string
  readonly submission_id: SubmissionId
  readonly role: Message["role"]
  readonly content: string
  readonly created_at: Timestamp
}

export interface ContactRow {
  readonly id: string
  readonly workspace_id: WorkspaceId
  readonly email: string
  readonly name: string | null
  readonly created_at: Timestamp
}

export interface EventRow {
  readonly id: string
  readonly workspace_id: WorkspaceId
  readonly type: DomainEvent["type"]
  readonly intake_bot_id: IntakeBotId
  readonly submission_id: SubmissionId
  readonly contact_id: string | null
  readonly webhook_id?: WebhookId | null
  readonly disabled_reason?: NonNullable<DomainEvent["disabledReason"]> | null
  readonly request_id?: string | null
  readonly trace_parent?: string | null
  readonly created_at: Timestamp
}

export interface WebhookEndpointRow {
  readonly id: WebhookId
  readonly workspace_id: WorkspaceId
  readonly url: string
  readonly events: Json
  readonly status: WebhookEndpoint["status"]
  readonly description: string
  readonly intake_bot_ids: Json
  readonly secret: string
  /** Absent from rows read before its migration ran (a rolling deploy). */
  readonly previous_secret?: string | null
  readonly previous_secret_expires_at?: Timestamp | null
  readonly last_delivery_at: Timestamp | null
  readonly last_delivery_ok: boolean | null
  readonly consecutive_fails: number
  readonly failing_since: Timestamp | null
  readonly rate_limit: number | null
  readonly circuit_open_until: Timestamp | null
  readonly created_at: Timestamp
  readonly updated_at: Timestamp
}

export interface DeliveryRow {
  readonly id: DeliveryId
  readonly webhook_id: WebhookId
  readonly event_id: string
  readonly event_type: string
  readonly attempt: number
  readonly trigger: Delivery["trigger"]
  readonly status: Delivery["status"]
  readonly response_status: number | null
  readonly response_body: string | null
  readonly error: string | null
  readonly duration_ms: number | null
  readonly next_retry_at: Timestamp | null
  readonly sent_at: Timestamp | null
  readonly due_at: Timestamp | null
  readonly created_at: Timestamp
}

/** An attempt read for the log: with the request id of its event, joined by its primary key. */
export interface LoggedDeliveryRow extends DeliveryRow {
  readonly request_id: string | null
}

export interface SummaryJobRow {
  readonly submission_id: SubmissionId
  readonly workspace_id: WorkspaceId
  readonly intake_bot_id: IntakeBotId
  readonly attempts: number
  readonly held_delivery_ids: Json
  readonly due_at: Timestamp
  readonly created_at: Timestamp
}

/** A bot with its workspace and endpoints (submissions.ts, intakeTargetStatement). */
export interface IntakeTargetRow extends BotRow {
  /** A WorkspaceRow as json. */
  readonly workspace: Json
  /** The workspace's WebhookEndpointRows as a json array. */
  readonly endpoints: Json
}

/** A bot of the list, with its submission count. */
export interface BotListRow extends BotRow {
  readonly submission_count: Int8
}

/** A submission of the list: its data as text, its messages counted. */
export interface SubmissionListRow extends Omit<SubmissionRow, "data"> {
  readonly data_json: string
}

/** What a contact's find-or-create answers (intake_contact_for, migration 11). */
export interface ContactForRow {
  readonly contact_id: string
  readonly created: boolean
}

/** A leased attempt's dispatch sources, each a row of its table as json (dispatch-sources.ts). */
export interface DispatchSourcesRow {
  readonly delivery_id: DeliveryId
  readonly endpoint: Json
  readonly workspace: Json
  readonly event: Json
  readonly submission: Json
  /** The submission's MessageRows as a json array. */
  readonly messages?: Json
  readonly bot: Json
  readonly contact: Json
}

/** An attempt as a claim leases it: its row, with its dispatch sources. */
export interface LeasedDeliveryRow extends DeliveryRow, DispatchSourcesRow {}

/** An endpoint's backlog at a time (deliveries.ts, backlogsStatement). */
export interface BacklogRow {
  readonly webhook_id: WebhookId
  readonly workspace_id: WorkspaceId | null
  readonly waiting: Int8
  readonly consecutive_fails: number | null
  readonly circuit_open_until: Timestamp | null
  readonly rate_limit: number | null
  readonly next_send_at: Timestamp | null
  readonly in_flight: Int8
  readonly head_due_at: Timestamp | null
  readonly first_lease_end: Timestamp | null
}

/** An event a recovery would queue, with the attempts the endpoint already has of it. */
export interface RecoverableEventRow extends EventRow {
  readonly attempts_made: Int8
}

/** A row that names one id (`RETURNING id`, `SELECT id`). */
export interface IdRow {
  readonly id: string
}

/** A count (`count(*) AS current`). */
export interface CurrentRow {
  readonly current: Int8
}

export const botFromRow = (row: BotRow): IntakeBot => ({
  id: row.id,
  workspaceId: row.workspace_id,
  name: row.name,
  description: row.description,
  status: row.status,
  shareSlug: row.share_slug,
  schema: fromJson<IntakeBot["schema"]>(row.schema),
  schemaVersion: toNumber(row.schema_version),
  createdAt: toMillis(row.created_at),
  updatedAt: toMillis(row.updated_at)
})

/**
 * A submission row's columns but its data; `workspaceId` and `intakeBotId` when the query
 * knew them and did not select them.
 */
export const submissionFieldsFromRow = (
  row: Omit<SubmissionRow, "data" | "message_count">,
  workspaceId = row.workspace_id,
  intakeBotId = row.intake_bot_id
): Omit<Submission, "data"> => ({
  id: row.id,
  workspaceId,
  intakeBotId,
  status: row.status,
  aiSummary: row.ai_summary,
  isTest: row.is_test,
  fileCount: toNumber(row.file_count),
  schemaVersion: toNumber(row.schema_version),
  createdAt: toMillis(row.created_at),
  updatedAt: toMillis(row.updated_at)
})

/** A submission row, its data parsed. */
export const submissionFromRow = (
  row: Omit<SubmissionRow, "message_count">,
  workspaceId?: WorkspaceId,
  intakeBotId?: IntakeBotId
): Submission =>
  Object.assign(submissionFieldsFromRow(row, workspaceId, intakeBotId), {
    data: fromJson<Submission["data"]>(row.data)
  })

export const messageFromRow = (row: MessageRow): Message => ({
  id: row.id,
  submissionId: row.submission_id,
  role: row.role,
  content: row.content,
  createdAt: toMillis(row.created_at)
})

export const contactFromRow = (row: ContactRow): Contact => ({
  id: row.id,
  workspaceId: row.workspace_id,
  email: row.email,
  name: row.name,
  createdAt: toMillis(row.created_at)
})

/** An outbox event. */
export const eventFromRow = (row: EventRow): DomainEvent => ({
  id: row.id,
  workspaceId: row.workspace_id,
  type: row.type,
  intakeBotId: row.intake_bot_id,
  submissionId: row.submission_id,
  contactId: row.contact_id,
  ...(row.webhook_id === null || row.webhook_id === undefined ? {} : { webhookId: row.webhook_id }),
  ...(row.disabled_reason === null || row.disabled_reason === undefined
    ? {}
    : { disabledReason: row.disabled_reason }),
  ...(row.request_id === null || row.request_id === undefined ? {} : { requestId: row.request_id }),
  ...(row.trace_parent === null || row.trace_parent === undefined ? {} : { traceParent: row.trace_parent }),
  createdAt: toMillis(row.created_at)
})

export const deliveryFromRow = (row: DeliveryRow): Delivery => ({
  id: row.id,
  webhookId: row.webhook_id,
  eventId: row.event_id,
  eventType: row.event_type,
  attempt: toNumber(row.attempt),
  trigger: row.trigger,
  status: row.status,
  responseStatus: row.response_status === null ? null : toNumber(row.response_status),
  responseBody: row.response_body,
  error: row.error,
  durationMs: row.duration_ms === null ? null : toNumber(row.duration_ms),
  nextRetryAt: toMillisOrNull(row.next_retry_at),
  sentAt: toMillisOrNull(row.sent_at),
  createdAt: toMillis(row.created_at)
})

/**
 * An attempt as the log shows it: a pending one with its due time as `nextRetryAt`, and the
 * request id of its event (docs/operations.md, Request ids). The log's reads join the event
 * by its primary key, one lookup a row of the page; none when no request raised the event,
 * or once it is purged.
 */
export const loggedFromRow = (row: LoggedDeliveryRow): Delivery => {
  const delivery = deliveryFromRow(row)
  const requestId = typeof row.request_id === "string" ? { requestId: row.request_id } : {}
  return delivery.status === "pending" && row.due_at !== null
    ? { ...delivery, ...requestId, nextRetryAt: toMillis(row.due_at) }
    : { ...delivery, ...requestId }
}
