/**
 * API v1 as data: endpoints, their parameters, bodies, answers, errors and scopes. The
 * server serves `IntakeApi`; a client derives from it with `HttpApiClient.make(IntakeApi)`.
 * The three delivery endpoints are in a group of their own (`DeliveriesGroup`).
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { endpointsOf } from "./endpoints.js"
import {
  DateTimeParam,
  DeliveryListParams,
  DeliveryPath,
  EndpointErrors,
  IdempotencyHeaders,
  IdPath,
  ListParams,
  RequiredScope,
  SubmissionListParams,
  SubmissionPath
} from "./params.js"
import {
  BadRequest,
  ConflictError,
  CreatedSubmissionWire,
  DeliveryWire,
  Forbidden,
  IntakeBotListItemWire,
  IntakeBotWire,
  NotFound,
  oneOf,
  Pagination,
  RateLimitInput,
  RecoveryWire,
  SchemaFieldSummary,
  ServerError,
  SubmissionListItemWire,
  SubmissionWire,
  success,
  TooManyRequests,
  Unauthorized,
  Unprocessable,
  WebhookEventNameInput,
  WebhookWire,
  WebhookWithSecretWire
} from "./wire.js"

/** Bearer API key (`svc_live_…`). The server checks it before routing (docs/rules.md, Checks in order). */
export class ApiKeyAuth extends HttpApiMiddleware.Tag<ApiKeyAuth>()("ApiKeyAuth", {
  security: { bearer: HttpApiSecurity.bearer }
}) {}

// ---------------------------------------------------------------- request bodies

export const CreateSubmissionBody = Schema.Struct({
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  status: Schema.optionalWith(oneOf("IN_PROGRESS", "COMPLETED"), { exact: true }),
  is_test: Schema.optionalWith(Schema.Boolean, { exact: true })
}).annotations({ identifier: "CreateSubmissionBody" })

export const CreateWebhookBody = Schema.Struct({
  url: Schema.String,
  events: Schema.Array(WebhookEventNameInput),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  intake_bot_ids: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  rate_limit: Schema.optionalWith(RateLimitInput, { exact: true })
}).annotations({ identifier: "CreateWebhookBody" })

