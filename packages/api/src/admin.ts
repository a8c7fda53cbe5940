/**
 * The operator interface (docs/rules.md, Operator API): not part of the public API, enabled
 * only when the server has INTAKE_ADMIN_TOKEN, answering in the same envelope.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { MessageRole, WorkspaceStatus } from "@intake/domain"
import { Schema } from "effect"
import { endpointsOf } from "./endpoints.js"
import { IdPath } from "./params.js"
import { Deleted } from "./v1.js"
import {
  ApiKeyWire,
  BadRequest,
  BotStatusName,
  ConflictError,
  FieldTypeName,
  IntakeBotWire,
  IssuedApiKeyWire,
  NotFound,
  oneOf,
  PlanName,
  ScopeName,
  ServerError,
  SubmissionWire,
  success,
  TooManyRequests,
  Unauthorized,
  WorkspaceWire
} from "./wire.js"

export class AdminTokenAuth extends HttpApiMiddleware.Tag<AdminTokenAuth>()("AdminTokenAuth", {
  security: { bearer: HttpApiSecurity.bearer }
}) {}

const NullableCount = Schema.NullOr(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)))

const SchemaFieldInput = Schema.Struct({
  name: Schema.String,
  label: Schema.String,
  type: FieldTypeName,
  required: Schema.optionalWith(Schema.Boolean, { exact: true }),
  options: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
})

export const CreateWorkspaceBody = Schema.Struct({
  name: Schema.String,
  plan: PlanName,
  monthly_submission_quota: Schema.optionalWith(NullableCount, { exact: true })
})

export const UpdateWorkspaceBody = Schema.Struct({
  plan: Schema.optionalWith(PlanName, { exact: true }),
  status: Schema.optionalWith(oneOf(...WorkspaceStatus.literals), { exact: true }),
  monthly_submission_quota: Schema.optionalWith(NullableCount, { exact: true }),
  rate_limit_per_minute: Schema.optionalWith(Schema.NullOr(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))), {
    exact: true
  })
})

export const CreateApiKeyBody = Schema.Struct({
  scopes: Schema.Array(ScopeName),
  name: Schema.optionalWith(Schema.NullOr(Schema.String), { exact: true }),
  /** ISO 8601 date-time. */
  expires_at: Schema.optionalWith(Schema.NullOr(Schema.String), { exact: true })
})

export const CreateIntakeBotBody = Schema.Struct({
  name: Schema.String,
  description: Schema.optionalWith(Schema.String, { exact: true }),
  status: Schema.optionalWith(BotStatusName, { exact: true }),
  schema: Schema.Array(SchemaFieldInput)
})

export const UpdateIntakeBotBody = Schema.Struct({
  name: Schema.optionalWith(Schema.String, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  status: Schema.optionalWith(BotStatusName, { exact: true }),
  schema: Schema.optionalWith(Schema.Array(SchemaFieldInput), { exact: true })
})

export const AdminSubmissionBody = Schema.Struct({
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  status: Schema.optionalWith(oneOf("IN_PROGRESS", "COMPLETED"), { exact: true }),
  is_test: Schema.optionalWith(Schema.Boolean, { exact: true }),
  messages: Schema.optionalWith(
    Schema.Array(Schema.Struct({ role: oneOf(...MessageRole.literals), content: Schema.String })),
    { exact: true }
  )
})

export const WorkspaceCreated = success("WorkspaceCreated", Schema.Struct({ workspace: WorkspaceWire }), 201)
export const WorkspaceOne = success("WorkspaceOne", Schema.Struct({ workspace: WorkspaceWire }))
export const ApiKeyIssued = success("ApiKeyIssued", Schema.Struct({ api_key: IssuedApiKeyWire }), 201)
export const ApiKeyOne = success("ApiKeyOne", Schema.Struct({ api_key: ApiKeyWire }))
export const AdminIntakeBotCreated = success(
  "AdminIntakeBotCreated",
  Schema.Struct({ intake_bot: IntakeBotWire }),
  201
)
export const AdminIntakeBotOne = success("AdminIntakeBotOne", Schema.Struct({ intake_bot: IntakeBotWire }))
export const AdminSubmissionCreated = success(
  "AdminSubmissionCreated",
  Schema.Struct({ submission: SubmissionWire }),
  201
)

export const createWorkspace = HttpApiEndpoint.post("createWorkspace", "/admin/workspaces")
  .setPayload(CreateWorkspaceBody)
  .addSuccess(WorkspaceCreated)

export const updateWorkspace = HttpApiEndpoint.patch("updateWorkspace", "/admin/workspaces/:id")
  .setPath(IdPath)
  .setPayload(UpdateWorkspaceBody)
  .addSuccess(WorkspaceOne)

export const createApiKey = HttpApiEndpoint.post("createApiKey", "/admin/workspaces/:id/api-keys")
  .setPath(IdPath)
  .setPayload(CreateApiKeyBody)
  .addSuccess(ApiKeyIssued)

export const getApiKey = HttpApiEndpoint.get("getApiKey", "/admin/api-keys/:id")
  .setPath(IdPath)
  .addSuccess(ApiKeyOne)

export const revokeApiKey = HttpApiEndpoint.post("revokeApiKey", "/admin/api-keys/:id/revoke")
  .setPath(IdPath)
  .addSuccess(ApiKeyOne)

export const createIntakeBot = HttpApiEndpoint.post("createIntakeBot", "/admin/workspaces/:id/intake-bots")
  .setPath(IdPath)
  .setPayload(CreateIntakeBotBody)
  .addSuccess(AdminIntakeBotCreated)

export const updateIntakeBot = HttpApiEndpoint.patch("updateIntakeBot", "/admin/intake-bots/:id")
  .setPath(IdPath)
  .setPayload(UpdateIntakeBotBody)
  .addSuccess(AdminIntakeBotOne)

export const adminCreateSubmission = HttpApiEndpoint.post(
  "adminCreateSubmission",
  "/admin/intake-bots/:id/submissions"
)
  .setPath(IdPath)
  .setPayload(AdminSubmissionBody)
  .addSuccess(AdminSubmissionCreated)

export const deleteSubmission = HttpApiEndpoint.del("deleteSubmission", "/admin/submissions/:id")
  .setPath(IdPath)
  .addSuccess(Deleted)

export class AdminGroup extends HttpApiGroup.make("admin")
  .add(createWorkspace)
  .add(updateWorkspace)
  .add(createApiKey)
  .add(getApiKey)
  .add(revokeApiKey)
  .add(createIntakeBot)
  .add(updateIntakeBot)
  .add(adminCreateSubmission)
  .add(deleteSubmission) {}

export class AdminApi extends HttpApi.make("intake-admin")
  .add(AdminGroup)
  .addError(BadRequest)
  .addError(Unauthorized)
  .addError(NotFound)
  .addError(ConflictError)
  .addError(TooManyRequests)
  .addError(ServerError)
  .middleware(AdminTokenAuth)
  .annotate(OpenApi.Title, "Intake operator interface") {}

/** Every endpoint of the operator interface, in routing order. */
export const adminEndpoints = endpointsOf(AdminApi)
