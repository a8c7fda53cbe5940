/**
 * API v1 as data: endpoints, their parameters, bodies, answers, errors and scopes. The
 * server serves `IntakeApi`; a client derives from it with `HttpApiClient.make(IntakeApi)`.
 * The three delivery endpoints are in a group of their own (`DeliveriesGroup`).
 */
import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { Schema } from "effect"
import {
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
  SchemaFieldSummary,
  ServerError,
  SubmissionListItemWire,
  SubmissionWire,
  success,
  TooManyRequests,
  Unauthorized,
  Unprocessable,
  WebhookWire,
  WebhookWithSecretWire
} from "./wire.js"

/** Bearer API key (`svc_live_…`). The server checks it before routing (decisions.md 2). */
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
  events: Schema.Array(Schema.String),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  intake_bot_ids: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
}).annotations({ identifier: "CreateWebhookBody" })

export const UpdateWebhookBody = Schema.Struct({
  events: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  status: Schema.optionalWith(oneOf("active", "paused"), { exact: true }),
  intake_bot_ids: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
}).annotations({ identifier: "UpdateWebhookBody" })

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
export const Deleted = success("Deleted", Schema.Struct({ id: Schema.String, deleted: Schema.Literal(true) }))
export const DeliveryOne = success("DeliveryOne", Schema.Struct({ delivery: DeliveryWire }))
export const DeliveryList = success(
  "DeliveryList",
  Schema.Struct({ deliveries: Schema.Array(DeliveryWire), pagination: Pagination })
)

// ---------------------------------------------------------------- endpoints

export const listIntakeBots = HttpApiEndpoint.get("listIntakeBots", "/v1/intake-bots")
  .setUrlParams(ListParams)
  .addSuccess(IntakeBotList)
  .annotate(RequiredScope, "read:intake-bots")
  .annotate(EndpointErrors, ["validation_failed"])

export const getIntakeBot = HttpApiEndpoint.get("getIntakeBot", "/v1/intake-bots/:id")
  .setPath(IdPath)
  .addSuccess(IntakeBotOne)
  .annotate(RequiredScope, "read:intake-bots")
  .annotate(EndpointErrors, ["resource_not_found"])

export const listSubmissions = HttpApiEndpoint.get("listSubmissions", "/v1/intake-bots/:id/submissions")
  .setPath(IdPath)
  .setUrlParams(SubmissionListParams)
  .addSuccess(SubmissionList)
  .annotate(RequiredScope, "read:submissions")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found"])

export const getSubmission = HttpApiEndpoint.get(
  "getSubmission",
  "/v1/intake-bots/:id/submissions/:submissionId"
)
  .setPath(SubmissionPath)
  .addSuccess(SubmissionOne)
  .annotate(RequiredScope, "read:submissions")
  .annotate(EndpointErrors, ["resource_not_found"])

export const createSubmission = HttpApiEndpoint.post("createSubmission", "/v1/intake-bots/:id/submissions")
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
  .setUrlParams(ListParams)
  .addSuccess(WebhookList)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed"])

export const getWebhook = HttpApiEndpoint.get("getWebhook", "/v1/webhooks/:id")
  .setPath(IdPath)
  .addSuccess(WebhookOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["resource_not_found"])

export const createWebhook = HttpApiEndpoint.post("createWebhook", "/v1/webhooks")
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
  .setPath(IdPath)
  .setPayload(UpdateWebhookBody)
  .addSuccess(WebhookOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found", "validation_failed_422"])

export const deleteWebhook = HttpApiEndpoint.del("deleteWebhook", "/v1/webhooks/:id")
  .setPath(IdPath)
  .addSuccess(Deleted)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["resource_not_found"])

export const testWebhook = HttpApiEndpoint.post("testWebhook", "/v1/webhooks/:id/test")
  .setPath(IdPath)
  .setHeaders(IdempotencyHeaders)
  .addSuccess(DeliveryOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found", "idempotency_conflict"])

export const listDeliveries = HttpApiEndpoint.get("listDeliveries", "/v1/webhooks/:id/deliveries")
  .setPath(IdPath)
  .setUrlParams(ListParams)
  .addSuccess(DeliveryList)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found"])

export const redeliver = HttpApiEndpoint.post(
  "redeliver",
  "/v1/webhooks/:id/deliveries/:deliveryId/redeliver"
)
  .setPath(DeliveryPath)
  .setHeaders(IdempotencyHeaders)
  .addSuccess(DeliveryOne)
  .annotate(RequiredScope, "manage:webhooks")
  .annotate(EndpointErrors, ["validation_failed", "resource_not_found", "conflict", "idempotency_conflict"])

// ---------------------------------------------------------------- groups and the API

export class IntakeBotsGroup extends HttpApiGroup.make("intakeBots").add(listIntakeBots).add(getIntakeBot) {}

export class SubmissionsGroup extends HttpApiGroup.make("submissions")
  .add(listSubmissions)
  .add(getSubmission)
  .add(createSubmission) {}

export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(listWebhooks)
  .add(getWebhook)
  .add(createWebhook)
  .add(updateWebhook)
  .add(deleteWebhook) {}

/** Test, delivery log and redeliver of a webhook endpoint. */
export class DeliveriesGroup extends HttpApiGroup.make("deliveries")
  .add(testWebhook)
  .add(listDeliveries)
  .add(redeliver) {}

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

/** The endpoints the server serves today, in routing order. */
export const servedEndpoints = [
  listIntakeBots,
  getIntakeBot,
  listSubmissions,
  getSubmission,
  createSubmission,
  listWebhooks,
  getWebhook,
  createWebhook,
  updateWebhook,
  deleteWebhook,
  testWebhook,
  listDeliveries,
  redeliver
] as const