export const UpdateWebhookBody = Schema.Struct({
  events: Schema.optionalWith(Schema.Array(WebhookEventNameInput), { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  status: Schema.optionalWith(oneOf("active", "paused"), { exact: true }),
  intake_bot_ids: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  rate_limit: Schema.optionalWith(RateLimitInput, { exact: true })
}).annotations({ identifier: "UpdateWebhookBody" })

/** Decoded as a number so the domain words every bad value alike (docs/webhooks.md, "Secret rotation"). */
export const RotateWebhookSecretBody = Schema.Struct({
  grace_period_seconds: Schema.optionalWith(
    Schema.Number.annotations({
      jsonSchema: { type: "integer", minimum: 0, maximum: 604800 },
      description:
        "How long the old secret keeps signing deliveries beside the new one: 0 (it stops at once) to 604800 (7 days); 86400 (24 h) when omitted."
    }),
    { exact: true }
  )
}).annotations({ identifier: "RotateWebhookSecretBody" })

export const RecoverWebhookBody = Schema.Struct({
  since: DateTimeParam,
  until: Schema.optionalWith(DateTimeParam, { exact: true })
}).annotations({ identifier: "RecoverWebhookBody" })

// ---------------------------------------------------------------- answers

export const IntakeBotList = success(
  "IntakeBotList",
  Schema.Struct({ intake_bots: Schema.Array(IntakeBotListItemWire), pagination: Pagination })
)
export const IntakeBotOne = success("IntakeBotOne", Schema.Struct({ intake_bot: IntakeBotWire }))
export const SubmissionList = success(
  "SubmissionList",
  Schema.Struct({
    submissions: Schema.Array(SubmissionListItemWire),
    schema: Schema.Array(SchemaFieldSummary),
    pagination: Pagination
  })
)
export type SubmissionListWire = typeof SubmissionList.Type
export const SubmissionOne = success("SubmissionOne", Schema.Struct({ submission: SubmissionWire }))
export const SubmissionCreated = success(
  "SubmissionCreated",
  Schema.Struct({ submission: CreatedSubmissionWire }),
  201
)
export const WebhookList = success(
  "WebhookList",
  Schema.Struct({ webhooks: Schema.Array(WebhookWire), pagination: Pagination })
)
export const WebhookOne = success("WebhookOne", Schema.Struct({ webhook: WebhookWire }))
export const WebhookCreated = success("WebhookCreated", Schema.Struct({ webhook: WebhookWithSecretWire }))
export const WebhookSecretRotated = success(
  "WebhookSecretRotated",
  Schema.Struct({ webhook: WebhookWithSecretWire })
)
export const Deleted = success("Deleted", Schema.Struct({ id: Schema.String, deleted: Schema.Literal(true) }))
export const DeliveryOne = success("DeliveryOne", Schema.Struct({ delivery: DeliveryWire }))
export const RecoveryOne = success("RecoveryOne", Schema.Struct({ recovery: RecoveryWire }))
export const DeliveryList = success(
  "DeliveryList",
  Schema.Struct({ deliveries: Schema.Array(DeliveryWire), pagination: Pagination })
)

// ---------------------------------------------------------------- endpoints

export const listIntakeBots = HttpApiEndpoint.get("listIntakeBots", "/v1/intake-bots")
  .annotate(OpenApi.Summary, "List intake bots")
  .annotate(
    OpenApi.Description,
    "The workspace's intake bots, newest first, each with its submission count. Paginate with `limit` and the `next_cursor` of the previous page."
  )
  .setUrlParams(ListParams)
  .addSuccess(IntakeBotList)
  .annotate(RequiredScope, "read:intake-bots")
  .annotate(EndpointErrors, ["validation_failed"])

export const getIntakeBot = HttpApiEndpoint.get("getIntakeBot", "/v1/intake-bots/:id")
  .annotate(OpenApi.Summary, "Get an intake bot")
  .annotate(
    OpenApi.Description,
    "One intake bot with its field schema: the names, types and options a submission's `data` must follow."
  )
  .setPath(IdPath)
  .addSuccess(IntakeBotOne)
  .annotate(RequiredScope, "read:intake-bots")
  .annotate(EndpointErrors, ["resource_not_found"])

export const listSubmissions = HttpApiEndpoint.get("listSubmissions", "/v1/intake-bots/:id/submissions")
  .annotate(OpenApi.Summary, "List a bot's submissions")
  .annotate(
    OpenApi.Description,
    "The bot's submissions, newest first, with the bot's current field schema. Filter by creation time with `created_after` and `created_before`; paginate with `limit` and `cursor`."
  )
  .setPath(IdPath)
  .setUrlParams(SubmissionListParams)
  .addSuccess(SubmissionList)
  .annotate(RequiredScope, "read:submissions")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found"])

export const getSubmission = HttpApiEndpoint.get(
  "getSubmission",
  "/v1/intake-bots/:id/submissions/:submissionId"
)
  .annotate(OpenApi.Summary, "Get a submission")
  .annotate(OpenApi.Description, "One submission with its field values and its conversation messages.")
  .setPath(SubmissionPath)
  .addSuccess(SubmissionOne)
  .annotate(RequiredScope, "read:submissions")
  .annotate(EndpointErrors, ["resource_not_found"])

export const createSubmission = HttpApiEndpoint.post("createSubmission", "/v1/intake-bots/:id/submissions")
  .annotate(OpenApi.Summary, "Create a submission")
  .annotate(
    OpenApi.Description,
    "Stores a submission for the bot. `data` holds the field values, by field name, checked against the bot's schema; required fields are enforced when `status` is `COMPLETED` (the default), which also sends `submission.completed` and, when it has an email, `contact.created`. Send an `Idempotency-Key` to retry safely: a retry with the same key and body replays the first answer."
  )
  .setPath(IdPath)
  .setHeaders(IdempotencyHeaders)
  .setPayload(CreateSubmissionBody)
  .addSuccess(SubmissionCreated)
  .annotate(RequiredScope, "write:intake-bots")
  .annotate(EndpointErrors, [
    "validation_failed",
    "resource_not_found",
    "conflict",
    "idempotency_conflict",
    "plan_limit_exceeded"
  ])

export const listWebhooks = HttpApiEndpoint.get("listWebhooks", "/v1/webhooks")
  .annotate(OpenApi.Summary, "List webhook endpoints")
  .annotate(
    OpenApi.Description,
    "The workspace's webhook endpoints, newest first. The signing secret is never listed: it is shown once, when the endpoint is created."
  )
  .setUrlParams(ListParams)
  .addSuccess(WebhookList)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed"])

export const getWebhook = HttpApiEndpoint.get("getWebhook", "/v1/webhooks/:id")
  .annotate(OpenApi.Summary, "Get a webhook endpoint")
  .annotate(OpenApi.Description, "One webhook endpoint with its subscription and delivery health.")
  .setPath(IdPath)
  .addSuccess(WebhookOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["resource_not_found"])

export const createWebhook = HttpApiEndpoint.post("createWebhook", "/v1/webhooks")
  .annotate(OpenApi.Summary, "Register a webhook endpoint")
  .annotate(
    OpenApi.Description,
    "Registers an https URL to receive the subscribed events, optionally only for some intake bots and at most `rate_limit` deliveries per second. The answer carries the signing secret (`whsec_…`), shown this once: keep it to verify deliveries (Standard Webhooks)."
  )
  .setHeaders(IdempotencyHeaders)
  .setPayload(CreateWebhookBody)
  .addSuccess(WebhookCreated)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, [
    "validation_failed",
    "validation_failed_422",
    "idempotency_conflict",
    "plan_limit_exceeded"
  ])

export const updateWebhook = HttpApiEndpoint.patch("updateWebhook", "/v1/webhooks/:id")
  .annotate(OpenApi.Summary, "Update a webhook endpoint")
  .annotate(
    OpenApi.Description,
    "Changes the events, description, bots, rate limit or status of an endpoint. Setting `status` to `active` resets `consecutive_fails` and closes the circuit; `paused` stops deliveries."
  )
  .setPath(IdPath)
  .setPayload(UpdateWebhookBody)
  .addSuccess(WebhookOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found", "validation_failed_422"])

export const deleteWebhook = HttpApiEndpoint.del("deleteWebhook", "/v1/webhooks/:id")
  .annotate(OpenApi.Summary, "Delete a webhook endpoint")
  .annotate(OpenApi.Description, "Deletes the endpoint; no more deliveries are attempted to it.")
  .setPath(IdPath)
  .addSuccess(Deleted)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["resource_not_found"])

export const rotateWebhookSecret = HttpApiEndpoint.post(
  "rotateWebhookSecret",
  "/v1/webhooks/:id/secret/rotate"
)
  .annotate(OpenApi.Summary, "Rotate a webhook endpoint's signing secret")
  .annotate(
    OpenApi.Description,
    "Gives the endpoint a new signing secret, answered this once in `secret`. For the grace period (`grace_period_seconds`, 24 h by default, at most 7 days, 0 to stop the old secret at once) every delivery carries two signatures in `webhook-signature`, the new secret's and the old one's, so a receiver verifying with either accepts it; `previous_secret_expires_at` says until when. Rotating again during a grace period drops the oldest secret: only the last two sign. The body is optional. Send an `Idempotency-Key` to retry safely: a retry replays the same new secret."
  )
  .setPath(IdPath)
  .setHeaders(IdempotencyHeaders)
  .setPayload(RotateWebhookSecretBody)
  .addSuccess(WebhookSecretRotated)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found", "idempotency_conflict"])

export const testWebhook = HttpApiEndpoint.post("testWebhook", "/v1/webhooks/:id/test")
  .annotate(OpenApi.Summary, "Send a test event")
  .annotate(
    OpenApi.Description,
    "Sends a `webhook.test` event to this endpoint at once, whatever its status, and answers the finished attempt; it appears in the delivery log."
  )
  .setPath(IdPath)
  .setHeaders(IdempotencyHeaders)
  .addSuccess(DeliveryOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found", "idempotency_conflict"])

export const listDeliveries = HttpApiEndpoint.get("listDeliveries", "/v1/webhooks/:id/deliveries")
  .annotate(OpenApi.Summary, "List an endpoint's deliveries")
  .annotate(
    OpenApi.Description,
    "The delivery attempts to this endpoint, newest first: status, response status and body excerpt, duration, when it was sent, next retry. Filter by `status`, `event_type`, `submission_id` (the attempts of the events that submission raised) and creation time (`created_after`, `created_before`, inclusive); a cursor works only with the filters it was made with."
  )
  .setPath(IdPath)
  .setUrlParams(DeliveryListParams)
  .addSuccess(DeliveryList)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found"])

export const getDelivery = HttpApiEndpoint.get("getDelivery", "/v1/webhooks/:id/deliveries/:deliveryId")
  .annotate(OpenApi.Summary, "Get a delivery")
  .annotate(
    OpenApi.Description,
    "One delivery attempt of this endpoint: its status and why, the receiver's answer, when it was sent and when it is retried."
  )
  .setPath(DeliveryPath)
  .addSuccess(DeliveryOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["resource_not_found"])

export const recoverWebhook = HttpApiEndpoint.post("recoverWebhook", "/v1/webhooks/:id/recover")
  .annotate(OpenApi.Summary, "Recover missed events")
  .annotate(
    OpenApi.Description,
    "Queues again every event that occurred from `since` to `until` (default: now), that this endpoint takes and has not received: no succeeded attempt, none pending (so a second call queues nothing twice). Each is queued once, oldest first, with trigger `recover`; the answer says how many. The endpoint must be active: a paused or disabled one answers 409 (set its status to `active` first). Events older than the endpoint, or than what is kept, are not queued."
  )
  .setPath(IdPath)
  .setHeaders(IdempotencyHeaders)
  .setPayload(RecoverWebhookBody)
  .addSuccess(RecoveryOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found", "conflict", "idempotency_conflict"])

export const redeliver = HttpApiEndpoint.post(
  "redeliver",
  "/v1/webhooks/:id/deliveries/:deliveryId/redeliver"
)
  .annotate(OpenApi.Summary, "Redeliver an event")
  .annotate(
    OpenApi.Description,
    "Sends the event of this delivery to the endpoint again, as a new delivery with trigger `redeliver`."
  )
  .setPath(DeliveryPath)
  .setHeaders(IdempotencyHeaders)
  .addSuccess(DeliveryOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found", "conflict", "idempotency_conflict"])

// ---------------------------------------------------------------- groups and the API

export class IntakeBotsGroup extends HttpApiGroup.make("intakeBots")
  .annotate(OpenApi.Title, "Intake bots")
  .annotate(OpenApi.Description, "The workspace's intake bots and their field schemas (read only).")
  .add(listIntakeBots)
  .add(getIntakeBot) {}

export class SubmissionsGroup extends HttpApiGroup.make("submissions")
  .annotate(OpenApi.Title, "Submissions")
  .annotate(
    OpenApi.Description,
    "What people submitted through an intake bot; create them from your own forms or imports."
  )
  .add(listSubmissions)
  .add(getSubmission)
  .add(createSubmission) {}

export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .annotate(OpenApi.Title, "Webhook endpoints")
  .annotate(
    OpenApi.Description,
    "Endpoints that receive signed events (Standard Webhooks); each event and its payload is described under Webhooks."
  )
  .add(listWebhooks)
  .add(getWebhook)
  .add(createWebhook)
  .add(updateWebhook)
  .add(deleteWebhook)
  .add(rotateWebhookSecret) {}

/** Test, delivery log and redeliver of a webhook endpoint. */
export class DeliveriesGroup extends HttpApiGroup.make("deliveries")
  .annotate(OpenApi.Title, "Deliveries")
  .annotate(
    OpenApi.Description,
    "Test an endpoint, read its delivery log, redeliver an event and recover the events it missed."
  )
  .add(testWebhook)
  .add(listDeliveries)
  .add(getDelivery)
  .add(redeliver)
  .add(recoverWebhook) {}

/** The served API v1. */
export class IntakeApi extends HttpApi.make("intake")
  .add(IntakeBotsGroup)
  .add(SubmissionsGroup)
  .add(WebhooksGroup)
  .add(DeliveriesGroup)
  .addError(BadRequest)
  .addError(Unauthorized)
  .addError(Forbidden)
  .addError(NotFound)
  .addError(ConflictError)
  .addError(Unprocessable)
  .addError(TooManyRequests)
  .addError(ServerError)
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Title, "Intake API")
  .annotate(OpenApi.Version, "1") {}

/** API v1 (the delivery endpoints are part of it now; kept for callers of the earlier name). */
export const IntakeApiWithDeliveries = IntakeApi

/** Every endpoint of API v1 (all served), in routing order: the groups' own order. */
export const servedEndpoints = endpointsOf(IntakeApi)

// ---------------------------------------------------------------- wire types (what travels)

export type CreateSubmissionBodyEncoded = typeof CreateSubmissionBody.Encoded
export type CreateWebhookBodyEncoded = typeof CreateWebhookBody.Encoded
export type UpdateWebhookBodyEncoded = typeof UpdateWebhookBody.Encoded
export type RotateWebhookSecretBodyEncoded = typeof RotateWebhookSecretBody.Encoded
export type IntakeBotListEncoded = typeof IntakeBotList.Encoded
export type IntakeBotOneEncoded = typeof IntakeBotOne.Encoded
export type SubmissionListEncoded = typeof SubmissionList.Encoded
export type SubmissionOneEncoded = typeof SubmissionOne.Encoded
export type SubmissionCreatedEncoded = typeof SubmissionCreated.Encoded
export type WebhookListEncoded = typeof WebhookList.Encoded
export type WebhookOneEncoded = typeof WebhookOne.Encoded
export type WebhookCreatedEncoded = typeof WebhookCreated.Encoded
export type WebhookSecretRotatedEncoded = typeof WebhookSecretRotated.Encoded
export type DeletedEncoded = typeof Deleted.Encoded
export type DeliveryOneEncoded = typeof DeliveryOne.Encoded
export type DeliveryListEncoded = typeof DeliveryList.Encoded
export type RecoverWebhookBodyEncoded = typeof RecoverWebhookBody.Encoded
export type RecoveryOneEncoded = typeof RecoveryOne.Encoded
