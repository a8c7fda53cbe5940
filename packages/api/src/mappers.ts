/** Pure mappers from the domain's records to the wire objects of wire.ts. */
import {
  type ApiKey,
  type Delivery,
  DeliveryIsolation,
  type IntakeBot,
  type IntakeBotListItem,
  type IssuedApiKey,
  type Message,
  type Recovery,
  type SchemaField,
  type SubmissionDetail,
  type SubmissionListItem,
  type WebhookEndpoint,
  WireShapes,
  type Workspace
} from "@intake/domain/internal"
import type { SubmissionListWire } from "./v1.js"
import type {
  ApiKeyWire,
  DeliveryWire,
  IntakeBotListItemWire,
  IntakeBotWire,
  IssuedApiKeyWire,
  RecoveryWire,
  SchemaFieldWire,
  SubmissionWire,
  WebhookWire,
  WebhookWithSecretWire,
  WorkspaceWire
} from "./wire.js"
import { WireJson } from "./wire-json.js"

/** Epoch milliseconds as ISO 8601 UTC with exactly three fraction digits. */
export const isoTimestamp = WireShapes.isoTimestamp

const isoOrNull = WireShapes.isoOrNull

export const schemaFieldToWire = (field: SchemaField): SchemaFieldWire => ({
  name: field.name,
  label: field.label,
  type: field.type,
  ...(field.required === undefined ? {} : { required: field.required }),
  ...(field.options === undefined ? {} : { options: field.options })
})

export const schemaFieldSummary = (field: SchemaField) => ({
  name: field.name,
  label: field.label,
  type: field.type
})

export const intakeBotListItemToWire = (bot: IntakeBotListItem): IntakeBotListItemWire => ({
  id: bot.id,
  name: bot.name,
  status: bot.status,
  submission_count: bot.submissionCount,
  created_at: isoTimestamp(bot.createdAt),
  updated_at: isoTimestamp(bot.updatedAt)
})

export const intakeBotToWire = (bot: IntakeBot): IntakeBotWire => ({
  id: bot.id,
  name: bot.name,
  status: bot.status,
  description: bot.description,
  share_url: bot.shareSlug,
  schema: bot.schema.map(schemaFieldToWire),
  created_at: isoTimestamp(bot.createdAt),
  updated_at: isoTimestamp(bot.updatedAt)
})

export const messageToWire = (message: Message) => WireShapes.messageShape(message)

/** A number as JSON.stringify writes it. */
const jsonNumber = (value: number) => (Number.isFinite(value) ? String(value) : "null")

/** A character JSON.stringify escapes in a string (a surrogate half, alone or not, is looked at). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/

/**
 * A string's JSON text without its quotes: the string itself when nothing in it needs
 * escaping, else what JSON.stringify writes between the quotes.
 */
const jsonStringContent = (value: string) =>
  NEEDS_ESCAPE.test(value) ? JSON.stringify(value).slice(1, -1) : value

/** The parts putSubmissionListItemJson puts for one item. */
const ITEM_PARTS = 17 + 2 * WireShapes.ISO_TIMESTAMP_PIECES

/**
 * Puts a list item (SubmissionListItemWire) as JSON into `parts` at `at` (ITEM_PARTS of
 * them; the first one opens the item with the comma before it, unless it is the page's
 * first), written as JSON.stringify would write its wire object, field for field in the
 * schema's order, but with the data's stored JSON text in place: parsing fifty data objects
 * and serializing them again cost about a tenth of a page's CPU (docs/performance.md, Lists).
 */
const putSubmissionListItemJson = (
  parts: Array<string>,
  at: number,
  submission: SubmissionListItem,
  first: boolean
) => {
  parts[at] = first ? '{"id":"' : ',{"id":"'
  parts[at + 1] = jsonStringContent(submission.id)
  parts[at + 2] = '","data":'
  parts[at + 3] = submission.dataJson
  parts[at + 4] = ',"status":"'
  parts[at + 5] = jsonStringContent(submission.status)
  parts[at + 6] = '","ai_summary":"'
  parts[at + 7] = jsonStringContent(submission.aiSummary)
  parts[at + 8] = submission.isTest ? '","is_test":true,"file_count":' : '","is_test":false,"file_count":'
  parts[at + 9] = jsonNumber(submission.fileCount)
  parts[at + 10] = ',"message_count":'
  parts[at + 11] = jsonNumber(submission.messageCount)
  parts[at + 12] = ',"schema_version":'
  parts[at + 13] = jsonNumber(submission.schemaVersion)
  parts[at + 14] = ',"created_at":"'
  WireShapes.putIsoTimestamp(parts, at + 15, submission.createdAt)
  const updated = at + 15 + WireShapes.ISO_TIMESTAMP_PIECES
  parts[updated] = '","updated_at":"'
  WireShapes.putIsoTimestamp(parts, updated + 1, submission.updatedAt)
  parts[updated + 1 + WireShapes.ISO_TIMESTAMP_PIECES] = '"}'
}

