/**
 * The wire format of API v1: snake_case fields, ISO 8601 timestamps with three fraction
 * digits, and the response envelope. These schemas describe what travels; the domain's
 * records are mapped onto them in mappers.ts. Value sets (scopes, statuses, field types)
 * are the domain's own literals, never restated here.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import {
  BotStatus,
  Count,
  DeliveryStatus,
  DeliveryTrigger,
  type ErrorCode,
  EventType,
  errorCatalog,
  FieldType,
  FieldValue,
  Plan,
  SchemaField,
  Scope,
  SubmissionStatus,
  WebhookStatus,
  WorkspaceStatus
} from "@intake/domain"
import { Schema } from "effect"
import { oneOf } from "./params.js"

/** `2026-11-21T10:00:00.000Z`: what `new Date(ms).toISOString()` renders. */
export const Timestamp = Schema.String.annotations({
  identifier: "Timestamp",
  description: "ISO 8601 UTC date-time with millisecond precision",
  examples: ["2026-11-21T10:00:00.000Z"]
})

/** A count or another whole number: `integer` in the document, not `number` (the domain's, shared by the error catalog). */
export { Count }

/** An HTTP status code or a number of milliseconds: a whole number. */
const WholeNumber = Schema.Int.annotations({ jsonSchema: { type: "integer" } })

/** A literal union that reports one issue naming every allowed value (params.ts). */
export { oneOf }

// ---------------------------------------------------------------- envelope

/**
 * `{ success: true, data }` on the wire, `data` in code. The status and identifier are
 * given in one annotation call: re-annotating would drop the identifier.
 */
export const success = <A, I>(identifier: string, data: Schema.Schema<A, I>, status = 200) =>
  Schema.transform(Schema.Struct({ success: Schema.Literal(true), data }), Schema.typeSchema(data), {
    strict: true,
    decode: (envelope) => envelope.data,
    encode: (value) => ({ success: true as const, data: value })
  }).annotations(HttpApiSchema.annotations({ status, identifier }))

export const ErrorBody = Schema.Struct({
  success: Schema.Literal(false),
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    details: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  })
})
export type ErrorBody = typeof ErrorBody.Type

/** The component name of a code's error object: its tag, ending in Error (InternalError stays). */
const wireIdentifier = (tag: string) => (tag.endsWith("Error") ? tag : `${tag}Error`)

/** One catalog error on the wire: its code, a message and, when its entry declares them, its typed details. */
const apiError = <C extends ErrorCode>(code: C) => {
  const entry: (typeof errorCatalog)[ErrorCode] = errorCatalog[code]
  return Schema.Struct({
    code: Schema.Literal(code),
    message: Schema.String,
    ...("details" in entry ? { details: Schema.Struct(entry.details) } : {})
  }).annotations({ identifier: wireIdentifier(entry.tag), description: entry.description })
}

/** Each error code of the catalog (docs/rules.md, Errors) with its typed `details`, from the domain's catalog. */
export const apiErrors = Object.fromEntries(
  (Object.keys(errorCatalog) as Array<ErrorCode>).map((code) => [code, apiError(code)])
) as {
  readonly [C in ErrorCode]: Schema.Struct<
    {
      readonly code: Schema.Literal<[C]>
      readonly message: typeof Schema.String
    } & ((typeof errorCatalog)[C] extends { readonly details: infer D extends Schema.Struct.Fields }
      ? { readonly details: Schema.Struct<D> }
      : {})
  >
}

/** Any v1 error, discriminated by `code`. */
export const ApiErrorWire = Schema.Union(...Object.values(apiErrors)).annotations({ identifier: "ApiError" })
export type ApiErrorWire = typeof ApiErrorWire.Type

/** The error envelope of v1, typed per code. */
export const ErrorEnvelope = Schema.Struct({
  success: Schema.Literal(false),
  error: ApiErrorWire
}).annotations({
  identifier: "ErrorEnvelope"
})

/** The codes of the catalog that answer with `status`. */
const codesAnswering = (status: number) =>
  Object.entries(
    errorCatalog as Record<ErrorCode, { readonly status: number; readonly alternateStatus?: number }>
  )
    .filter(([, entry]) => entry.status === status || entry.alternateStatus === status)
    .map(([code]) => code)
    .join(", ")

/** The error envelope as declared for one status (the body is the same for every code). */
const failure = (status: number) =>
  ErrorBody.annotations(
    HttpApiSchema.annotations({ status, identifier: `Error${status}`, description: codesAnswering(status) })
  )

export const BadRequest = failure(400)
export const Unauthorized = failure(401)
export const Forbidden = failure(403)
export const NotFound = failure(404)
export const ConflictError = failure(409)
export const Unprocessable = failure(422)
export const TooManyRequests = failure(429)
export const ServerError = failure(500)

// ---------------------------------------------------------------- shared

export const Pagination = Schema.Struct({
  has_more: Schema.Boolean,
  next_cursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Pagination" })
export type Pagination = typeof Pagination.Type

export const ScopeName = Scope

// ---------------------------------------------------------------- intake bots

export const FieldTypeName = FieldType

export const SchemaFieldWire = SchemaField.annotations({ identifier: "SchemaField" })
export type SchemaFieldWire = typeof SchemaFieldWire.Type

/** In the submissions list: the current schema with name, label and type only. */
export const SchemaFieldSummary = Schema.Struct({
  name: Schema.String,
  label: Schema.String,
  type: FieldTypeName
}).annotations({ identifier: "SchemaFieldSummary" })

export const BotStatusName = oneOf(...BotStatus.literals)

export const IntakeBotListItemWire = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: BotStatusName,
  submission_count: Count,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "IntakeBotListItem" })
export type IntakeBotListItemWire = typeof IntakeBotListItemWire.Type

export const IntakeBotWire = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: BotStatusName,
  description: Schema.String,
  share_url: Schema.String,
  schema: Schema.Array(SchemaFieldWire),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "IntakeBot" })
export type IntakeBotWire = typeof IntakeBotWire.Type

// ---------------------------------------------------------------- submissions

export const SubmissionStatusName = oneOf(...SubmissionStatus.literals)

export const FieldValueWire = FieldValue

export const MessageWire = Schema.Struct({
  id: Schema.String,
  role: Schema.String,
  content: Schema.String,
  created_at: Timestamp
}).annotations({ identifier: "Message" })

/** The fields both submission shapes open with, in the order they travel. */
const submissionFields = {
  id: Schema.String,
  data: Schema.Record({ key: Schema.String, value: FieldValueWire }),
  status: SubmissionStatusName,
  ai_summary: Schema.String,
  is_test: Schema.Boolean,
  file_count: Count
}

export const SubmissionListItemWire = Schema.Struct({
  ...submissionFields,
  message_count: Count,
  schema_version: Count,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "SubmissionListItem" })
export type SubmissionListItemWire = typeof SubmissionListItemWire.Type

export const SubmissionWire = Schema.Struct({
  ...submissionFields,
  schema_version: Count,
  intake_bot_id: Schema.String,
  messages: Schema.Array(MessageWire),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Submission" })
export type SubmissionWire = typeof SubmissionWire.Type

/** What POST /intake-bots/:id/submissions answers. */
export const CreatedSubmissionWire = Schema.Struct({
  id: Schema.String,
  status: SubmissionStatusName,
  created_at: Timestamp
}).annotations({ identifier: "CreatedSubmission" })

// ---------------------------------------------------------------- webhooks

export const WebhookStatusName = oneOf(...WebhookStatus.literals)

export const CircuitStateName = oneOf("closed", "open", "half_open").annotations({
  identifier: "CircuitState"
})

/**
 * `rate_limit` as a request sends it: a number or null, typed for the document as an
 * integer from 1 to 1000; the domain reports a value out of range (docs/webhooks.md).
 */
export const RateLimitInput = Schema.NullOr(
  Schema.Number.annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: 1000 } })
).annotations({ description: "Deliveries per second (1 to 1000); null: no limit." })

/** The events an endpoint can subscribe to (webhook.test is sent on request, to any endpoint). */
export const WebhookEventName = oneOf(...EventType.literals).annotations({ identifier: "WebhookEventName" })

/**
 * `events` as a request sends it: typed as the event names in the document and for clients,
 * decoded as strings so the domain reports a bad name together with the body's other
 * issues (docs/choices.md, Webhooks).
 */