/**
 * A page of a bot's submissions (SubmissionList's data) as JSON, its items by
 * putSubmissionListItemJson. The page is written as parts in an array of its final length,
 * joined once: a template string per item and per timestamp cost about three times the
 * page's size in short-lived strings (docs/performance.md, Lists).
 */
export const submissionListJson = (page: {
  readonly items: ReadonlyArray<SubmissionListItem>
  readonly schema: ReadonlyArray<SchemaField>
  readonly pagination: SubmissionListWire["pagination"]
}): WireJson<SubmissionListWire> => {
  const items = page.items
  const parts = new Array<string>(items.length * ITEM_PARTS + 3)
  parts[0] = '{"submissions":['
  for (let index = 0; index < items.length; index++)
    putSubmissionListItemJson(parts, 1 + index * ITEM_PARTS, items[index]!, index === 0)
  const end = 1 + items.length * ITEM_PARTS
  parts[end] = '],"schema":'
  parts[end + 1] = JSON.stringify(page.schema.map(schemaFieldSummary))
  parts[end + 2] = `,"pagination":${JSON.stringify(page.pagination)}}`
  return new WireJson(parts.join(""))
}

/** The single-submission shape, shared with the webhook payloads (one definition, in the domain). */
export const submissionToWire = (submission: SubmissionDetail): SubmissionWire =>
  WireShapes.submissionShape(submission)

export const createdSubmissionToWire = (submission: SubmissionDetail) => ({
  id: submission.id,
  status: submission.status,
  created_at: isoTimestamp(submission.createdAt)
})

/** Without the secret: every answer but the create one. `now` tells the circuit's state. */
export const webhookToWire = (endpoint: WebhookEndpoint, now: number): WebhookWire => ({
  id: endpoint.id,
  url: endpoint.url,
  events: endpoint.events,
  status: endpoint.status,
  description: endpoint.description,
  intake_bot_ids: endpoint.intakeBotIds,
  last_delivery_at: isoOrNull(endpoint.lastDeliveryAt),
  last_delivery_ok: endpoint.lastDeliveryOk,
  consecutive_fails: endpoint.consecutiveFails,
  rate_limit: endpoint.rateLimit,
  circuit: DeliveryIsolation.circuitState(endpoint, now),
  circuit_retry_at: isoOrNull(endpoint.circuitOpenUntil),
  previous_secret_expires_at: isoOrNull(endpoint.previousSecretExpiresAt),
  created_at: isoTimestamp(endpoint.createdAt),
  updated_at: isoTimestamp(endpoint.updatedAt)
})

export const webhookWithSecretToWire = (endpoint: WebhookEndpoint, now: number): WebhookWithSecretWire => ({
  ...webhookToWire(endpoint, now),
  secret: endpoint.secret
})

export const deliveryToWire = (delivery: Delivery): DeliveryWire => ({
  id: delivery.id,
  webhook_id: delivery.webhookId,
  event_id: delivery.eventId,
  event_type: delivery.eventType,
  attempt: delivery.attempt,
  trigger: delivery.trigger,
  status: delivery.status,
  response_status: delivery.responseStatus,
  response_body: delivery.responseBody,
  error: delivery.error,
  duration_ms: delivery.durationMs,
  next_retry_at: isoOrNull(delivery.nextRetryAt),
  sent_at: isoOrNull(delivery.sentAt),
  created_at: isoTimestamp(delivery.createdAt),
  request_id: delivery.requestId ?? null
})

export const workspaceToWire = (workspace: Workspace): WorkspaceWire => ({
  id: workspace.id,
  name: workspace.name,
  plan: workspace.plan,
  status: workspace.status,
  monthly_submission_quota: workspace.monthlySubmissionQuota,
  rate_limit_per_minute: workspace.rateLimitPerMinute,
  created_at: isoTimestamp(workspace.createdAt),
  updated_at: isoTimestamp(workspace.updatedAt)
})

/** Never the key: only its hash is stored, and it is not part of the wire object. */
export const apiKeyToWire = (key: ApiKey): ApiKeyWire => ({
  id: key.id,
  workspace_id: key.workspaceId,
  name: key.name,
  scopes: key.scopes,
  expires_at: isoOrNull(key.expiresAt),
  last_used_at: isoOrNull(key.lastUsedAt),
  revoked_at: isoOrNull(key.revokedAt),
  created_at: isoTimestamp(key.createdAt)
})

export const issuedApiKeyToWire = (issued: IssuedApiKey): IssuedApiKeyWire => ({
  id: issued.apiKey.id,
  key: issued.key,
  scopes: issued.apiKey.scopes,
  expires_at: isoOrNull(issued.apiKey.expiresAt),
  created_at: isoTimestamp(issued.apiKey.createdAt)
})

export const recoveryToWire = (recovery: Recovery): RecoveryWire => ({
  queued: recovery.queued,
  since: isoTimestamp(recovery.since),
  until: isoTimestamp(recovery.until)
})