export const WebhookEventNameInput = Schema.String.annotations({
  jsonSchema: { $ref: "#/components/schemas/WebhookEventName" }
})

const webhookFields = {
  id: Schema.String,
  url: Schema.String,
  events: Schema.Array(WebhookEventName),
  status: WebhookStatusName,
  description: Schema.String,
  intake_bot_ids: Schema.Array(Schema.String),
  last_delivery_at: Schema.NullOr(Timestamp),
  last_delivery_ok: Schema.NullOr(Schema.Boolean),
  consecutive_fails: Count,
  rate_limit: Schema.NullOr(Count).annotations({
    description: "Deliveries per second the receiver asked for (1 to 1000); null: no limit."
  }),
  circuit: CircuitStateName.annotations({
    description:
      "The circuit breaker: `open` after repeated failures (attempts stay queued, none is sent), `half_open` once the cool-down ends (one probe attempt at a time), `closed` after a success."
  }),
  circuit_retry_at: Schema.NullOr(Timestamp).annotations({
    description: "While the circuit is not closed: when the cool-down ends (or ended) and a probe may go."
  }),
  previous_secret_expires_at: Schema.NullOr(Timestamp).annotations({
    description:
      "Until when the secret replaced by the last rotation still signs deliveries beside the current one; null when none does."
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}

export const WebhookWire = Schema.Struct(webhookFields).annotations({ identifier: "Webhook" })
export type WebhookWire = typeof WebhookWire.Type

/** Only the create and rotate responses carry the secret. */
export const WebhookWithSecretWire = Schema.Struct({ ...webhookFields, secret: Schema.String }).annotations({
  identifier: "WebhookWithSecret"
})
export type WebhookWithSecretWire = typeof WebhookWithSecretWire.Type

export const DeliveryWire = Schema.Struct({
  id: Schema.String,
  webhook_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  attempt: Count,
  trigger: DeliveryTrigger,
  status: DeliveryStatus,
  response_status: Schema.NullOr(WholeNumber),
  response_body: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  duration_ms: Schema.NullOr(WholeNumber),
  next_retry_at: Schema.NullOr(Timestamp).annotations({
    description:
      "failed: when its retry is due (null when none follows); pending: when it is due (in flight: when it was due); otherwise null"
  }),
  sent_at: Schema.NullOr(Timestamp).annotations({
    description: "when the request left for the receiver; null while pending and for an attempt never sent"
  }),
  created_at: Timestamp.annotations({
    description:
      "when the attempt was recorded: a first attempt with its event, a retry when it was scheduled, a test, redeliver or recover when asked for"
  }),
  request_id: Schema.NullOr(Schema.String).annotations({
    description:
      "the X-Request-Id of the request that raised the event (a create); null for events no request raised (a test, a summary's release, a disable notice) and once the event is purged"
  })
}).annotations({ identifier: "Delivery" })

export const RecoveryWire = Schema.Struct({
  queued: Count,
  since: Timestamp,
  until: Timestamp
}).annotations({ identifier: "Recovery" })
export type RecoveryWire = typeof RecoveryWire.Type
export type DeliveryWire = typeof DeliveryWire.Type

// ---------------------------------------------------------------- operator interface

export const PlanName = oneOf(...Plan.literals)

export const WorkspaceWire = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  plan: PlanName,
  status: WorkspaceStatus,
  monthly_submission_quota: Schema.NullOr(Count),
  rate_limit_per_minute: Schema.NullOr(Count),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Workspace" })
export type WorkspaceWire = typeof WorkspaceWire.Type

export const ApiKeyWire = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  scopes: Schema.Array(ScopeName),
  expires_at: Schema.NullOr(Timestamp),
  last_used_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
}).annotations({ identifier: "ApiKey" })
export type ApiKeyWire = typeof ApiKeyWire.Type

/** The create answer: the full key, shown this once. */
export const IssuedApiKeyWire = Schema.Struct({
  id: Schema.String,
  key: Schema.String,
  scopes: Schema.Array(ScopeName),
  expires_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
}).annotations({ identifier: "IssuedApiKey" })
export type IssuedApiKeyWire = typeof IssuedApiKeyWire.Type
